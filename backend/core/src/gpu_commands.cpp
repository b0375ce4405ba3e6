#include <boost/asio/post.hpp>
#include <mutex>
#include <xenhsa/backend/core/gpu_commands.hpp>
#include <xenhsa/backend/core/seam_status.hpp>

namespace xenhsa::backend::core {
namespace {

constexpr uint64_t kPointerSize = 8;

}  // namespace

GpuCommands::GpuCommands(boost::asio::io_context& io, hsa::GpuContext* gpu,
                         const GpuCommandParts& parts, std::shared_ptr<GpuHandoff> handoff,
                         uint32_t max_queues)
    : gpu_(gpu), parts_(parts), handoff_(std::move(handoff)) {
    // Each queue is reported once; faults and a teardown's reports between two drains fit.
    const std::size_t lost_capacity = 2 * std::size_t{max_queues} + 16;
    handoff_->lost.reserve(lost_capacity);
    handoff_->draining.reserve(lost_capacity);
    if (gpu_ == nullptr) {
        return;
    }
    auto executor = io.get_executor();
    gpu_->on_queue_lost(
        [handoff = handoff_, executor, self = this](hsa::Handle queue, hsa::Va address, bool hang) {
            std::lock_guard<std::mutex> hold(handoff->lock);
            if (!handoff->open) {
                return;
            }
            if (handoff->lost.size() < handoff->lost.capacity()) {
                handoff->lost.push_back(GpuHandoff::Lost{queue, address, hang});
            }
            // On the loop thread (a revoke, a teardown) the caller drains right afterwards.
            if (!executor.running_in_this_thread()) {
                boost::asio::post(executor, [handoff, self] {
                    if (handoff->is_open()) {
                        self->drain_lost_queues();
                    }
                });
            }
        });
}

GpuCommands::~GpuCommands() {
    if (gpu_ != nullptr) {
        gpu_->on_queue_lost({});
    }
}

Reply GpuCommands::pin(const xenhsa_pin_req& req, uint32_t seqno) {
    const auto fail = [&](uint32_t status) { return make_reply(XENHSA_CMD_PIN, seqno, status); };
    // The range must lie in this guest's MAPs and LENDs, writable ones unless READ_ONLY.
    const bool need_writable = (req.flags & XENHSA_PIN_READ_ONLY) == 0;
    if (const uint32_t covered = parts_.map_revoke.coverage_status(req.va, req.size, need_writable);
        covered != XENHSA_STATUS_OK) {
        return fail(covered);
    }
    if (parts_.handles.full()) {
        return fail(XENHSA_STATUS_QUOTA);
    }
    auto pinned = gpu_->pin(req.va, req.size, req.flags);
    if (!pinned) {
        // The range is mapped (checked above): EFAULT is a kernel that cannot pin grant
        // mappings (a PV dom0's gntdev PTEs). GPU memory must be LENDs on this host.
        return fail(pinned.error() == std::errc::bad_address
                        ? uint32_t{XENHSA_STATUS_UNSUPPORTED}
                        : seam_status(Seam::gpu, pinned.error()));
    }
    xenhsa_handle_rsp rsp{};
    rsp.handle = pinned.value();
    return make_reply(XENHSA_CMD_PIN, seqno, XENHSA_STATUS_OK, rsp);
}

Reply GpuCommands::unpin(const xenhsa_handle_req& req, uint32_t seqno) {
    const auto done = [&](uint32_t status) { return make_reply(XENHSA_CMD_UNPIN, seqno, status); };
    const auto m = gpu_->memory(req.handle);
    if (!m || m->alloc) {
        return done(XENHSA_STATUS_BAD_HANDLE);
    }
    if (auto r = gpu_->unpin(req.handle); !r) {
        return done(seam_status(Seam::gpu, r.error()));
    }
    return done(XENHSA_STATUS_OK);
}

Reply GpuCommands::map_to_gpu(const xenhsa_map_to_gpu_req& req, uint32_t seqno) {
    const auto fail = [&](uint32_t status) {
        return make_reply(XENHSA_CMD_MAP_TO_GPU, seqno, status);
    };
    if (!gpu_->memory(req.handle)) {
        return fail(XENHSA_STATUS_BAD_HANDLE);
    }
    if ((req.node_mask & ~parts_.topology.gpu_mask()) != 0) {
        return fail(XENHSA_STATUS_BAD_ARGUMENT);
    }
    auto mapped = gpu_->map_to_gpu(req.handle, req.node_mask, req.flags);
    if (!mapped) {
        return fail(seam_status(Seam::gpu, mapped.error()));
    }
    xenhsa_map_to_gpu_rsp rsp{};
    rsp.gpu_va = mapped.value();
    return make_reply(XENHSA_CMD_MAP_TO_GPU, seqno, XENHSA_STATUS_OK, rsp);
}

Reply GpuCommands::unmap_from_gpu(const xenhsa_handle_req& req, uint32_t seqno) {
    const auto done = [&](uint32_t status) {
        return make_reply(XENHSA_CMD_UNMAP_FROM_GPU, seqno, status);
    };
    const auto m = gpu_->memory(req.handle);
    if (!m) {
        return done(XENHSA_STATUS_BAD_HANDLE);
    }
    if (!m->gpu_mapped) {
        return done(XENHSA_STATUS_BAD_STATE);
    }
    // A live queue may keep the mapping until it goes; the guest sees it gone now.
    if (auto r = gpu_->unmap_from_gpu(req.handle); !r) {
        return done(seam_status(Seam::gpu, r.error()));
    }
    return done(XENHSA_STATUS_OK);
}

Reply GpuCommands::alloc(const xenhsa_alloc_req& req, uint32_t seqno) {
    const auto fail = [&](uint32_t status) { return make_reply(XENHSA_CMD_ALLOC, seqno, status); };
    if (req.va != 0) {
        if (const uint32_t placed = parts_.window.placement_status(req.va, req.size);
            placed != XENHSA_STATUS_OK) {
            return fail(placed);
        }
    }
    if (!parts_.topology.is_node(req.node) || ((req.flags & XENHSA_ALLOC_DEVICE_LOCAL) != 0 &&
                                               !parts_.topology.has_local_memory(req.node))) {
        return fail(XENHSA_STATUS_BAD_ARGUMENT);
    }
    if (parts_.handles.full()) {
        return fail(XENHSA_STATUS_QUOTA);
    }
    uint64_t va = req.va;
    if (va == 0) {
        const auto found = parts_.window.find_free(req.size);
        if (!found) {
            return fail(XENHSA_STATUS_NO_MEMORY);
        }
        va = *found;
    }
    if (!parts_.window.claim(va, req.size, RangeKind::alloc)) {
        return fail(XENHSA_STATUS_BAD_ADDRESS);
    }
    auto allocated = gpu_->alloc(va, req.size, req.node, req.flags);
    if (!allocated) {
        parts_.window.release(va, req.size);
        return fail(seam_status(Seam::gpu, allocated.error()));
    }
    xenhsa_alloc_rsp rsp{};
    rsp.handle = allocated.value();
    rsp.va = va;
    return make_reply(XENHSA_CMD_ALLOC, seqno, XENHSA_STATUS_OK, rsp);
}

Reply GpuCommands::free(const xenhsa_handle_req& req, uint32_t seqno) {
    const auto done = [&](uint32_t status) { return make_reply(XENHSA_CMD_FREE, seqno, status); };
    const auto m = gpu_->memory(req.handle);
    if (!m || !m->alloc) {
        return done(XENHSA_STATUS_BAD_HANDLE);
    }
    // The window takes the range back (PROT_NONE) once the device memory is gone: now, or
    // when the last queue holding it goes.
    if (auto r = gpu_->free(req.handle, parts_.window); !r) {
        return done(seam_status(Seam::gpu, r.error()));
    }
    return done(XENHSA_STATUS_OK);
}

Reply GpuCommands::queue_create(const xenhsa_queue_create_req& req, uint32_t seqno) {
    const auto fail = [&](uint32_t status) {
        return make_reply(XENHSA_CMD_QUEUE_CREATE, seqno, status);
    };
    // The feature step for the one type that has its own bit (after gate_check's GPU bit).
    if (req.type == XENHSA_QUEUE_SDMA && !parts_.terms.granted(XENHSA_FEATURE_SDMA)) {
        return fail(XENHSA_STATUS_UNSUPPORTED);
    }
    if (req.error_event != 0 && !gpu_->event_live(req.error_event)) {
        return fail(XENHSA_STATUS_BAD_HANDLE);
    }
    const struct {
        uint64_t va;
        uint64_t size;
    } ranges[] = {
        {req.ring_va, req.ring_size}, {req.rptr_va, kPointerSize}, {req.wptr_va, kPointerSize}};
    for (const auto& r : ranges) {
        if (parts_.window.ranges().overlap(r.va, r.size) == RangeMap::Overlap::revoked_lend) {
            return fail(XENHSA_STATUS_REVOKED);
        }
        // A live queue's memory is its own: two queues never share a ring or a pointer.
        if (!gpu_->queue_range_free(r.va, r.size, req.node)) {
            return fail(XENHSA_STATUS_BAD_ADDRESS);
        }
    }
    if (!parts_.topology.is_gpu(req.node)) {
        return fail(XENHSA_STATUS_BAD_ARGUMENT);
    }
    if (parts_.handles.full()) {
        return fail(XENHSA_STATUS_QUOTA);
    }
    auto created = gpu_->create_queue(req);
    if (!created) {
        return fail(seam_status(Seam::gpu, created.error()));
    }
    const hsa::GpuContext::QueueCreated q = created.value();
    if (q.doorbell_index < XENHSA_DOORBELLS_PER_PAGE && parts_.doorbell_page != nullptr) {
        // The slot may still hold what a destroyed queue left there, and the new queue's
        // first value may equal it: clear it, so that any value it writes is news. The
        // guest learns the index from this answer, so it cannot have rung it yet.
        __atomic_store_n(&parts_.doorbell_page->doorbell[q.doorbell_index], uint64_t{0},
                         __ATOMIC_RELEASE);
    }
    xenhsa_queue_create_rsp rsp{};
    rsp.handle = q.handle;
    rsp.doorbell_index = q.doorbell_index;
    return make_reply(XENHSA_CMD_QUEUE_CREATE, seqno, XENHSA_STATUS_OK, rsp);
}

Reply GpuCommands::queue_destroy(const xenhsa_handle_req& req, uint32_t seqno) {
    const auto done = [&](uint32_t status) {
        return make_reply(XENHSA_CMD_QUEUE_DESTROY, seqno, status);
    };
    if (!gpu_->queue_live(req.handle)) {
        return done(XENHSA_STATUS_BAD_HANDLE);
    }
    // The releases deferred because of this queue (the device's, then the UNMAPs'), then
    // the OK (§5.14).
    if (auto r = gpu_->destroy_queue(req.handle, parts_.window); !r) {
        return done(seam_status(Seam::gpu, r.error()));
    }
    parts_.map_revoke.release_deferred(
        [this](uint64_t va, uint64_t size) { return gpu_->range_held(va, size); });
    return done(XENHSA_STATUS_OK);
}

Reply GpuCommands::event_create(const xenhsa_event_create_req& req, uint32_t seqno) {
    const auto fail = [&](uint32_t status) {
        return make_reply(XENHSA_CMD_EVENT_CREATE, seqno, status);
    };
    if (!parts_.topology.is_node(req.node)) {
        return fail(XENHSA_STATUS_BAD_ARGUMENT);
    }
    if (parts_.handles.full()) {
        return fail(XENHSA_STATUS_QUOTA);
    }
    auto created = gpu_->create_event(req);
    if (!created) {
        return fail(seam_status(Seam::gpu, created.error()));
    }
    xenhsa_event_create_rsp rsp{};
    rsp.handle = created.value().handle;
    rsp.event_id = created.value().event_id;
    // A mailbox outside the window is the worker's memory (KFD's event page): its
    // address tells the guest about the worker's layout and is of no use to it.
    const uint64_t mailbox = created.value().mailbox;
    rsp.mailbox_va = parts_.window.contains(mailbox, sizeof(uint64_t)) ? mailbox : 0;
    return make_reply(XENHSA_CMD_EVENT_CREATE, seqno, XENHSA_STATUS_OK, rsp);
}

Reply GpuCommands::event_op(uint32_t cmd, const xenhsa_handle_req& req, uint32_t seqno) {
    if (!gpu_->event_live(req.handle)) {
        return make_reply(cmd, seqno, XENHSA_STATUS_BAD_HANDLE);
    }
    hsa::Result<void> r = cmd == XENHSA_CMD_EVENT_DESTROY ? gpu_->destroy_event(req.handle)
                          : cmd == XENHSA_CMD_EVENT_SET   ? gpu_->set_event(req.handle)
                                                          : gpu_->reset_event(req.handle);
    if (!r) {
        return make_reply(cmd, seqno, seam_status(Seam::gpu, r.error()));
    }
    return make_reply(cmd, seqno, XENHSA_STATUS_OK);
}

uint32_t GpuCommands::doorbells(const xenhsa_doorbell_page& page) noexcept {
    if (gpu_ == nullptr) {
        return 0;
    }
    const uint32_t forwarded = gpu_->forward_doorbells(page);
    doorbells_forwarded_ += forwarded;
    return forwarded;
}

uint64_t GpuCommands::gpu_progress() const noexcept {
    if (gpu_ != nullptr) {
        if (const auto taken = gpu_->packets_taken()) {
            return *taken;
        }
    }
    return doorbells_forwarded_;
}

bool GpuCommands::has_queues() const noexcept { return gpu_ != nullptr && gpu_->has_queues(); }

void GpuCommands::drain_lost_queues() noexcept {
    {
        std::lock_guard<std::mutex> hold(handoff_->lock);
        handoff_->lost.swap(handoff_->draining);  // both allocated once: no allocation
    }
    // GpuContext reports each queue once. Address 0 is a queue it destroyed (revoke,
    // teardown); a fault's queue the guest destroyed meanwhile is not news to the guest.
    for (const GpuHandoff::Lost& lost : handoff_->draining) {
        if (notifying_ && ((lost.address == 0 && !lost.hang) || gpu_->queue_live(lost.queue))) {
            (void)parts_.notify.post(
                NotifyProducer::gpu_fault(lost.queue, lost.address, lost.hang));
        }
    }
    handoff_->draining.clear();
}

}  // namespace xenhsa::backend::core
