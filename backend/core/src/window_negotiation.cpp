#include <xenhsa/backend/core/window_negotiation.hpp>

namespace xenhsa::backend::core {

Result<const VaReservation*> WindowNegotiation::propose(uint64_t size) noexcept {
    // Reserve the new one first, so it cannot land on the one being replaced.
    auto fresh = VaReservation::anywhere(size, hint_);
    if (!fresh) {
        return fresh.error();
    }
    proposal_ = std::move(fresh).value();
    hint_ = proposal_.end();
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
