// The guest's checks of a response (protocol 3.5, 3.7): the header against the command
// sent with that seqno, then the payload against the request itself. The backend is a
// peer and may write anything; any failed check means it is broken.
#ifndef XENHSA_FRONTEND_RESPONSE_CHECK_HPP
#define XENHSA_FRONTEND_RESPONSE_CHECK_HPP

#include <xenhsa/proto.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

namespace xenhsa::frontend {

// A payload as it went out or came in: the bytes and their length.
struct Payload {
    uint32_t len = 0;
    std::array<std::byte, XENHSA_SLOT_PAYLOAD_MAX> bytes{};

    static Payload of(std::span<const std::byte> data) noexcept {
        Payload p;
        p.len = static_cast<uint32_t>(std::min<std::size_t>(data.size(), p.bytes.size()));
        std::memcpy(p.bytes.data(), data.data(), p.len);
        return p;
    }
    template <class Wire>
    static Payload of_wire(const Wire& wire) noexcept {
        static_assert(sizeof(Wire) <= XENHSA_SLOT_PAYLOAD_MAX);
        return of(std::as_bytes(std::span(&wire, 1)));
    }
    // The bytes as a wire struct (by value; missing bytes read as zero).
    template <class Wire>
    [[nodiscard]] Wire as() const noexcept {
        static_assert(sizeof(Wire) <= XENHSA_SLOT_PAYLOAD_MAX);
        Wire out;
        std::memcpy(&out, bytes.data(), sizeof out);
        return out;
    }
};

// What the guest sent with one seqno.
struct SentRequest {
    uint32_t cmd = 0;
    Payload payload;
    // The request passes xenhsa_check_req (false only for raw slots a hostile guest
    // sends): a backend must never answer an invalid request OK.
    bool valid = true;
};

// A response that passed check_response.
struct Reply {
    uint32_t status = XENHSA_STATUS_OK;
    Payload payload;
};

// XENHSA_STATUS_OK when `rsp` (a private copy) is an acceptable answer to `sent`, else the
// status of the first failed check. Beyond validate.h it checks: the version HELLO
// chose lies in the request's range; a HELLO BAD_ADDRESS proposal is a valid range of the
// asked size above the floor, or absent (all zero); MAP/PIN handles are nonzero;
// MAP_TO_GPU's gpu_va is a page-aligned VA; ALLOC's range is valid and is the asked VA
// when one was asked; EVENT_CREATE's pad is zero, its handle nonzero and its mailbox 0 or
// a valid pointer; EVENT_WAIT's pad is zero and its mask names only fired events below
// count (all of them with WAIT_ALL). For a
// request with an unknown command (a hostile raw slot) the only acceptable answer is an
// error status without payload.
[[nodiscard]] uint32_t check_response(const xenhsa_rsp_slot& rsp, const SentRequest& sent) noexcept;

}  // namespace xenhsa::frontend

#endif
