// The GPU commands (docs/protocol.md §5.7-5.16), forwarded to GpuSession after the
// checks that are the backend's: handles (its books), address coverage, host nodes and
// the handle quota, in the documented order. The GPU feature was checked by gate_check.
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
    gpu_objects_.add_memory(pinned.value(), GpuObjects::Memory{req.va, req.size, false, false, 0});
    xenhsa_handle_rsp rsp{};
    rsp.handle = pinned.value();
    return make_reply(XENHSA_CMD_PIN, seqno, XENHSA_STATUS_OK, rsp);
}

Reply Session::unpin(const xenhsa_handle_req& req, uint32_t seqno) {
    const auto done = [&](uint32_t status) { return make_reply(XENHSA_CMD_UNPIN, seqno, status); };
    const GpuObjects::Memory* m = gpu_objects_.live_memory(req.handle);
    if (m == nullptr || m->alloc) {
        return done(XENHSA_STATUS_BAD_HANDLE);
    }
    if (auto r = seams_.gpu->unpin(req.handle); !r) {
        return done(seam_status(Seam::gpu, r.error()));
    }
    gpu_objects_.release_memory(req.handle);
    return done(XENHSA_STATUS_OK);
}

Reply Session::map_to_gpu(const xenhsa_map_to_gpu_req& req, uint32_t seqno) {
    const auto fail = [&](uint32_t status) {
        return make_reply(XENHSA_CMD_MAP_TO_GPU, seqno, status);
    };
    GpuObjects::Memory* m = gpu_objects_.live_memory(req.handle);
    if (m == nullptr) {
        return fail(XENHSA_STATUS_BAD_HANDLE);
    }
    if ((req.node_mask & ~topology_.gpu_mask()) != 0) {
        return fail(XENHSA_STATUS_BAD_ARGUMENT);
    }
    auto mapped = seams_.gpu->map_to_gpu(req.handle, req.node_mask, req.flags);
    if (!mapped) {
        return fail(seam_status(Seam::gpu, mapped.error()));
    }
    m->gpu_nodes |= req.node_mask;
    xenhsa_map_to_gpu_rsp rsp{};
    rsp.gpu_va = mapped.value();
    return make_reply(XENHSA_CMD_MAP_TO_GPU, seqno, XENHSA_STATUS_OK, rsp);
}

Reply Session::unmap_from_gpu(const xenhsa_handle_req& req, uint32_t seqno) {
    const auto done = [&](uint32_t status) {
        return make_reply(XENHSA_CMD_UNMAP_FROM_GPU, seqno, status);
    };
    GpuObjects::Memory* m = gpu_objects_.live_memory(req.handle);
    if (m == nullptr) {
        return done(XENHSA_STATUS_BAD_HANDLE);
    }
    if (m->gpu_nodes == 0) {
        return done(XENHSA_STATUS_BAD_STATE);
    }
    if (auto r = seams_.gpu->unmap_from_gpu(req.handle); !r) {
        return done(seam_status(Seam::gpu, r.error()));
    }
    m->gpu_nodes = 0;  // as the guest sees it; a live queue may keep the mapping until it goes
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
    gpu_objects_.add_memory(allocated.value(), GpuObjects::Memory{va, req.size, true, false, 0});
    xenhsa_alloc_rsp rsp{};
    rsp.handle = allocated.value();
    rsp.va = va;
    return make_reply(XENHSA_CMD_ALLOC, seqno, XENHSA_STATUS_OK, rsp);
}

Reply Session::free(const xenhsa_handle_req& req, uint32_t seqno) {
    const auto done = [&](uint32_t status) { return make_reply(XENHSA_CMD_FREE, seqno, status); };
    const GpuObjects::Memory* m = gpu_objects_.live_memory(req.handle);
    if (m == nullptr || !m->alloc) {
        return done(XENHSA_STATUS_BAD_HANDLE);
    }
    const uint64_t va = m->va;
    const uint64_t size = m->size;
    if (auto r = seams_.gpu->free(req.handle); !r) {
        return done(seam_status(Seam::gpu, r.error()));
    }
    if (gpu_objects_.release_memory(req.handle)) {
        window_.release(va, size);  // the device memory is gone: PROT_NONE again
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
    if (req.error_event != 0 && !gpu_objects_.event_live(req.error_event)) {
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
        if (!gpu_objects_.gpu_mapped_on(r.va, r.size, req.node) ||
            gpu_objects_.queue_uses(r.va, r.size)) {
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
    gpu_objects_.add_queue(q.handle, GpuObjects::Queue{req.ring_va, req.ring_size, req.rptr_va,
                                                       req.wptr_va, q.doorbell_index, false});
    if (q.doorbell_index < doorbell_seen_.size()) {
        // The slot may still hold what a destroyed queue left there, and the new queue's
        // first value may equal it: clear it, so that any value it writes is news. The
        // guest learns the index from this answer, so it cannot have rung it yet.
        if (doorbell_page_ != nullptr) {
            __atomic_store_n(&doorbell_page_->doorbell[q.doorbell_index], uint64_t{0},
                             __ATOMIC_RELEASE);
        }
        doorbell_seen_[q.doorbell_index] = 0;
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
    if (gpu_objects_.queue(req.handle) == nullptr) {
        return done(XENHSA_STATUS_BAD_HANDLE);
    }
    if (auto r = seams_.gpu->destroy_queue(req.handle); !r) {
        return done(seam_status(Seam::gpu, r.error()));
    }
    // The releases deferred because of this queue, then the OK (§5.14).
    queue_gone(req.handle);
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
    gpu_objects_.add_event(created.value().handle);
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
    if (!gpu_objects_.event_live(req.handle)) {
        return make_reply(cmd, seqno, XENHSA_STATUS_BAD_HANDLE);
    }
    hsa::Result<void> r = cmd == XENHSA_CMD_EVENT_DESTROY ? seams_.gpu->destroy_event(req.handle)
                          : cmd == XENHSA_CMD_EVENT_SET   ? seams_.gpu->set_event(req.handle)
                                                          : seams_.gpu->reset_event(req.handle);
    if (!r) {
        return make_reply(cmd, seqno, seam_status(Seam::gpu, r.error()));
    }
    if (cmd == XENHSA_CMD_EVENT_DESTROY) {
        gpu_objects_.remove_event(req.handle);
    }
    return make_reply(cmd, seqno, XENHSA_STATUS_OK);
}

uint32_t Session::doorbells(const xenhsa_doorbell_page& page) noexcept {
    if (seams_.gpu == nullptr) {
        return 0;
    }
    uint32_t forwarded = 0;
    gpu_objects_.for_each_queue([&](hsa::Handle, const GpuObjects::Queue& q) {
        if (q.doorbell >= XENHSA_DOORBELLS_PER_PAGE) {
            return;
        }
        // One read of the guest-written slot; only a hint that the write index moved.
        const uint64_t value = __atomic_load_n(&page.doorbell[q.doorbell], __ATOMIC_ACQUIRE);
        if (value != doorbell_seen_[q.doorbell]) {
            doorbell_seen_[q.doorbell] = value;
            seams_.gpu->doorbell(q.doorbell, value);
            ++forwarded;
        }
    });
    doorbells_forwarded_ += forwarded;
    return forwarded;
}

}  // namespace xenhsa::backend::core
