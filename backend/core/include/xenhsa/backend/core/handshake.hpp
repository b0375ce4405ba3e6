// HELLO (docs/protocol.md §5.1): the connection state of one guest (fresh, negotiating,
// connected), the versions, the features granted and the VA-window negotiation. Once
// connected, the window and the features are the guest's for the rest of the connection.
#ifndef XENHSA_BACKEND_CORE_HANDSHAKE_HPP
#define XENHSA_BACKEND_CORE_HANDSHAKE_HPP

#include <xenhsa/proto/ring.h>

#include <cstdint>
#include <xenhsa/backend/core/guest_terms.hpp>
#include <xenhsa/backend/core/reply.hpp>
#include <xenhsa/backend/core/va_window.hpp>
#include <xenhsa/backend/core/window_negotiation.hpp>

namespace xenhsa::backend::core {

class Handshake {
public:
    enum class State : uint8_t { fresh, negotiating, connected };

    explicit Handshake(uint64_t proposal_base) : negotiation_(proposal_base) {}

    // Answers the HELLO in `copy` (whose syntactic check gave `syntactic`) through
    // `sink`. On success the guest is connected: `window` and `terms.features` (the
    // request's within `supported`) are set.
    void hello(const xenhsa_req_slot& copy, uint32_t syntactic, uint64_t supported,
               GuestTerms& terms, VaWindow& window, ReplySink& sink);

    [[nodiscard]] State state() const noexcept { return state_; }

private:
    WindowNegotiation negotiation_;
    State state_ = State::fresh;
    uint32_t hellos_ = 0;
};

}  // namespace xenhsa::backend::core

#endif
