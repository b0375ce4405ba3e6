#include <algorithm>
#include <xenhsa/backend/core/spurious_events.hpp>

namespace xenhsa::backend::core {

SpuriousEventThrottle::SpuriousEventThrottle(const SpuriousEventPolicy& policy) noexcept
    : policy_(policy) {
    policy_.delay_min = std::max(policy_.delay_min, std::chrono::microseconds(1));
    policy_.delay_max = std::max(policy_.delay_max, policy_.delay_min);
}

std::chrono::microseconds SpuriousEventThrottle::wakeup(bool work) noexcept {
    if (work) {
        in_a_row_ = 0;
        return std::chrono::microseconds(0);
    }
    if (in_a_row_ != SpuriousEventPolicy::kNever) {
        ++in_a_row_;
    }
    if (policy_.free_wakeups == SpuriousEventPolicy::kNever || in_a_row_ <= policy_.free_wakeups) {
        return std::chrono::microseconds(0);
    }
    ++throttled_;
    // delay_min << steps, without overflowing: doubling stops at delay_max.
    auto delay = policy_.delay_min;
    for (uint32_t steps = in_a_row_ - policy_.free_wakeups - 1; steps != 0; --steps) {
        if (delay > policy_.delay_max / 2) {
            return policy_.delay_max;
        }
        delay *= 2;
    }
    return delay;
}

}  // namespace xenhsa::backend::core
