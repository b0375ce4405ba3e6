// One response, built in private memory and zero-initialised: header fields, the exact
// payload length (docs/protocol.md §3.5) and zeroes everywhere else. The ring writes it
// as a whole slot with xenhsa_encode_rsp.
#ifndef XENHSA_BACKEND_CORE_REPLY_HPP
#define XENHSA_BACKEND_CORE_REPLY_HPP

#include <xenhsa/proto/ring.h>
#include <xenhsa/proto/status.h>
#include <xenhsa/proto/validate.h>

#include <array>
#include <cstddef>
#include <cstring>

namespace xenhsa::backend::core {

struct Reply {
    uint32_t seqno = 0;
    uint32_t status = XENHSA_STATUS_OK;
    uint32_t len = 0;
    std::array<std::byte, XENHSA_SLOT_PAYLOAD_MAX> payload{};
};

// A response without payload data: len is the command's response size for OK and for
// every HELLO (payload zero), else 0.
inline Reply make_reply(uint32_t cmd, uint32_t seqno, uint32_t status) noexcept {
    Reply r;
    r.seqno = seqno;
    r.status = status;
    const uint32_t full = xenhsa_rsp_len(cmd);
    const bool with_payload = status == XENHSA_STATUS_OK || cmd == XENHSA_CMD_HELLO;
    r.len = with_payload && full != XENHSA_LEN_UNKNOWN ? full : 0;
    return r;
}

// An OK response (or any HELLO response) carrying `wire`, the command's response struct.
template <class Wire>
Reply make_reply(uint32_t cmd, uint32_t seqno, uint32_t status, const Wire& wire) noexcept {
    static_assert(sizeof(Wire) <= XENHSA_SLOT_PAYLOAD_MAX);
    Reply r = make_reply(cmd, seqno, status);
    if (r.len == sizeof(Wire)) {
        std::memcpy(r.payload.data(), &wire, sizeof(Wire));
    }
    return r;
}

// Where responses go: the ring (RingServer), or a test's recorder.
class ReplySink {
public:
    virtual void reply(const Reply& reply) noexcept = 0;

protected:
    ~ReplySink() = default;
};

}  // namespace xenhsa::backend::core

#endif
