// The guest's end of the request/response ring (frontend-proto/ring.h).
#ifndef XENHSA_FRONTEND_FRONT_RING_HPP
#define XENHSA_FRONTEND_FRONT_RING_HPP

#include <xenhsa/proto.h>

#include <cstddef>
#include <optional>
#include <span>
#include <xenhsa/frontend/result.hpp>

namespace xenhsa::frontend {

// Owns the private indices of a ring whose pages the guest granted. The backend may
// write anything into the shared pages: responses are copied out once and checked, and
// a response index that runs ahead of the requests marks the backend as misbehaving.
class FrontRing {
public:
    // `pages` is the whole ring (XENHSA_RING_BYTES(order) bytes); its header is reset.
    FrontRing(std::span<std::byte> pages, uint32_t order);

    [[nodiscard]] uint32_t slots() const noexcept { return slots_; }
    // The request producer index published last.
    [[nodiscard]] uint32_t published() const noexcept { return req_published_; }
    // Requests pushed whose responses have not been popped yet.
    [[nodiscard]] uint32_t outstanding() const noexcept { return req_prod_pvt_ - rsp_cons_; }

    // Writes a request into the next free slot; the backend sees it after publish().
    // Fails with no_buffer_space when every slot is outstanding, message_size when the
    // payload does not fit a slot.
    Result<void> push(uint32_t cmd, uint32_t seqno, std::span<const std::byte> payload);

    // Writes raw slot bytes: how a hostile or fuzzing frontend sends malformed requests.
    Result<void> push_raw(const xenhsa_req_slot& slot);

    // Publishes pushed requests; true when the backend asked to be notified.
    bool publish() noexcept;

    // The next response, copied out of the ring once; nullopt when there is none.
    // Fails with protocol_error once the backend publishes more responses than requests.
    Result<std::optional<xenhsa_rsp_slot>> pop();

    // Whether the backend published responses not popped yet (one load, for polling).
    [[nodiscard]] bool responses_waiting() const noexcept;

    // Before sleeping: arms rsp_event; true when responses arrived meanwhile.
    bool final_check() noexcept;

    // Hostile hook: publish an arbitrary request producer index.
    void force_req_prod(uint32_t value) noexcept;

private:
    xenhsa_sring* shared() const noexcept;
    std::byte* slot(uint32_t index) const noexcept;

    std::span<std::byte> pages_;
    uint32_t slots_;
    uint32_t req_prod_pvt_ = 0;   // pushed
    uint32_t req_published_ = 0;  // published
    uint32_t rsp_cons_ = 0;
    bool peer_broken_ = false;
};

}  // namespace xenhsa::frontend

#endif
