// Events over the thunk. Every KFD event is manual-reset so that a wait can tell which
// events fired (hsakmt_device.hpp); auto-reset is emulated by the wait that reports one.
#include <array>
#include <chrono>

#include "hsakmt_device.hpp"
#include "kmt_call.hpp"

namespace xenhsa::hsa::kmt {

Result<EventInfo> HsakmtDevice::create_event(const EventSpec& spec) {
    HsaEventDescriptor desc{};
    desc.EventType = static_cast<HSA_EVENTTYPE>(spec.type);
    desc.NodeId = spec.node;
    desc.SyncVar.SyncVar.UserData = nullptr;
    desc.SyncVar.SyncVarSize = 0;
    HsaEvent* event = nullptr;
    if (auto e = call([&] { return hsaKmtCreateEvent(&desc, true, spec.signaled, &event); })) {
        return e;
    }
    std::lock_guard lock(mutex_);
    const EventId id = next_event_++;
    events_[id] = Event{event, !spec.manual_reset};
    return EventInfo{id, event->EventId, event->EventData.HWData2};
}

Result<HsakmtDevice::Event> HsakmtDevice::find_event(EventId id) const {
    std::lock_guard lock(mutex_);
    auto it = events_.find(id);
    if (it == events_.end()) {
        return errc(std::errc::no_such_file_or_directory);
    }
    return it->second;
}

Result<void> HsakmtDevice::destroy_event(EventId event) {
    auto found = find_event(event);
    if (!found) {
        return found.error();
    }
    HsaEvent* kfd_event = found.value().event;
    if (auto e = call([&] { return hsaKmtDestroyEvent(kfd_event); })) {
        return e;
    }
    std::lock_guard lock(mutex_);
    events_.erase(event);
    return boost::outcome_v2::success();
}

Result<void> HsakmtDevice::set_event(EventId event) {
    auto found = find_event(event);
    if (!found) {
        return found.error();
    }
    HsaEvent* kfd_event = found.value().event;
    if (auto e = call([&] { return hsaKmtSetEvent(kfd_event); })) {
        return e;
    }
    return boost::outcome_v2::success();
}

Result<void> HsakmtDevice::reset_event(EventId event) {
    auto found = find_event(event);
    if (!found) {
        return found.error();
    }
    HsaEvent* kfd_event = found.value().event;
    if (auto e = call([&] { return hsaKmtResetEvent(kfd_event); })) {
        return e;
    }
    return boost::outcome_v2::success();
}

Result<uint32_t> HsakmtDevice::wait_events(std::span<const EventId> events, bool all,
                                           uint32_t timeout_ms) {
    constexpr size_t kMax = 32;  // the mask's width
    if (events.empty() || events.size() > kMax) {
        return errc(std::errc::invalid_argument);
    }
    std::array<HsaEvent*, kMax> list{};
    std::array<bool, kMax> auto_reset{};
    for (size_t i = 0; i < events.size(); ++i) {
        auto found = find_event(events[i]);
        if (!found) {
            return found.error();
        }
        list[i] = found.value().event;
        auto_reset[i] = found.value().auto_reset;
    }
    const auto count = static_cast<HSAuint32>(events.size());
    const uint32_t everything = count == 32 ? ~0u : (1u << count) - 1u;
    using Clock = std::chrono::steady_clock;
    const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    uint32_t left = timeout_ms;
    for (;;) {
        const HSAKMT_STATUS s = hsaKmtWaitOnMultipleEvents(list.data(), count, all, left);
        if (s == HSAKMT_STATUS_WAIT_TIMEOUT) {
            return errc(std::errc::timed_out);
        }
        if (s != HSAKMT_STATUS_SUCCESS) {
            return hsakmt_status_error(static_cast<int>(s));
        }
        uint32_t mask = 0;
        for (uint32_t i = 0; i < count; ++i) {
            if (poll_event(list[i])) {
                mask |= 1u << i;
            }
        }
        // Another waiter may have consumed an emulated auto-reset event first: wait on.
        if (all ? mask == everything : mask != 0) {
            for (uint32_t i = 0; i < count; ++i) {
                if ((mask >> i & 1u) != 0 && auto_reset[i]) {
                    hsaKmtResetEvent(list[i]);
                }
            }
            return mask;
        }
        if (timeout_ms != XENHSA_WAIT_INFINITE) {
            const auto rest =
                std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
            left = rest.count() > 0 ? static_cast<uint32_t>(rest.count()) : 0;
        }
    }
}

}  // namespace xenhsa::hsa::kmt
