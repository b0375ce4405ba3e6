#include <algorithm>
#include <xenhsa/backend/core/window_negotiation.hpp>
#include <xenhsa/hsa/os_random.hpp>

namespace xenhsa::backend::core {
namespace {

// Random candidates tried before falling back to the first free range: each fails only
// where the worker has a mapping, and the span is almost all free.
constexpr unsigned kRandomTries = 64;

}  // namespace

bool WindowNegotiation::offered(uint64_t base, uint64_t size) const noexcept {
    const uint32_t count = std::min<uint32_t>(offers_, offered_.size());
    return std::any_of(offered_.begin(), offered_.begin() + count,
                       [&](const Range& r) { return base < r.end && r.base < base + size; });
}

void WindowNegotiation::remember(const VaReservation& proposal) noexcept {
    offered_[offers_ % offered_.size()] = Range{proposal.base(), proposal.end()};
    ++offers_;
}

VaReservation WindowNegotiation::random_free(uint64_t size) noexcept {
    if (base_ >= XENHSA_VA_LIMIT || size > XENHSA_VA_LIMIT - base_) {
        return {};
    }
    const uint64_t room = std::min<uint64_t>(kProposalSpan, XENHSA_VA_LIMIT - base_ - size);
    const uint64_t slots = room / kProposalAlign + 1;
    for (unsigned i = 0; i < kRandomTries; ++i) {
        uint64_t r = 0;
        if (hsa::os_random(&r, sizeof r)) {
            return {};
        }
        const uint64_t candidate = base_ + (r % slots) * kProposalAlign;
        if (offered(candidate, size)) {
            continue;
        }
        auto reserved = VaReservation::at(candidate, size);
        if (reserved) {
            return std::move(reserved).value();
        }
    }
    return {};
}

Result<const VaReservation*> WindowNegotiation::propose(uint64_t size) noexcept {
    // Reserve the new one first, so it cannot land on the one being replaced.
    VaReservation fresh = random_free(size);
    if (!fresh) {
        // Past every earlier proposal: those stay out of reach.
        uint64_t hint = base_;
        for (uint32_t i = 0; i < std::min<uint32_t>(offers_, offered_.size()); ++i) {
            hint = std::max(hint, offered_[i].end);
        }
        auto first_free = VaReservation::anywhere(size, hint);
        if (!first_free) {
            return first_free.error();
        }
        fresh = std::move(first_free).value();
    }
    proposal_ = std::move(fresh);
    remember(proposal_);
    return &proposal_;
}

Result<VaReservation> WindowNegotiation::take(uint64_t base, uint64_t size) noexcept {
    if (proposal_ && proposal_.base() == base && proposal_.size() == size) {
        return std::move(proposal_);
    }
    if (proposal_ && base < proposal_.end() && proposal_.base() < base + size) {
        proposal_.reset();
    }
    auto exact = VaReservation::at(base, size);
    if (exact) {
        proposal_.reset();
    }
    return exact;
}

}  // namespace xenhsa::backend::core
