// EVENT_CREATE, EVENT_DESTROY, EVENT_SET, EVENT_RESET, EVENT_WAIT, EVENT_WAIT_CANCEL.
#include <xenhsa/proto/event.h>

#include "context_impl.hpp"

namespace xenhsa::hsa {

Result<GpuContext::EventCreated> GpuContext::create_event(const xenhsa_event_create_req& req) {
    Impl& s = *impl_;
    if (req.pad != 0 || req.type >= XENHSA_EVENT_TYPE_COUNT_ ||
        (req.flags & ~XENHSA_EVENT_FLAGS_ALL) != 0 || req.node >= XENHSA_QUERY_MAX_NODES) {
        return errc(std::errc::invalid_argument);
    }
    if (s.events.size() >= s.limits.max_events || s.live_handles() >= s.limits.max_handles) {
        return detail::quota_exceeded();
    }
    auto slot = s.evs.acquire(detail::EventObj{});
    if (!slot) {
        return detail::quota_exceeded();
    }
    EventSpec spec;
    spec.type = req.type;
    spec.node = req.node;
    spec.manual_reset = (req.flags & XENHSA_EVENT_MANUAL_RESET) != 0;
    spec.signaled = (req.flags & XENHSA_EVENT_SIGNALED) != 0;
    auto info = s.device.create_event(spec);
    if (!info) {
        s.evs.release(*slot);
        return info.error();
    }
    auto handle = s.events.insert(*slot);  // cannot fail: the quota was checked
    if (!handle) {
        s.evs[*slot].id = info.value().id;
        s.destroy_event_now(*slot);
        return detail::quota_exceeded();
    }
    s.evs[*slot].id = info.value().id;
    s.evs[*slot].handle = *handle;
    s.evs[*slot].manual_reset = spec.manual_reset;
    return EventCreated{*handle, info.value().event_id, info.value().mailbox};
}

Result<void> GpuContext::destroy_event(Handle event) {
    Impl& s = *impl_;
    const uint32_t* found = s.events.find(event);
    if (found == nullptr) {
        return errc(std::errc::bad_file_descriptor);
    }
    const uint32_t slot = *found;
    // No wait may be inside the device on an event that is being destroyed.
    s.waits.cancel_tag(slot);
    detail::EventObj& ev = s.evs[slot];
    if (ev.queue_refs > 0) {
        // A live queue signals it on error: destroyed with the last such queue.
        s.events.erase(event);
        ev.handle = 0;
        return boost::outcome_v2::success();
    }
    if (auto r = s.device.destroy_event(ev.id); !r) {
        return r.error();
    }
    s.events.erase(event);
    s.evs.release(slot);
    return boost::outcome_v2::success();
}

Result<void> GpuContext::set_event(Handle event) {
    const uint32_t* slot = impl_->events.find(event);
    if (slot == nullptr) {
        return errc(std::errc::bad_file_descriptor);
    }
    return impl_->device.set_event(impl_->evs[*slot].id);
}

Result<void> GpuContext::reset_event(Handle event) {
    const uint32_t* slot = impl_->events.find(event);
    if (slot == nullptr) {
        return errc(std::errc::bad_file_descriptor);
    }
    return impl_->device.reset_event(impl_->evs[*slot].id);
}

Result<uint64_t> GpuContext::start_wait(std::span<const Handle> events, bool all,
                                        uint32_t timeout_ms, WaitDone done) {
    Impl& s = *impl_;
    if (events.empty() || events.size() > detail::WaitEngine::kMaxEvents || !done) {
        return errc(std::errc::invalid_argument);
    }
    detail::WaitEngine::Request request;
    request.count = static_cast<uint32_t>(events.size());
    request.all = all;
    request.timeout_ms = timeout_ms;
    for (uint32_t i = 0; i < request.count; ++i) {
        const uint32_t* slot = s.events.find(events[i]);
        if (slot == nullptr) {
            return errc(std::errc::bad_file_descriptor);
        }
        request.ids[i] = s.evs[*slot].id;
        request.tags[i] = *slot;
        if (!s.evs[*slot].manual_reset) {
            request.auto_reset |= 1u << i;
        }
    }
    return s.waits.start(request, std::move(done));
}

bool GpuContext::cancel_wait(uint64_t wait) noexcept { return impl_->waits.cancel(wait); }

}  // namespace xenhsa::hsa
