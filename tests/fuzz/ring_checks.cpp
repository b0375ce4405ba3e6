// What the "ring" target asserts about the backend's answers: each synchronous answer
// (Checker), each late EVENT_WAIT answer (AsyncChecker, Rig::check_wait_answer), the
// response slots and books after every step (Rig::settled), and the notify page
// (Rig::check_notify). The invariants are listed at the top of ring_fuzz.cpp.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "fuzz_check.hpp"
#include "ring_rig.hpp"

namespace xenhsa::fuzz::ring {
namespace {

bool zero_past(const core::Reply& r) {
    for (std::size_t i = r.len; i < r.payload.size(); ++i) {
        if (r.payload[i] != std::byte{0}) {
            return false;
        }
    }
    return true;
}

uint64_t feature_needed(uint32_t cmd) {
    switch (cmd) {
        case XENHSA_CMD_HELLO:
        case XENHSA_CMD_QUERY:
        case XENHSA_CMD_MAP:
        case XENHSA_CMD_UNMAP:
            return 0;
        case XENHSA_CMD_LEND:
            return XENHSA_FEATURE_LEND;
        case XENHSA_CMD_EVENT_WAIT_CANCEL:
            return XENHSA_FEATURE_WAIT_CANCEL;
        default:
            return XENHSA_FEATURE_GPU;
    }
}

}  // namespace

void Checker::handle(const xenhsa_req_slot& copy, core::ReplySink& ring) noexcept {
    (void)ring;  // answers go through Rig::forward to the same ring
    Current c{copy, xenhsa_check_req(&copy),
              rig_.requests().state() == core::GuestRequests::State::connected,
              rig_.requests().features()};
    current_ = &c;
    ++rig_.handled_in_pass;
    rig_.requests().handle(copy, *this);
    current_ = nullptr;
    if (c.replies == 0) {
        // Only an EVENT_WAIT the session accepted is answered later.
        XENHSA_FUZZ_CHECK(
            copy.hdr.cmd == XENHSA_CMD_EVENT_WAIT && c.syntactic == XENHSA_STATUS_OK && c.connected,
            "a consumed request got no response");
        XENHSA_FUZZ_CHECK(rig_.held().count(copy.hdr.seqno) == 0,
                          "two pending waits with one seqno");
        rig_.held()[copy.hdr.seqno] = proto::payload_as<xenhsa_event_wait_req>(copy).count;
    } else {
        XENHSA_FUZZ_CHECK(c.replies == 1, "a request answered more than once");
    }
    XENHSA_FUZZ_CHECK(rig_.requests().pending_waits() == rig_.held().size(),
                      "the session's pending waits differ from the unanswered waits");
}

void Checker::reply(const core::Reply& r) noexcept {
    XENHSA_FUZZ_CHECK(current_ != nullptr, "a synchronous response outside a request");
    Current& c = *current_;
    if (c.copy.hdr.cmd == XENHSA_CMD_EVENT_WAIT_CANCEL && r.status == XENHSA_STATUS_CANCELLED) {
        // The cancelled wait's own answer, before the cancel's.
        XENHSA_FUZZ_CHECK(c.replies == 0 && !c.cancelled_a_wait, "CANCELLED out of order");
        XENHSA_FUZZ_CHECK(
            r.seqno == proto::payload_as<xenhsa_event_wait_cancel_req>(c.copy).wait_seqno,
            "CANCELLED for another wait than the one named");
        if (tracing()) {
            std::fprintf(stderr, "ring: cancelled EVENT_WAIT seqno %u\n", r.seqno);
        }
        rig_.check_wait_answer(r);
        c.cancelled_a_wait = true;
        rig_.forward(r);
        return;
    }
    if (tracing()) {
        std::fprintf(stderr, "ring: %s seqno %u -> %s (len %u)\n", xenhsa_cmd_name(c.copy.hdr.cmd),
                     r.seqno, xenhsa_status_name(r.status), r.len);
    }
    check_own(c, r);
    ++c.replies;
    rig_.forward(r);
}

void Checker::check_own(const Current& c, const core::Reply& r) {
    const uint32_t cmd = c.copy.hdr.cmd;
    XENHSA_FUZZ_CHECK(r.seqno == c.copy.hdr.seqno, "a response with another seqno");
    XENHSA_FUZZ_CHECK(r.status < XENHSA_STATUS_COUNT_, "an undefined status");
    XENHSA_FUZZ_CHECK(zero_past(r), "response bytes past the payload are not zero");
    if (xenhsa_rsp_len(cmd) == XENHSA_LEN_UNKNOWN) {
        XENHSA_FUZZ_CHECK(r.status == XENHSA_STATUS_BAD_COMMAND && r.len == 0,
                          "an unknown command is not BAD_COMMAND without payload");
    } else {
        const xenhsa_rsp_hdr h{r.seqno, r.status, r.len, 0};
        XENHSA_FUZZ_CHECK(xenhsa_check_rsp_hdr(&h, cmd) == XENHSA_STATUS_OK,
                          "a response header the frontend must reject");
    }
    if (c.syntactic != XENHSA_STATUS_OK) {
        XENHSA_FUZZ_CHECK(r.status == c.syntactic,
                          "a malformed request not answered with "
                          "the status of its first violation");
        return;
    }
    if (cmd != XENHSA_CMD_HELLO && !c.connected) {
        XENHSA_FUZZ_CHECK(r.status == XENHSA_STATUS_BAD_STATE,
                          "a request before CONNECTED not answered BAD_STATE");
        return;
    }
    if (r.status != XENHSA_STATUS_OK) {
        return;
    }
    if (cmd == XENHSA_CMD_EVENT_WAIT_CANCEL) {
        XENHSA_FUZZ_CHECK(c.cancelled_a_wait, "a cancel answered OK without cancelling");
    }
    const uint64_t needs = feature_needed(cmd);
    XENHSA_FUZZ_CHECK((c.features & needs) == needs, "OK for a feature that was not granted");
    const auto& window = rig_.requests().window();
    const auto inside = [&](uint64_t va, uint64_t size) {
        return window.valid() && window.contains(va, size);
    };
    using proto::payload_as;
    switch (cmd) {
        case XENHSA_CMD_HELLO: {
            const auto req = payload_as<xenhsa_hello_req>(c.copy);
            const auto rsp = wire_of<xenhsa_hello_rsp>(r);
            XENHSA_FUZZ_CHECK(xenhsa_check_hello_rsp(&rsp, &req) == XENHSA_STATUS_OK,
                              "a HELLO response the frontend must reject");
            XENHSA_FUZZ_CHECK(rsp.ring_slots == rig_.slots(), "HELLO: ring_slots");
            break;
        }
        case XENHSA_CMD_QUERY: {
            const auto req = payload_as<xenhsa_query_req>(c.copy);
            const auto rsp = wire_of<xenhsa_query_rsp>(r);
            XENHSA_FUZZ_CHECK(xenhsa_check_query_rsp(&rsp, &req) == XENHSA_STATUS_OK,
                              "a QUERY response the frontend must reject");
            break;
        }
        case XENHSA_CMD_MAP: {
            const auto req = payload_as<xenhsa_map_req>(c.copy);
            XENHSA_FUZZ_CHECK((req.flags & XENHSA_MAP_INDIRECT) == 0 ||
                                  (c.features & XENHSA_FEATURE_INDIRECT) != 0,
                              "an indirect MAP without the feature");
            XENHSA_FUZZ_CHECK(inside(req.va, uint64_t{req.npages} * XENHSA_PAGE_SIZE),
                              "a MAP outside the window");
            rig_.record_handle(wire_of<xenhsa_handle_rsp>(r).handle);
            break;
        }
        case XENHSA_CMD_LEND: {
            const auto req = payload_as<xenhsa_lend_req>(c.copy);
            const auto rsp = wire_of<xenhsa_lend_rsp>(r);
            XENHSA_FUZZ_CHECK(xenhsa_check_lend_rsp(&rsp, &req) == XENHSA_STATUS_OK,
                              "a LEND response the frontend must reject");
            XENHSA_FUZZ_CHECK(inside(req.va, uint64_t{req.npages} * XENHSA_PAGE_SIZE),
                              "a LEND outside the window");
            rig_.record_handle(rsp.handle);
            break;
        }
        case XENHSA_CMD_PIN: {
            const auto req = payload_as<xenhsa_pin_req>(c.copy);
            XENHSA_FUZZ_CHECK(inside(req.va, req.size), "a PIN outside the window");
            rig_.record_handle(wire_of<xenhsa_handle_rsp>(r).handle);
            break;
        }
        case XENHSA_CMD_MAP_TO_GPU:
            XENHSA_FUZZ_CHECK(inside(wire_of<xenhsa_map_to_gpu_rsp>(r).gpu_va, XENHSA_PAGE_SIZE),
                              "a GPU mapping outside the window");
            break;
        case XENHSA_CMD_ALLOC: {
            const auto req = payload_as<xenhsa_alloc_req>(c.copy);
            const auto rsp = wire_of<xenhsa_alloc_rsp>(r);
            XENHSA_FUZZ_CHECK(req.va == 0 || rsp.va == req.va, "ALLOC moved a fixed address");
            XENHSA_FUZZ_CHECK(rsp.va % XENHSA_PAGE_SIZE == 0 && inside(rsp.va, req.size),
                              "an ALLOC outside the window");
            rig_.record_handle(rsp.handle);
            break;
        }
        case XENHSA_CMD_QUEUE_CREATE: {
            const auto rsp = wire_of<xenhsa_queue_create_rsp>(r);
            XENHSA_FUZZ_CHECK(xenhsa_check_queue_create_rsp(&rsp) == XENHSA_STATUS_OK,
                              "a QUEUE_CREATE response the frontend must reject");
            rig_.record_handle(rsp.handle);
            break;
        }
        case XENHSA_CMD_EVENT_CREATE: {
            const auto rsp = wire_of<xenhsa_event_create_rsp>(r);
            XENHSA_FUZZ_CHECK(rsp.pad == 0, "EVENT_CREATE: pad");
            rig_.record_handle(rsp.handle);
            break;
        }
        default:
            break;
    }
}

void AsyncChecker::reply(const core::Reply& r) noexcept {
    if (tracing()) {
        std::fprintf(stderr, "ring: late EVENT_WAIT seqno %u -> %s\n", r.seqno,
                     xenhsa_status_name(r.status));
    }
    rig_.check_wait_answer(r);
    rig_.forward(r);
}

void Rig::check_wait_answer(const core::Reply& r) {
    auto it = held_.find(r.seqno);
    XENHSA_FUZZ_CHECK(it != held_.end(), "a late answer to no pending wait");
    const uint32_t count = it->second;
    held_.erase(it);
    XENHSA_FUZZ_CHECK(zero_past(r), "wait answer bytes past the payload are not zero");
    const xenhsa_rsp_hdr h{r.seqno, r.status, r.len, 0};
    XENHSA_FUZZ_CHECK(xenhsa_check_rsp_hdr(&h, XENHSA_CMD_EVENT_WAIT) == XENHSA_STATUS_OK,
                      "a wait answer the frontend must reject");
    XENHSA_FUZZ_CHECK(r.status == XENHSA_STATUS_OK || r.status == XENHSA_STATUS_TIMEOUT ||
                          r.status == XENHSA_STATUS_CANCELLED || r.status == XENHSA_STATUS_DEVICE,
                      "a wait ended with a status waits do not have");
    if (r.status == XENHSA_STATUS_OK) {
        const auto rsp = wire_of<xenhsa_event_wait_rsp>(r);
        XENHSA_FUZZ_CHECK(rsp.pad == 0 && rsp.signaled_mask != 0 &&
                              (count >= 32 || (rsp.signaled_mask >> count) == 0),
                          "a signaled mask naming events the wait did not name");
    }
}

// After every step that may answer: the books balance, and each answer is in its slot.
void Rig::settled() {
    if (ring_->disconnected()) {
        unverified_.clear();
    } else {
        XENHSA_FUZZ_CHECK(
            static_cast<uint32_t>(ring_->req_cons() - ring_->rsp_prod()) == held_.size(),
            "consumed requests minus responses differ from the pending waits");
        XENHSA_FUZZ_CHECK(
            unverified_.size() == static_cast<uint32_t>(ring_->rsp_prod() - rsp_verified_),
            "responses in the ring differ from the answers given");
        for (const core::Reply& r : unverified_) {
            const auto* slot = reinterpret_cast<const uint8_t*>(ring_pages_.get()) +
                               xenhsa_ring_slot_offset(rsp_verified_++, slots_);
            xenhsa_rsp_hdr h;
            std::memcpy(&h, slot, sizeof h);
            XENHSA_FUZZ_CHECK(
                h.seqno == r.seqno && h.status == r.status && h.len == r.len && h.pad == 0,
                "a response slot does not hold its answer");
            XENHSA_FUZZ_CHECK(std::memcmp(slot + 16, r.payload.data(), r.payload.size()) == 0,
                              "a response slot's payload or tail differs from the answer");
        }
        if (!unverified_.empty()) {
            XENHSA_FUZZ_CHECK(xenhsa_index_load(&sring()->rsp_prod) == ring_->rsp_prod(),
                              "responses written but rsp_prod not published");
        }
        unverified_.clear();
    }
    XENHSA_FUZZ_CHECK(requests_->pending_waits() == held_.size(),
                      "the session's pending waits differ from the unanswered waits");
    if (requests_->window().valid()) {
        window_base_ = requests_->window().base();
        window_size_ = requests_->window().size();
    }
    check_notify();
}

void Rig::check_notify() {
    const uint32_t published = requests_->notify().published();
    XENHSA_FUZZ_CHECK(
        published - cons_written_ <= XENHSA_NOTIFY_SLOTS || published == published_at_cons_,
        "notify records published past the guest's consumer index");
    if (published == notify_checked_) {
        return;
    }
    XENHSA_FUZZ_CHECK(xenhsa_index_load(&notify_->prod) == published,
                      "notify records written but prod not published");
    for (uint32_t i = notify_checked_; i != published; ++i) {
        const xenhsa_notify& n = notify_->slot[i % XENHSA_NOTIFY_SLOTS];
        XENHSA_FUZZ_CHECK(
            (n.type == XENHSA_NOTIFY_REVOKED || n.type == XENHSA_NOTIFY_GPU_FAULT) && n.pad == 0,
            "a malformed notify record");
        XENHSA_FUZZ_CHECK(issued(n.handle), "a notify record naming no issued handle");
        if (n.type == XENHSA_NOTIFY_GPU_FAULT) {
            XENHSA_FUZZ_CHECK(n.arg1 == 0, "GPU_FAULT: arg1");
        }
    }
    notify_checked_ = published;
}

}  // namespace xenhsa::fuzz::ring
