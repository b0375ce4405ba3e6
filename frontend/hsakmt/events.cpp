#include "events.hpp"

#include <algorithm>
#include <chrono>
#include <xenhsa/frontend/errors.hpp>

#include "log.hpp"

namespace xenhsa::frontend::hsakmt {

namespace {

constexpr uint32_t kSlots = 4096;  // KFD_SIGNAL_EVENT_LIMIT
constexpr uint64_t kSlotSize = 8;
using Clock = std::chrono::steady_clock;

}  // namespace

Events::~Events() {
    for (auto& [key, entry] : events_) {
        (void)client_.event_destroy(entry.handle);
    }
    if (page_ != 0) {
        (void)memory_.free(page_);
    }
}

Result<uint64_t> Events::mailbox_slot(int32_t& slot) {
    if (page_ == 0) {
        HsaMemFlags flags{};
        flags.ui32.HostAccess = 1;
        flags.ui32.Uncached = 1;
        auto page = memory_.alloc(0, kSlots * kSlotSize, flags, std::nullopt);
        if (!page) {
            return page.error();
        }
        if (auto mapped = memory_.map_to_gpu(page.value(), kSlots * kSlotSize, {}); !mapped) {
            (void)memory_.free(page.value());
            return mapped.error();
        }
        page_ = page.value();
        slots_.assign(kSlots, false);
    }
    const auto free_slot = std::find(slots_.begin(), slots_.end(), false);
    if (free_slot == slots_.end()) {
        return errc(std::errc::not_enough_memory);
    }
    *free_slot = true;
    slot = static_cast<int32_t>(free_slot - slots_.begin());
    return page_ + static_cast<uint64_t>(slot) * kSlotSize;
}

Result<HsaEvent*> Events::create(const HsaEventDescriptor& desc, bool manual_reset, bool signaled) {
    const auto type = static_cast<uint32_t>(desc.EventType);
    if (type >= XENHSA_EVENT_TYPE_COUNT_ || desc.NodeId >= topology_.nodes.size()) {
        return errc(std::errc::invalid_argument);
    }
    uint32_t flags = manual_reset ? XENHSA_EVENT_MANUAL_RESET : 0u;
    flags |= signaled ? XENHSA_EVENT_SIGNALED : 0u;
    auto created = client_.event_create(type, desc.NodeId, flags);
    if (!created) {
        return created.error();
    }
    Entry entry;
    entry.handle = created.value().handle;
    entry.type = type;
    uint64_t mailbox = created.value().mailbox_va;
    if (mailbox == 0) {
        auto slot = mailbox_slot(entry.slot);
        if (!slot) {
            (void)client_.event_destroy(entry.handle);
            return slot.error();
        }
        mailbox = slot.value();
    }
    entry.event = std::make_unique<HsaEvent>();
    HsaEvent& e = *entry.event;
    e.EventId = created.value().event_id;
    e.EventData.EventType = desc.EventType;
    e.EventData.EventData.SyncVar = desc.SyncVar;
    e.EventData.HWData1 = created.value().event_id;
    e.EventData.HWData2 = mailbox;
    HsaEvent* out = entry.event.get();
    events_.emplace(out, std::move(entry));
    return out;
}

Handle Events::handle_of(const HsaEvent* event) const noexcept {
    auto it = events_.find(event);
    return it == events_.end() ? 0 : it->second.handle;
}

Result<void> Events::destroy(HsaEvent* event) {
    auto it = events_.find(event);
    if (it == events_.end()) {
        return errc(std::errc::invalid_argument);
    }
    auto done = client_.event_destroy(it->second.handle);
    if (it->second.slot >= 0) {
        slots_[static_cast<std::size_t>(it->second.slot)] = false;
    }
    events_.erase(it);
    return done;
}

Result<void> Events::set(HsaEvent* event) {
    const Handle handle = handle_of(event);
    return handle == 0 ? Result<void>(errc(std::errc::invalid_argument))
                       : client_.event_set(handle);
}

Result<void> Events::reset(HsaEvent* event) {
    const Handle handle = handle_of(event);
    return handle == 0 ? Result<void>(errc(std::errc::invalid_argument))
                       : client_.event_reset(handle);
}

Result<std::vector<Handle>> Events::handles_of(std::span<HsaEvent* const> events) const {
    std::vector<Handle> handles;
    handles.reserve(events.size());
    for (HsaEvent* const event : events) {
        const Handle handle = handle_of(event);
        if (handle == 0) {
            return errc(std::errc::invalid_argument);
        }
        handles.push_back(handle);
    }
    return handles;
}

namespace {

// What KFD's memory exception data gives of a GPU reset: the queues are gone, no address.
void fill_hang(HsaMemoryAccessFault& fault, uint32_t node, uint64_t address) {
    fault = HsaMemoryAccessFault{};
    fault.NodeId = node;
    fault.VirtualAddress = address;
    fault.Failure.ErrorType = 3;  // ROCr: "Generic hang recovery"
    fault.Failure.Imprecise = 1;
    fault.Flags = HSA_EVENTID_MEMORY_FATAL_PROCESS;
}

}  // namespace

void Events::report_link_lost(const std::error_code& why) {
    if (link_lost_) {
        return;
    }
    link_lost_ = true;
    log().error("the link to the backend broke ({}): reported as a GPU hang, every queue is gone",
                why.message());
    for (auto& [key, entry] : events_) {
        if (entry.type == XENHSA_EVENT_MEMORY) {
            fill_hang(entry.event->EventData.EventData.MemoryAccessFault, topology_.first_gpu(), 0);
        }
    }
}

void Events::fill_memory_faults(std::span<HsaEvent* const> events) {
    for (const xenhsa_notify& record : client_.take_notifications()) {
        if (record.type == XENHSA_NOTIFY_GPU_FAULT) {
            last_fault_ = record.arg0;
            last_fault_hang_ = (record.arg1 & XENHSA_GPU_FAULT_HANG) != 0;
        }
    }
    if (!last_fault_) {
        return;  // a memory event set without a fault is no fault to report
    }
    for (HsaEvent* const event : events) {
        auto it = events_.find(event);
        if (it == events_.end() || it->second.type != XENHSA_EVENT_MEMORY) {
            continue;
        }
        // What KFD's memory exception data gives: the queue stopped for good, so the
        // process cannot go on (ROCr's wait-any returns on this flag and aborts).
        HsaMemoryAccessFault& fault = event->EventData.EventData.MemoryAccessFault;
        if (last_fault_hang_) {
            fill_hang(fault, topology_.first_gpu(), *last_fault_);  // a queue hung
            continue;
        }
        fault = HsaMemoryAccessFault{};
        fault.NodeId = topology_.first_gpu();
        fault.VirtualAddress = *last_fault_;
        fault.Failure.NotPresent = 1;  // the GPU may not reach that address
        fault.Flags = HSA_EVENTID_MEMORY_FATAL_PROCESS;
    }
}

Result<void> Events::wait(std::span<HsaEvent* const> events, bool all, uint32_t timeout_ms) {
    auto waited = wait_events(events, all, timeout_ms);
    if (waited) {
        fill_memory_faults(events);
    } else if (waited.error().category() == frontend_category() &&
               waited.error() != std::error_code(Errc::closing)) {
        report_link_lost(client_.broken() ? client_.broken_reason() : waited.error());
    }
    return waited;
}

Result<void> Events::wait_events(std::span<HsaEvent* const> events, bool all, uint32_t timeout_ms) {
    if (events.empty()) {
        return errc(std::errc::invalid_argument);
    }
    auto handles = handles_of(events);
    if (!handles) {
        return handles.error();
    }
    const std::span<const Handle> all_handles(handles.value());
    if (!all || all_handles.size() <= XENHSA_WAIT_MAX_EVENTS) {
        if (all_handles.size() <= XENHSA_WAIT_MAX_EVENTS) {
            auto mask = client_.event_wait(all_handles, all, timeout_ms);
            if (!mask) {
                return mask.error();
            }
            return boost::outcome_v2::success();
        }
        return wait_any(all_handles, timeout_ms);
    }
    // All of more than 16: one group after the other, each with what is left of the time.
    // (ROCr 5.2.3 never waits for all.) Auto-reset events of a group that fired are taken
    // even if a later group times out.
    const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    for (std::size_t i = 0; i < all_handles.size(); i += XENHSA_WAIT_MAX_EVENTS) {
        uint32_t left = XENHSA_WAIT_INFINITE;
        if (timeout_ms != XENHSA_WAIT_INFINITE) {
            const auto remaining = std::chrono::ceil<std::chrono::milliseconds>(
                std::max(deadline - Clock::now(), Clock::duration::zero()));
            left = static_cast<uint32_t>(remaining.count());
        }
        const auto group = all_handles.subspan(
            i, std::min<std::size_t>(XENHSA_WAIT_MAX_EVENTS, all_handles.size() - i));
        auto mask = client_.event_wait(group, true, left);
        if (!mask) {
            return mask.error();
        }
    }
    return boost::outcome_v2::success();
}

Result<void> Events::wait_any(std::span<const Handle> handles, uint32_t timeout_ms) {
    std::vector<uint32_t> waits;
    auto cancel_rest = [&] {
        for (const uint32_t seqno : waits) {
            (void)client_.event_wait_cancel(seqno);
        }
        for (const uint32_t seqno : waits) {
            (void)client_.finish_wait(seqno);  // OK, TIMEOUT or CANCELLED: all fine now
        }
    };
    for (std::size_t i = 0; i < handles.size(); i += XENHSA_WAIT_MAX_EVENTS) {
        const auto group =
            handles.subspan(i, std::min<std::size_t>(XENHSA_WAIT_MAX_EVENTS, handles.size() - i));
        auto seqno = client_.event_wait_async(group, false, timeout_ms);
        if (!seqno) {
            cancel_rest();
            return seqno.error();
        }
        waits.push_back(seqno.value());
    }
    for (;;) {
        for (auto it = waits.begin(); it != waits.end(); ++it) {
            if (!client_.replied(*it)) {
                continue;
            }
            const uint32_t seqno = *it;
            waits.erase(it);
            auto mask = client_.finish_wait(seqno);
            cancel_rest();
            if (!mask) {
                return mask.error();
            }
            return boost::outcome_v2::success();
        }
        if (auto pumped = client_.pump(std::chrono::milliseconds(100)); !pumped) {
            cancel_rest();
            return pumped.error();
        }
    }
}

}  // namespace xenhsa::frontend::hsakmt
