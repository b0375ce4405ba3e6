// The GPU commands (docs/protocol.md §5.7-5.16), forwarded to GpuSession after the
// checks that are the backend's: handles (asked of GpuSession, which alone keeps them),
// address coverage, host nodes and the handle quota, in the documented order. The GPU
// feature was checked by gate_check.
#include <xenhsa/backend/core/seam_status.hpp>
#include <xenhsa/backend/core/session.hpp>

namespace xenhsa::backend::core {
namespace {

constexpr uint64_t kPointerSize = 8;

}  // namespace

Reply Session::pin(const xenhsa_pin_req& req, uint32_t seqno) {
    const auto fail = [&](uint32_t status) { return make_reply(XENHSA_CMD_PIN, seqno, status); };
    // The range must lie in this guest's MAPs, writable ones unless READ_ONLY.
    const bool need_writable = (req.flags & XENHSA_PIN_READ_ONLY) == 0;
    if (const uint32_t covered = map_revoke_.coverage_status(req.va, req.size, need_writable);
        covered != XENHSA_STATUS_OK) {
        return fail(covered);
    }
    if (handles_full()) {
        return fail(XENHSA_STATUS_QUOTA);
    }
    auto pinned = seams_.gpu->pin(req.va, req.size, req.flags);
    if (!pinned) {
        return fail(seam_status(Seam::gpu, pinned.error()));
    }
    xenhsa_handle_rsp rsp{};
    rsp.handle = pinned.value();
    return make_reply(XENHSA_CMD_PIN, seqno, XENHSA_STATUS_OK, rsp);
}

Reply Session::unpin(const xenhsa_handle_req& req, uint32_t seqno) {
    const auto done = [&](uint32_t status) { return make_reply(XENHSA_CMD_UNPIN, seqno, status); };
    const auto m = seams_.gpu->memory(req.handle);
    if (!m || m->alloc) {
        return done(XENHSA_STATUS_BAD_HANDLE);
    }
    if (auto r = seams_.gpu->unpin(req.handle); !r) {
        return done(seam_status(Seam::gpu, r.error()));
    }
    return done(XENHSA_STATUS_OK);
}

Reply Session::map_to_gpu(const xenhsa_map_to_gpu_req& req, uint32_t seqno) {
    const auto fail = [&](uint32_t status) {
        return make_reply(XENHSA_CMD_MAP_TO_GPU, seqno, status);
    };
    if (!seams_.gpu->memory(req.handle)) {
        return fail(XENHSA_STATUS_BAD_HANDLE);
    }
    if ((req.node_mask & ~topology_.gpu_mask()) != 0) {
        return fail(XENHSA_STATUS_BAD_ARGUMENT);
    }
    auto mapped = seams_.gpu->map_to_gpu(req.handle, req.node_mask, req.flags);
    if (!mapped) {
        return fail(seam_status(Seam::gpu, mapped.error()));
    }
    xenhsa_map_to_gpu_rsp rsp{};
    rsp.gpu_va = mapped.value();
    return make_reply(XENHSA_CMD_MAP_TO_GPU, seqno, XENHSA_STATUS_OK, rsp);
}

Reply Session::unmap_from_gpu(const xenhsa_handle_req& req, uint32_t seqno) {
    const auto done = [&](uint32_t status) {
        return make_reply(XENHSA_CMD_UNMAP_FROM_GPU, seqno, status);
    };
    const auto m = seams_.gpu->memory(req.handle);
    if (!m) {
        return done(XENHSA_STATUS_BAD_HANDLE);
    }
    if (!m->gpu_mapped) {
        return done(XENHSA_STATUS_BAD_STATE);
    }
    // A live queue may keep the mapping until it goes; the guest sees it gone now.
    if (auto r = seams_.gpu->unmap_from_gpu(req.handle); !r) {
        return done(seam_status(Seam::gpu, r.error()));
    }
    return done(XENHSA_STATUS_OK);
}

Reply Session::alloc(const xenhsa_alloc_req& req, uint32_t seqno) {
    const auto fail = [&](uint32_t status) { return make_reply(XENHSA_CMD_ALLOC, seqno, status); };
    if (req.va != 0) {
        if (const uint32_t placed = window_.placement_status(req.va, req.size);
            placed != XENHSA_STATUS_OK) {
            return fail(placed);
        }
    }
    if (!topology_.is_node(req.node) ||
        ((req.flags & XENHSA_ALLOC_DEVICE_LOCAL) != 0 && !topology_.has_local_memory(req.node))) {
        return fail(XENHSA_STATUS_BAD_ARGUMENT);
    }
    if (handles_full()) {
        return fail(XENHSA_STATUS_QUOTA);
    }
    uint64_t va = req.va;
    if (va == 0) {
        const auto found = window_.find_free(req.size);
        if (!found) {
            return fail(XENHSA_STATUS_NO_MEMORY);
        }
        va = *found;
    }
    if (!window_.claim(va, req.size, RangeKind::alloc)) {
        return fail(XENHSA_STATUS_BAD_ADDRESS);
    }
    auto allocated = seams_.gpu->alloc(va, req.size, req.node, req.flags);
    if (!allocated) {
        window_.release(va, req.size);
        return fail(seam_status(Seam::gpu, allocated.error()));
    }
    xenhsa_alloc_rsp rsp{};
    rsp.handle = allocated.value();
    rsp.va = va;
    return make_reply(XENHSA_CMD_ALLOC, seqno, XENHSA_STATUS_OK, rsp);
}

Reply Session::free(const xenhsa_handle_req& req, uint32_t seqno) {
    const auto done = [&](uint32_t status) { return make_reply(XENHSA_CMD_FREE, seqno, status); };
    const auto m = seams_.gpu->memory(req.handle);
    if (!m || !m->alloc) {
        return done(XENHSA_STATUS_BAD_HANDLE);
    }
    // The window takes the range back (PROT_NONE) once the device memory is gone: now, or
    // when the last queue holding it goes.
    if (auto r = seams_.gpu->free(req.handle, window_); !r) {
        return done(seam_status(Seam::gpu, r.error()));
    }
    return done(XENHSA_STATUS_OK);
}

Reply Session::queue_create(const xenhsa_queue_create_req& req, uint32_t seqno) {
    const auto fail = [&](uint32_t status) {
        return make_reply(XENHSA_CMD_QUEUE_CREATE, seqno, status);
    };
    // The feature step for the one type that has its own bit (after gate_check's GPU bit).
    if (req.type == XENHSA_QUEUE_SDMA && (features_ & XENHSA_FEATURE_SDMA) == 0) {
        return fail(XENHSA_STATUS_UNSUPPORTED);
    }
    if (req.error_event != 0 && !seams_.gpu->event_live(req.error_event)) {
        return fail(XENHSA_STATUS_BAD_HANDLE);
    }
    const struct {
        uint64_t va;
        uint64_t size;
    } ranges[] = {
        {req.ring_va, req.ring_size}, {req.rptr_va, kPointerSize}, {req.wptr_va, kPointerSize}};
    for (const auto& r : ranges) {
        if (window_.ranges().overlap(r.va, r.size) == RangeMap::Overlap::revoked_lend) {
            return fail(XENHSA_STATUS_REVOKED);
        }
        // A live queue's memory is its own: two queues never share a ring or a pointer.
        if (!seams_.gpu->queue_range_free(r.va, r.size, req.node)) {
            return fail(XENHSA_STATUS_BAD_ADDRESS);
        }
    }
    if (!topology_.is_gpu(req.node)) {
        return fail(XENHSA_STATUS_BAD_ARGUMENT);
    }
    if (handles_full()) {
        return fail(XENHSA_STATUS_QUOTA);
    }
    auto created = seams_.gpu->create_queue(req);
    if (!created) {
        return fail(seam_status(Seam::gpu, created.error()));
    }
    const hsa::GpuSession::QueueCreated q = created.value();
    if (q.doorbell_index < XENHSA_DOORBELLS_PER_PAGE && doorbell_page_ != nullptr) {
        // The slot may still hold what a destroyed queue left there, and the new queue's
        // first value may equal it: clear it, so that any value it writes is news. The
        // guest learns the index from this answer, so it cannot have rung it yet.
        __atomic_store_n(&doorbell_page_->doorbell[q.doorbell_index], uint64_t{0},
                         __ATOMIC_RELEASE);
    }
    xenhsa_queue_create_rsp rsp{};
    rsp.handle = q.handle;
    rsp.doorbell_index = q.doorbell_index;
    return make_reply(XENHSA_CMD_QUEUE_CREATE, seqno, XENHSA_STATUS_OK, rsp);
}

Reply Session::queue_destroy(const xenhsa_handle_req& req, uint32_t seqno) {
    const auto done = [&](uint32_t status) {
        return make_reply(XENHSA_CMD_QUEUE_DESTROY, seqno, status);
    };
    if (!seams_.gpu->queue_live(req.handle)) {
        return done(XENHSA_STATUS_BAD_HANDLE);
    }
    // The releases deferred because of this queue (the device's, then the UNMAPs'), then
    // the OK (§5.14).
    if (auto r = seams_.gpu->destroy_queue(req.handle, window_); !r) {
        return done(seam_status(Seam::gpu, r.error()));
    }
    map_revoke_.release_deferred(
        [this](uint64_t va, uint64_t size) { return range_held(va, size); });
    return done(XENHSA_STATUS_OK);
}

Reply Session::event_create(const xenhsa_event_create_req& req, uint32_t seqno) {
    const auto fail = [&](uint32_t status) {
        return make_reply(XENHSA_CMD_EVENT_CREATE, seqno, status);
    };
    if (!topology_.is_node(req.node)) {
        return fail(XENHSA_STATUS_BAD_ARGUMENT);
    }
    if (handles_full()) {
        return fail(XENHSA_STATUS_QUOTA);
    }
    auto created = seams_.gpu->create_event(req);
    if (!created) {
        return fail(seam_status(Seam::gpu, created.error()));
    }
    xenhsa_event_create_rsp rsp{};
    rsp.handle = created.value().handle;
    rsp.event_id = created.value().event_id;
    // A mailbox outside the window is the worker's memory (KFD's event page): its
    // address tells the guest about the worker's layout and is of no use to it.
    const uint64_t mailbox = created.value().mailbox;
    rsp.mailbox_va = window_.contains(mailbox, sizeof(uint64_t)) ? mailbox : 0;
    return make_reply(XENHSA_CMD_EVENT_CREATE, seqno, XENHSA_STATUS_OK, rsp);
}

Reply Session::event_op(uint32_t cmd, const xenhsa_handle_req& req, uint32_t seqno) {
    if (!seams_.gpu->event_live(req.handle)) {
        return make_reply(cmd, seqno, XENHSA_STATUS_BAD_HANDLE);
    }
    hsa::Result<void> r = cmd == XENHSA_CMD_EVENT_DESTROY ? seams_.gpu->destroy_event(req.handle)
                          : cmd == XENHSA_CMD_EVENT_SET   ? seams_.gpu->set_event(req.handle)
                                                          : seams_.gpu->reset_event(req.handle);
    if (!r) {
        return make_reply(cmd, seqno, seam_status(Seam::gpu, r.error()));
    }
    return make_reply(cmd, seqno, XENHSA_STATUS_OK);
}

uint32_t Session::doorbells(const xenhsa_doorbell_page& page) noexcept {
    if (seams_.gpu == nullptr) {
        return 0;
    }
    const uint32_t forwarded = seams_.gpu->forward_doorbells(page);
    doorbells_forwarded_ += forwarded;
    return forwarded;
}

}  // namespace xenhsa::backend::core
