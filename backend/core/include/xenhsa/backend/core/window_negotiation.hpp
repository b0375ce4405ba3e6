// HELLO's VA-window negotiation (docs/protocol.md §5.1) on the worker's side: propose a
// window that is free here and reserve it, or reserve exactly the window the guest asks
// for. At most one proposal is held at a time, and a proposal never overlaps one made
// before in the session, so a guest that could not use a proposal is not offered it again.
//
// A proposal lies at a random place (getrandom) in [proposal_base, proposal_base +
// kProposalSpan): it tells the guest that one range is free here, not where the worker's
// own mappings are, as the first free range past a fixed base would to a probing guest.
#ifndef XENHSA_BACKEND_CORE_WINDOW_NEGOTIATION_HPP
#define XENHSA_BACKEND_CORE_WINDOW_NEGOTIATION_HPP

#include <xenhsa/proto/hello.h>

#include <array>
#include <cstdint>
#include <xenhsa/backend/core/va_reservation.hpp>

namespace xenhsa::backend::core {

class WindowNegotiation {
public:
#if defined(__SANITIZE_THREAD__)
    // ThreadSanitizer (x86_64) keeps its shadow and meta memory from 1 TiB up to the PIE
    // range and dies on an application mapping there: its own low range is below 512 GiB.
    static constexpr uint64_t kDefaultProposalBase = 1ull << 32;  // 4 GiB
    static constexpr uint64_t kProposalSpan = 0x7000000000ull;    // 448 GiB
#else
    // Where proposals start: high enough to miss a guest's usual heap and mmap areas and
    // AddressSanitizer's shadow memory.
    static constexpr uint64_t kDefaultProposalBase = 0x200000000000ull;  // 32 TiB
    static constexpr uint64_t kProposalSpan = 0x200000000000ull;         // 32 TiB
#endif
    static constexpr uint64_t kProposalAlign = 2ull << 20;  // 2 MiB

    explicit WindowNegotiation(uint64_t proposal_base = kDefaultProposalBase) noexcept
        : base_(proposal_base < XENHSA_VA_WINDOW_FLOOR ? XENHSA_VA_WINDOW_FLOOR : proposal_base) {}

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
    struct Range {
        uint64_t base = 0;
        uint64_t end = 0;
    };

    // A random free window not overlapping an earlier proposal, or an empty reservation.
    VaReservation random_free(uint64_t size) noexcept;
    [[nodiscard]] bool offered(uint64_t base, uint64_t size) const noexcept;
    void remember(const VaReservation& proposal) noexcept;

    uint64_t base_;
    VaReservation proposal_;
    // Every proposal of the session: one per HELLO, so at most XENHSA_HELLO_MAX_ATTEMPTS.
    std::array<Range, XENHSA_HELLO_MAX_ATTEMPTS> offered_{};
    uint32_t offers_ = 0;
};

}  // namespace xenhsa::backend::core

#endif
