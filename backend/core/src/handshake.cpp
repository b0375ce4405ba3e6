// HELLO, step by step as docs/protocol.md §5.1 orders it.
#include <xenhsa/proto.h>

#include <xenhsa/backend/core/handshake.hpp>

namespace xenhsa::backend::core {

void Handshake::hello(const xenhsa_req_slot& copy, uint32_t syntactic, uint64_t supported,
                      GuestTerms& terms, VaWindow& window, ReplySink& sink) {
    const uint32_t seqno = copy.hdr.seqno;
    xenhsa_hello_rsp rsp{};  // fields without a meaning for the status stay zero
    const auto answer = [&](uint32_t status) {
        sink.reply(make_reply(XENHSA_CMD_HELLO, seqno, status, rsp));
    };
    // Every HELLO before CONNECTED counts, rejected ones too.
    if (state_ != State::connected && hellos_ <= XENHSA_HELLO_MAX_ATTEMPTS) {
        ++hellos_;
    }
    if (syntactic != XENHSA_STATUS_OK) {
        answer(syntactic);
        return;
    }
    const auto req = proto::payload_as<xenhsa_hello_req>(copy);
    if (state_ == State::connected || hellos_ > XENHSA_HELLO_MAX_ATTEMPTS) {
        answer(XENHSA_STATUS_BAD_STATE);
        return;
    }
    // This backend speaks version 1 only.
    if (req.version_min > XENHSA_PROTO_VERSION || req.version_max < XENHSA_PROTO_VERSION) {
        rsp.version = XENHSA_PROTO_VERSION;
        answer(XENHSA_STATUS_VERSION);
        return;
    }
    const auto fill_ok = [&](uint64_t base, uint64_t size) {
        rsp.version = XENHSA_PROTO_VERSION;
        rsp.ring_slots = terms.ring_slots;
        rsp.features = req.features & supported;
        rsp.va_base = base;
        rsp.va_size = size;
        rsp.max_map_pages = terms.quotas.max_map_pages;
        rsp.max_lend_pages = terms.quotas.max_lend_pages;
        rsp.max_handles = terms.quotas.max_handles;
        rsp.max_in_flight = terms.max_in_flight();
    };
    if (req.va_base == 0) {
        auto proposal = negotiation_.propose(req.va_size);
        if (!proposal) {
            answer(XENHSA_STATUS_NO_MEMORY);
            return;
        }
        fill_ok(proposal.value()->base(), proposal.value()->size());
        state_ = State::negotiating;
        answer(XENHSA_STATUS_OK);
        return;
    }
    auto taken = negotiation_.take(req.va_base, req.va_size);
    if (!taken) {
        // Taken here (or the kernel refused): offer another window instead.
        auto proposal = negotiation_.propose(req.va_size);
        if (!proposal) {
            answer(XENHSA_STATUS_NO_MEMORY);
            return;
        }
        rsp.va_base = proposal.value()->base();
        rsp.va_size = proposal.value()->size();
        state_ = State::negotiating;
        answer(XENHSA_STATUS_BAD_ADDRESS);
        return;
    }
    window = VaWindow(std::move(taken).value());
    negotiation_.drop();
    terms.features = req.features & supported;
    state_ = State::connected;
    fill_ok(window.base(), window.size());
    answer(XENHSA_STATUS_OK);
}

}  // namespace xenhsa::backend::core
