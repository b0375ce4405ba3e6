#include <algorithm>
#include <new>
#include <xenhsa/backend/core/guest_requests.hpp>

namespace xenhsa::backend::core {
namespace {

uint32_t backlog_capacity(const Quotas& q) noexcept {
    // At most one record per handle (§6); twice that leaves room for handles that were
    // released and reissued while the guest did not consume.
    return 2 * q.max_handles + 64;
}

}  // namespace

GuestRequests::GuestRequests(boost::asio::io_context& io, const RequestSeams& seams,
                             const RequestOptions& options)
    : seams_(seams),
      handle_capacity_(options.quotas.max_handles),
      allowed_features_(options.features),
      terms_{options.quotas, 0, options.ring_slots},
      handshake_(options.proposal_base),
      notify_(options.notify_page, backlog_capacity(options.quotas)),
      map_revoke_(MapRevokeSeams{seams.guest, seams.mapper, seams.sharer, seams.gpu}, window_,
                  notify_, options.quotas.max_handles),
      topology_(seams.gpu != nullptr ? &seams.gpu->device() : nullptr),
      handles_(terms_, map_revoke_, seams.gpu),
      handoff_(std::make_shared<GpuHandoff>()),
      memory_(terms_, handles_, window_, map_revoke_, seams.gpu),
      gpu_(io, seams.gpu,
           GpuCommandParts{terms_, handles_, window_, map_revoke_, topology_, notify_,
                           options.doorbell_page},
           handoff_, options.quotas.max_queues),
      waits_(io, terms_, seams.gpu, handoff_) {}

GuestRequests::~GuestRequests() {
    handoff_->close();
    revoke_all(true);
}

uint64_t GuestRequests::supported_features() const noexcept {
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

uint32_t GuestRequests::gate_check(uint32_t cmd) const noexcept {
    if (handshake_.state() != State::connected) {
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
    return terms_.granted(needs) ? XENHSA_STATUS_OK : XENHSA_STATUS_UNSUPPORTED;
}

void GuestRequests::handle(const xenhsa_req_slot& copy, ReplySink& sink) noexcept {
    const uint32_t cmd = copy.hdr.cmd;
    const uint32_t seqno = copy.hdr.seqno;
    try {
        const uint32_t syntactic = xenhsa_check_req(&copy);
        if (cmd == XENHSA_CMD_HELLO) {
            handshake_.hello(copy, syntactic, supported_features(), terms_, window_, sink);
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

std::optional<Reply> GuestRequests::dispatch(const xenhsa_req_slot& copy, ReplySink& sink) {
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
            return memory_.map(payload_as<xenhsa_map_req>(copy), seqno);
        case XENHSA_CMD_UNMAP:
            return memory_.unmap(payload_as<xenhsa_handle_req>(copy), seqno);
        case XENHSA_CMD_LEND:
            return memory_.lend(payload_as<xenhsa_lend_req>(copy), seqno);
        case XENHSA_CMD_PIN:
            return gpu_.pin(payload_as<xenhsa_pin_req>(copy), seqno);
        case XENHSA_CMD_UNPIN:
            return gpu_.unpin(payload_as<xenhsa_handle_req>(copy), seqno);
        case XENHSA_CMD_MAP_TO_GPU:
            return gpu_.map_to_gpu(payload_as<xenhsa_map_to_gpu_req>(copy), seqno);
        case XENHSA_CMD_UNMAP_FROM_GPU:
            return gpu_.unmap_from_gpu(payload_as<xenhsa_handle_req>(copy), seqno);
        case XENHSA_CMD_ALLOC:
            return gpu_.alloc(payload_as<xenhsa_alloc_req>(copy), seqno);
        case XENHSA_CMD_FREE:
            return gpu_.free(payload_as<xenhsa_handle_req>(copy), seqno);
        case XENHSA_CMD_QUEUE_CREATE:
            return gpu_.queue_create(payload_as<xenhsa_queue_create_req>(copy), seqno);
        case XENHSA_CMD_QUEUE_DESTROY:
            return gpu_.queue_destroy(payload_as<xenhsa_handle_req>(copy), seqno);
        case XENHSA_CMD_EVENT_CREATE:
            return gpu_.event_create(payload_as<xenhsa_event_create_req>(copy), seqno);
        case XENHSA_CMD_EVENT_DESTROY:
        case XENHSA_CMD_EVENT_SET:
        case XENHSA_CMD_EVENT_RESET:
            return gpu_.event_op(cmd, payload_as<xenhsa_handle_req>(copy), seqno);
        case XENHSA_CMD_EVENT_WAIT:
            return waits_.wait(payload_as<xenhsa_event_wait_req>(copy), seqno);
        case XENHSA_CMD_EVENT_WAIT_CANCEL:
            return waits_.cancel(payload_as<xenhsa_event_wait_cancel_req>(copy), seqno, sink);
        default:
            return make_reply(cmd, seqno, XENHSA_STATUS_BAD_COMMAND);
    }
}

bool GuestRequests::revoke_handle(hsa::Handle handle) noexcept {
    const bool revoked = map_revoke_.revoke_handle(handle);
    gpu_.drain_lost_queues();  // the queues the revoke took
    return revoked;
}

void GuestRequests::revoke_all(bool session_end) noexcept {
    if (session_end) {
        // Pending waits end without a response; their completions find nothing.
        waits_.drop_all();
        gpu_.stop_notifying();
    }
    // §5.20: queues, events, GPU mappings, queue memory, other memory (with the
    // connection up, the guest learns that its queues are gone) ...
    if (seams_.gpu != nullptr) {
        seams_.gpu->teardown();
    }
    gpu_.drain_lost_queues();
    // ... then grant unmaps and unsharing (the GPU half is gone already) ...
    map_revoke_.revoke_all(session_end);
    // ... and the allocations' VA ranges last.
    window_.release_all(RangeKind::alloc);
}

uint32_t GuestRequests::enforce_quotas(const Quotas& quotas) noexcept {
    terms_.quotas = quotas;
    terms_.quotas.max_handles = std::min(quotas.max_handles, handle_capacity_);
    if (seams_.gpu != nullptr) {
        seams_.gpu->set_limits(gpu_limits(terms_.quotas, terms_.ring_slots));
    }
    const uint32_t revoked =
        map_revoke_.revoke_over_quota(terms_.quotas.max_map_pages, terms_.quotas.max_lend_pages);
    gpu_.drain_lost_queues();  // the queues the revokes took
    return revoked;
}

Stats GuestRequests::stats() const noexcept {
    Stats s;
    s.mapped_pages = map_revoke_.mapped_pages();
    s.lent_pages = map_revoke_.lent_pages();
    s.handles = handles_.total();
    if (seams_.gpu != nullptr) {
        const hsa::GpuStats gpu = seams_.gpu->stats();
        s.pinned_pages = gpu.pinned_pages;
        s.queues = gpu.queues;
        s.events = gpu.events;
    }
    s.doorbells_forwarded = gpu_.doorbells_forwarded();
    s.doorbell_polls = gpu_.doorbell_polls();
    return s;
}

}  // namespace xenhsa::backend::core
