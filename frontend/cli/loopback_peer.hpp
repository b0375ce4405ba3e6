// A stand-in backend for `xenhsa-guest loopback`: it consumes the ring exactly as the
// backend must (read the producer once, reject a producer past the ring, copy each slot
// once, validate the copy, zero-filled responses) but only applies the protocol's own
// checks: every valid request is answered OK with a zeroed payload.
#ifndef XENHSA_FRONTEND_CLI_LOOPBACK_PEER_HPP
#define XENHSA_FRONTEND_CLI_LOOPBACK_PEER_HPP

#include <xenhsa/proto.h>

#include <cstddef>
#include <span>

namespace xenhsa::frontend::cli {

class LoopbackPeer {
public:
    LoopbackPeer(std::span<std::byte> pages, uint32_t order) noexcept
        : pages_(pages), slots_(XENHSA_RING_SLOTS(order)) {}

    // Serves at most `budget` requests; returns how many. A producer index past the ring
    // disconnects the peer (disconnected() turns true, nothing more is served).
    uint32_t serve(uint32_t budget) noexcept;

    [[nodiscard]] bool disconnected() const noexcept { return disconnected_; }

private:
    xenhsa_sring* shared() const noexcept { return reinterpret_cast<xenhsa_sring*>(pages_.data()); }

    std::span<std::byte> pages_;
    uint32_t slots_;
    uint32_t req_cons_ = 0;
    uint32_t rsp_prod_pvt_ = 0;
    bool disconnected_ = false;
};

}  // namespace xenhsa::frontend::cli

#endif
