// QUEUE_CREATE, QUEUE_DESTROY and the doorbell page.
#include <xenhsa/proto/queue.h>
#include <xenhsa/proto/validate.h>

#include <bit>
#include <optional>

#include "context_impl.hpp"
#include "fatal.hpp"

namespace xenhsa::hsa {

namespace {

std::optional<QueueType> queue_type(uint32_t type) noexcept {
    switch (type) {
        case XENHSA_QUEUE_COMPUTE_AQL:
            return QueueType::compute_aql;
        case XENHSA_QUEUE_SDMA:
            return QueueType::sdma;
        default:
            return std::nullopt;
    }
}

Result<void> check_queue_request(const xenhsa_queue_create_req& req) {
    const bool args_ok =
        queue_type(req.type).has_value() && req.node < XENHSA_QUERY_MAX_NODES &&
        req.percentage <= 100 && req.priority >= XENHSA_QUEUE_PRIORITY_MIN &&
        req.priority <= XENHSA_QUEUE_PRIORITY_MAX && req.ring_size >= XENHSA_QUEUE_RING_MIN &&
        req.ring_size <= XENHSA_QUEUE_RING_MAX && std::has_single_bit(req.ring_size);
    if (!args_ok) {
        return errc(std::errc::invalid_argument);
    }
    if (!xenhsa_va_range_ok(req.ring_va, req.ring_size) || !xenhsa_pointer_ok(req.rptr_va) ||
        !xenhsa_pointer_ok(req.wptr_va)) {
        return errc(std::errc::bad_address);
    }
    return boost::outcome_v2::success();
}

}  // namespace

Result<GpuContext::QueueCreated> GpuContext::create_queue(const xenhsa_queue_create_req& req) {
    Impl& s = *impl_;
    if (auto ok = check_queue_request(req); !ok) {
        return ok.error();
    }
    uint32_t error_event = detail::kNoSlot;
    if (req.error_event != 0) {
        const uint32_t* slot = s.events.find(req.error_event);
        if (slot == nullptr) {
            return errc(std::errc::bad_file_descriptor);
        }
        error_event = *slot;
    }
    if (s.queues.size() >= s.limits.max_queues || s.live_handles() >= s.limits.max_handles) {
        return detail::quota_exceeded();
    }

    detail::QueueObj queue;
    const uint32_t ring = s.queue_memory(req.ring_va, req.ring_size, req.node);
    const uint32_t rptr = s.queue_memory(req.rptr_va, 8, req.node);
    const uint32_t wptr = s.queue_memory(req.wptr_va, 8, req.node);
    if (ring == detail::kNoSlot || rptr == detail::kNoSlot || wptr == detail::kNoSlot) {
        return errc(std::errc::bad_address);
    }
    queue.ring = req.ring_va;
    queue.ring_size = req.ring_size;
    queue.rptr = req.rptr_va;
    queue.wptr = req.wptr_va;
    queue.mems[0] = ring;
    queue.mems[1] = rptr != ring ? rptr : detail::kNoSlot;
    queue.mems[2] = wptr != ring && wptr != rptr ? wptr : detail::kNoSlot;
    queue.error_event = error_event;

    uint32_t doorbell = 0;
    while (doorbell < XENHSA_DOORBELLS_PER_PAGE && s.doorbell_used[doorbell]) {
        ++doorbell;
    }
    if (doorbell == XENHSA_DOORBELLS_PER_PAGE) {
        return errc(std::errc::not_enough_memory);
    }
    queue.doorbell = doorbell;

    QueueSpec spec;
    spec.type = *queue_type(req.type);
    spec.node = req.node;
    spec.percentage = req.percentage;
    spec.priority = req.priority;
    spec.ring = req.ring_va;
    spec.ring_size = req.ring_size;
    spec.rptr = req.rptr_va;
    spec.wptr = req.wptr_va;
    spec.error_event = error_event == detail::kNoSlot ? 0 : s.evs[error_event].id;
    auto created = s.device.create_queue(spec);
    if (!created) {
        return created.error();
    }
    queue.id = created.value();

    auto handle = s.queues.insert(queue);  // cannot fail: the quota was checked
    if (!handle) {
        if (auto undo = s.device.destroy_queue(queue.id); !undo) {
            detail::fatal("destroy queue after a failed create", queue.id, undo.error());
        }
        return detail::quota_exceeded();
    }
    for (uint32_t mem : queue.mems) {
        if (mem != detail::kNoSlot) {
            ++s.mems[mem].queue_refs;
        }
    }
    if (error_event != detail::kNoSlot) {
        ++s.evs[error_event].queue_refs;
    }
    s.doorbell_used[doorbell] = true;
    s.doorbell_queue[doorbell] = queue.id;
    // The caller clears the slot of the guest's page: any value the new queue writes is news.
    s.doorbell_seen[doorbell] = 0;
    s.relay->add(queue.id, *handle);
    return QueueCreated{*handle, doorbell};
}

Result<void> GpuContext::destroy_queue(Handle queue, FreedAllocs& freed) {
    Impl& s = *impl_;
    auto erased = s.queues.erase(queue);
    if (!erased) {
        return errc(std::errc::bad_file_descriptor);
    }
    const detail::QueueObj& q = *erased;
    // Only this queue's deferred releases run, in teardown order.
    (void)s.stop_queue(q);  // the guest asked: not a loss
    s.drop_refs(q);
    if (q.error_event != detail::kNoSlot) {
        s.settle_event(q.error_event);
    }
    for (uint32_t mem : q.mems) {
        if (mem != detail::kNoSlot) {
            s.settle_unmap(mem);
        }
    }
    for (uint32_t mem : q.mems) {
        if (mem != detail::kNoSlot) {
            s.settle_release(mem, &freed);
        }
    }
    return boost::outcome_v2::success();
}

void GpuContext::doorbell(uint32_t index, uint64_t value) noexcept {
    Impl& s = *impl_;
    if (index >= XENHSA_DOORBELLS_PER_PAGE || !s.doorbell_used[index]) {
        return;
    }
    // A failure means the queue stopped (it faulted); the fault path reports that.
    (void)s.device.ring_doorbell(s.doorbell_queue[index], value);
}

uint32_t GpuContext::forward_doorbells(const xenhsa_doorbell_page& page) noexcept {
    Impl& s = *impl_;
    uint32_t forwarded = 0;
    for (uint32_t index = 0; index < XENHSA_DOORBELLS_PER_PAGE; ++index) {
        if (!s.doorbell_used[index]) {
            continue;
        }
        // One read of the guest-written slot; only a hint that the write index moved.
        const uint64_t value = __atomic_load_n(&page.doorbell[index], __ATOMIC_ACQUIRE);
        if (value != s.doorbell_seen[index]) {
            s.doorbell_seen[index] = value;
            doorbell(index, value);
            ++forwarded;
        }
    }
    return forwarded;
}

bool GpuContext::supports_queue_type(uint32_t type) noexcept {
    const auto t = queue_type(type);
    return t && impl_->device.supports_queue_type(*t);
}

bool GpuContext::track_kicks(uint32_t* kick_requested) noexcept {
    return impl_->device.track_kicks(kick_requested);
}

std::optional<uint64_t> GpuContext::packets_taken() const noexcept {
    return impl_->device.packets_taken();
}

}  // namespace xenhsa::hsa
