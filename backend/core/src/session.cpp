#include <algorithm>
#include <boost/asio/post.hpp>
#include <mutex>
#include <new>
#include <utility>
#include <vector>
#include <xenhsa/backend/core/seam_status.hpp>
#include <xenhsa/backend/core/session.hpp>

#include "session_gate.hpp"

namespace xenhsa::backend::core {

hsa::SessionLimits gpu_limits(const Quotas& quotas, uint32_t ring_slots) noexcept {
    hsa::SessionLimits limits;
    limits.max_handles = quotas.max_handles;
    limits.max_pinned_pages = quotas.max_pinned_pages;
    limits.max_alloc_bytes = quotas.max_alloc_bytes;
    limits.max_queues = quotas.max_queues;
    limits.max_events = quotas.max_events;
    limits.max_waits = std::min(quotas.max_in_flight, ring_slots - 1);
    return limits;
}

namespace {

uint32_t backlog_capacity(const Quotas& q) noexcept {
    // At most one record per handle (§6); twice that leaves room for handles that were
    // released and reissued while the guest did not consume.
    return 2 * q.max_handles + 64;
}

}  // namespace

Session::Session(boost::asio::io_context& io, const SessionSeams& seams,
                 const SessionOptions& options)
    : io_(io),
      seams_(seams),
      ring_slots_(options.ring_slots),
      handle_capacity_(options.quotas.max_handles),
      quotas_(options.quotas),
      allowed_features_(options.features),
      negotiation_(options.proposal_base),
      notify_(options.notify_page, backlog_capacity(options.quotas)),
      map_revoke_(MapRevokeSeams{seams.guest, seams.mapper, seams.sharer, seams.gpu}, window_,
                  notify_, options.quotas.max_handles),
      topology_(seams.gpu != nullptr ? &seams.gpu->device() : nullptr),
      gate_(std::make_shared<Gate>()),
      doorbell_page_(options.doorbell_page) {
    const std::size_t lost_capacity = 2 * std::size_t{quotas_.max_queues} + 16;
    gate_->lost.reserve(lost_capacity);
    gate_->draining.reserve(lost_capacity);
    if (seams_.gpu != nullptr) {
        auto gate = gate_;
        auto executor = io_.get_executor();
        Session* self = this;
        seams_.gpu->on_queue_lost([gate, executor, self](hsa::Handle queue, hsa::Va address) {
            std::lock_guard<std::mutex> hold(gate->lock);
            if (!gate->open) {
                return;
            }
            if (gate->lost.size() < gate->lost.capacity()) {
                gate->lost.emplace_back(queue, address);
            }
            // On the loop thread (inside a revoke) the session drains right afterwards.
            if (!executor.running_in_this_thread()) {
                boost::asio::post(executor, [gate, self] {
                    {
                        std::lock_guard<std::mutex> check(gate->lock);
                        if (!gate->open) {
                            return;
                        }
                    }
                    self->drain_lost_queues();
                });
            }
        });
    }
}

Session::~Session() {
    {
        std::lock_guard<std::mutex> hold(gate_->lock);
        gate_->open = false;
    }
    revoke_all(true);
    if (seams_.gpu != nullptr) {
        seams_.gpu->on_queue_lost({});
    }
}

uint32_t Session::max_in_flight() const noexcept {
    return std::min(quotas_.max_in_flight, ring_slots_ - 1);
}

uint64_t Session::supported_features() const noexcept {
    uint64_t f = XENHSA_FEATURE_INDIRECT;
    if (seams_.sharer != nullptr) {
        f |= XENHSA_FEATURE_LEND;
    }
    if (seams_.gpu != nullptr) {
        f |= XENHSA_FEATURE_GPU | XENHSA_FEATURE_WAIT_CANCEL;
        if (seams_.gpu->supports_queue_type(XENHSA_QUEUE_SDMA)) {
            f |= XENHSA_FEATURE_SDMA;
        }
    }
    return f & allowed_features_;
}

uint64_t Session::total_handles() const noexcept {
    const uint64_t gpu = seams_.gpu != nullptr ? seams_.gpu->stats().handles : 0;
    return map_revoke_.handles() + gpu;
}

bool Session::handles_full() const noexcept { return total_handles() >= quotas_.max_handles; }

uint32_t Session::gate_check(uint32_t cmd) const noexcept {
    if (state_ != State::connected) {
        return XENHSA_STATUS_BAD_STATE;
    }
    uint64_t needs = 0;
    switch (cmd) {
        case XENHSA_CMD_LEND:
            needs = XENHSA_FEATURE_LEND;
            break;
        case XENHSA_CMD_EVENT_WAIT_CANCEL:
            needs = XENHSA_FEATURE_WAIT_CANCEL;
            break;
        case XENHSA_CMD_HELLO:
        case XENHSA_CMD_QUERY:
        case XENHSA_CMD_MAP:
        case XENHSA_CMD_UNMAP:
            break;
        default:
            needs = XENHSA_FEATURE_GPU;
            break;
    }
    return (features_ & needs) == needs ? XENHSA_STATUS_OK : XENHSA_STATUS_UNSUPPORTED;
}

void Session::handle(const xenhsa_req_slot& copy, ReplySink& sink) noexcept {
    const uint32_t cmd = copy.hdr.cmd;
    const uint32_t seqno = copy.hdr.seqno;
    try {
        const uint32_t syntactic = xenhsa_check_req(&copy);
        if (cmd == XENHSA_CMD_HELLO) {
            hello(copy, syntactic, sink);
            return;
        }
        if (syntactic != XENHSA_STATUS_OK) {
            sink.reply(make_reply(cmd, seqno, syntactic));
            return;
        }
        if (auto reply = dispatch(copy, sink)) {
            sink.reply(*reply);
        }
    } catch (const std::bad_alloc&) {
        sink.reply(make_reply(cmd, seqno, XENHSA_STATUS_NO_MEMORY));
    } catch (...) {
        sink.reply(make_reply(cmd, seqno, XENHSA_STATUS_DEVICE));
    }
}

Session::Reply_ Session::dispatch(const xenhsa_req_slot& copy, ReplySink& sink) {
    using proto::payload_as;
    const uint32_t cmd = copy.hdr.cmd;
    const uint32_t seqno = copy.hdr.seqno;
    const uint32_t gated = gate_check(cmd);
    if (gated != XENHSA_STATUS_OK) {
        return make_reply(cmd, seqno, gated);
    }
    switch (cmd) {
        case XENHSA_CMD_QUERY:
            return topology_.query(payload_as<xenhsa_query_req>(copy), seqno);
        case XENHSA_CMD_MAP:
            return map(payload_as<xenhsa_map_req>(copy), seqno);
        case XENHSA_CMD_UNMAP:
            return unmap(payload_as<xenhsa_handle_req>(copy), seqno);
        case XENHSA_CMD_LEND:
            return lend(payload_as<xenhsa_lend_req>(copy), seqno);
        case XENHSA_CMD_PIN:
            return pin(payload_as<xenhsa_pin_req>(copy), seqno);
        case XENHSA_CMD_UNPIN:
            return unpin(payload_as<xenhsa_handle_req>(copy), seqno);
        case XENHSA_CMD_MAP_TO_GPU:
            return map_to_gpu(payload_as<xenhsa_map_to_gpu_req>(copy), seqno);
        case XENHSA_CMD_UNMAP_FROM_GPU:
            return unmap_from_gpu(payload_as<xenhsa_handle_req>(copy), seqno);
        case XENHSA_CMD_ALLOC:
            return alloc(payload_as<xenhsa_alloc_req>(copy), seqno);
        case XENHSA_CMD_FREE:
            return free(payload_as<xenhsa_handle_req>(copy), seqno);
        case XENHSA_CMD_QUEUE_CREATE:
            return queue_create(payload_as<xenhsa_queue_create_req>(copy), seqno);
        case XENHSA_CMD_QUEUE_DESTROY:
            return queue_destroy(payload_as<xenhsa_handle_req>(copy), seqno);
        case XENHSA_CMD_EVENT_CREATE:
            return event_create(payload_as<xenhsa_event_create_req>(copy), seqno);
        case XENHSA_CMD_EVENT_DESTROY:
        case XENHSA_CMD_EVENT_SET:
        case XENHSA_CMD_EVENT_RESET:
            return event_op(cmd, payload_as<xenhsa_handle_req>(copy), seqno);
        case XENHSA_CMD_EVENT_WAIT:
            return event_wait(payload_as<xenhsa_event_wait_req>(copy), seqno);
        case XENHSA_CMD_EVENT_WAIT_CANCEL:
            return event_wait_cancel(payload_as<xenhsa_event_wait_cancel_req>(copy), seqno, sink);
        default:
            return make_reply(cmd, seqno, XENHSA_STATUS_BAD_COMMAND);
    }
}

bool Session::revoke_handle(hsa::Handle handle) noexcept {
    const bool revoked = map_revoke_.revoke_handle(handle);
    drain_lost_queues();  // the queues the revoke took
    return revoked;
}

void Session::revoke_all(bool session_end) noexcept {
    if (session_end) {
        // Pending waits end without a response; their completions find nothing.
        ending_ = true;
        waits_.clear();
    }
    // §5.20: queues, events, GPU mappings, queue memory, other memory (with the
    // connection up, the guest learns that its queues are gone) ...
    if (seams_.gpu != nullptr) {
        seams_.gpu->teardown();
    }
    drain_lost_queues();
    // ... then grant unmaps and unsharing (the GPU half is gone already) ...
    map_revoke_.revoke_all(session_end);
    // ... and the allocations' VA ranges last.
    window_.release_all(RangeKind::alloc);
}

uint32_t Session::enforce_quotas(const Quotas& quotas) noexcept {
    quotas_ = quotas;
    quotas_.max_handles = std::min(quotas.max_handles, handle_capacity_);
    if (seams_.gpu != nullptr) {
        seams_.gpu->set_limits(gpu_limits(quotas_, ring_slots_));
    }
    const uint32_t revoked =
        map_revoke_.revoke_over_quota(quotas_.max_map_pages, quotas_.max_lend_pages);
    drain_lost_queues();  // the queues the revokes took
    return revoked;
}

Stats Session::stats() const noexcept {
    Stats s;
    s.mapped_pages = map_revoke_.mapped_pages();
    s.lent_pages = map_revoke_.lent_pages();
    s.handles = total_handles();
    if (seams_.gpu != nullptr) {
        const hsa::SessionStats gpu = seams_.gpu->stats();
        s.pinned_pages = gpu.pinned_pages;
        s.queues = gpu.queues;
        s.events = gpu.events;
    }
    s.doorbells_forwarded = doorbells_forwarded_;
    s.doorbell_polls = doorbell_polls_;
    return s;
}

bool Session::has_queues() const noexcept {
    return seams_.gpu != nullptr && seams_.gpu->has_queues();
}

bool Session::range_held(uint64_t va, uint64_t size) const noexcept {
    return seams_.gpu != nullptr && seams_.gpu->range_held(va, size);
}

void Session::drain_lost_queues() noexcept {
    {
        std::lock_guard<std::mutex> hold(gate_->lock);
        gate_->lost.swap(gate_->draining);  // both allocated once: no allocation
    }
    // GpuSession reports each queue once. Address 0 is a queue it destroyed (revoke,
    // teardown); a fault's queue the guest destroyed meanwhile is not news to the guest.
    for (const auto& [queue, address] : gate_->draining) {
        if (!ending_ && (address == 0 || seams_.gpu->queue_live(queue))) {
            (void)notify_.post(NotifyProducer::gpu_fault(queue, address));
        }
    }
    gate_->draining.clear();
}

}  // namespace xenhsa::backend::core
