#include "signals.hpp"

#include <hsa/amd_hsa_signal.h>

#include <atomic>
#include <cstddef>

namespace xenhsa::hsa::soft {

namespace {

constexpr uint64_t kSignalBytes = sizeof(amd_signal_t);
static_assert(kSignalBytes == 64 && offsetof(amd_signal_t, value) == 8 &&
              offsetof(amd_signal_t, event_mailbox_ptr) == 16 &&
              offsetof(amd_signal_t, event_id) == 24);

template <class T>
std::atomic_ref<T> field(uint64_t handle, size_t offset) noexcept
{
    return guest_atomic<T>(handle + offset);
}

// Atomics need natural alignment; a signal that lacks it is a fault at its address.
std::optional<Va> check_signal(const AddressSpace::View &view, uint64_t handle, Access access)
{
    if (handle % alignof(int64_t) != 0) {
        return handle;
    }
    return view.check(handle, kSignalBytes, access);
}

}  // namespace

std::optional<Va> complete_signal(const AddressSpace &space, EventTable &events, SignalHub &hub,
                                  uint64_t handle)
{
    uint32_t event_id = 0;
    {
        const auto view = space.view();
        if (auto fault = check_signal(view, handle, Access::write)) {
            return fault;
        }
        // Everything the agent reads of the signal, it reads before the decrement: a
        // waiter that sees the new value may reuse the signal at once.
        const uint64_t mailbox =
            field<uint64_t>(handle, offsetof(amd_signal_t, event_mailbox_ptr))
                .load(std::memory_order_relaxed);
        event_id = field<uint32_t>(handle, offsetof(amd_signal_t, event_id))
                       .load(std::memory_order_relaxed);
        if (mailbox != 0) {
            if (mailbox % alignof(uint64_t) != 0) {
                return mailbox;
            }
            if (auto fault = view.check(mailbox, sizeof(uint64_t), Access::write)) {
                return fault;
            }
        }
        field<int64_t>(handle, offsetof(amd_signal_t, value))
            .fetch_sub(1, std::memory_order_release);
        if (mailbox != 0) {
            guest_atomic<uint64_t>(mailbox).store(event_id, std::memory_order_release);
        }
    }
    if (event_id != 0) {
        events.set_by_event_id(event_id);
    }
    hub.bump();
    return std::nullopt;
}

DependencyState check_dependencies(const AddressSpace &space, std::span<const uint64_t> handles,
                                   BarrierKind kind)
{
    const auto view = space.view();
    bool all_zero = true;
    bool any_zero = false;
    for (uint64_t handle : handles) {
        if (handle == 0) {
            continue;
        }
        if (auto fault = check_signal(view, handle, Access::read)) {
            return {false, fault};
        }
        const int64_t value = field<int64_t>(handle, offsetof(amd_signal_t, value))
                                  .load(std::memory_order_acquire);
        all_zero = all_zero && value == 0;
        any_zero = any_zero || value == 0;
    }
    return {kind == BarrierKind::all_zero ? all_zero : any_zero, std::nullopt};
}

}  // namespace xenhsa::hsa::soft
