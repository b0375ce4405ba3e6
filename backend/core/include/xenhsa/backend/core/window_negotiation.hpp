// HELLO's VA-window negotiation (docs/protocol.md §5.1) on the worker's side: propose a
// window that is free here and reserve it, or reserve exactly the window the guest asks
// for. At most one proposal is held at a time; each new proposal lies past the previous
// one, so a guest that could not use a proposal is not offered it again.
#ifndef XENHSA_BACKEND_CORE_WINDOW_NEGOTIATION_HPP
#define XENHSA_BACKEND_CORE_WINDOW_NEGOTIATION_HPP

#include <cstdint>
#include <xenhsa/backend/core/va_reservation.hpp>

namespace xenhsa::backend::core {

class WindowNegotiation {
public:
    // Where proposals start: high enough to miss a guest's usual heap and mmap areas and
    // the sanitizers' shadow memory.
    static constexpr uint64_t kDefaultProposalBase = 0x200000000000ull;  // 32 TiB

    explicit WindowNegotiation(uint64_t proposal_base = kDefaultProposalBase) noexcept
        : hint_(proposal_base) {}

    // A new proposal of `size` bytes, reserved; replaces the one held. ENOMEM when no
    // free range exists.
    Result<const VaReservation*> propose(uint64_t size) noexcept;
    // Exactly [base, base + size): the held proposal if it is that window, otherwise a
    // fresh MAP_FIXED_NOREPLACE reservation (after dropping a held proposal that
    // overlaps it). EEXIST when the range is in use here. On success the caller owns
    // the window and no proposal is held any more.
    Result<VaReservation> take(uint64_t base, uint64_t size) noexcept;
    // Drops the held proposal (a later HELLO succeeded, or the session ends).
    void drop() noexcept { proposal_.reset(); }

    [[nodiscard]] const VaReservation& proposal() const noexcept { return proposal_; }

private:
    uint64_t hint_;
    VaReservation proposal_;
};

}  // namespace xenhsa::backend::core

#endif
