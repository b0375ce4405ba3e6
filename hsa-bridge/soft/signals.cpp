#include "signals.hpp"

#include <hsa/amd_hsa_signal.h>

#include <atomic>
#include <cstddef>

namespace xenhsa::hsa::soft {

namespace {

constexpr uint64_t kSignalBytes = sizeof(amd_signal_t);
static_assert(kSignalBytes == 64 && offsetof(amd_signal_t, value) == 8 &&
              offsetof(amd_signal_t, event_mailbox_ptr) == 16 &&
              offsetof(amd_signal_t, event_id) == 24 && offsetof(amd_signal_t, start_ts) == 32 &&
              offsetof(amd_signal_t, end_ts) == 40);

// Atomics need natural alignment; a signal that lacks it is a fault at its address.
template <Access A>
SliceOrFault<A> signal_at(const AddressSpace::View& view, uint64_t handle) {
    return view.aligned_slice<A>(handle, kSignalBytes, alignof(int64_t));
}

}  // namespace

std::optional<Va> complete_signal(const AddressSpace& space, EventTable& events, SignalHub& hub,
                                  uint64_t handle, const PacketTimes* times) {
    return write_signal(space, events, hub, handle, SignalWrite::decrement, 1, times);
}

std::optional<Va> write_signal(const AddressSpace& space, EventTable& events, SignalHub& hub,
                               uint64_t handle, SignalWrite how, int64_t operand,
                               const PacketTimes* times) {
    uint32_t event_id = 0;
    {
        const auto view = space.view();
        const auto signal = signal_at<Access::write>(view, handle);
        // The fields of an aligned signal are aligned: refused only for a fault.
        const auto value = signal->atomic<int64_t>(offsetof(amd_signal_t, value));
        const auto mailbox_ptr =
            signal->atomic<uint64_t>(offsetof(amd_signal_t, event_mailbox_ptr));
        const auto id = signal->atomic<uint32_t>(offsetof(amd_signal_t, event_id));
        if (!value || !mailbox_ptr || !id) {
            return signal.fault().value_or(handle);
        }
        // Everything the agent reads of the signal, it reads before the write: a waiter
        // that sees the new value may reuse the signal at once.
        const uint64_t mailbox_va = mailbox_ptr->load(std::memory_order_relaxed);
        event_id = id->load(std::memory_order_relaxed);
        std::optional<GuestAtomic<uint64_t, Access::write>> mailbox;
        if (mailbox_va != 0) {
            const auto slot =
                view.aligned_slice<Access::write>(mailbox_va, sizeof(uint64_t), alignof(uint64_t));
            mailbox = slot->atomic<uint64_t>(0);
            if (!mailbox) {
                return slot.fault().value_or(mailbox_va);
            }
        }
        if (times != nullptr) {  // before the value: a waiter reads them once it changed
            (void)signal->store(offsetof(amd_signal_t, start_ts), times->start);
            (void)signal->store(offsetof(amd_signal_t, end_ts), times->end);
        }
        if (how == SignalWrite::decrement) {
            value->fetch_sub(operand, std::memory_order_release);
        } else {
            value->store(operand, std::memory_order_release);
        }
        if (mailbox) {
            mailbox->store(event_id, std::memory_order_release);
        }
    }
    if (event_id != 0) {
        events.set_by_event_id(event_id);
    }
    hub.bump();
    return std::nullopt;
}

DependencyState check_dependencies(const AddressSpace& space, std::span<const uint64_t> handles,
                                   BarrierKind kind) {
    const auto view = space.view();
    bool all_zero = true;
    bool any_zero = false;
    for (uint64_t handle : handles) {
        if (handle == 0) {
            continue;
        }
        const auto signal = signal_at<Access::read>(view, handle);
        const auto value_ref = signal->atomic<int64_t>(offsetof(amd_signal_t, value));
        if (!value_ref) {
            return {false, signal.fault().value_or(handle)};
        }
        const int64_t value = value_ref->load(std::memory_order_acquire);
        all_zero = all_zero && value == 0;
        any_zero = any_zero || value == 0;
    }
    return {kind == BarrierKind::all_zero ? all_zero : any_zero, std::nullopt};
}

}  // namespace xenhsa::hsa::soft
