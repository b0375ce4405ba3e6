// Accounting of a guest's event-channel kicks that bring no work, as Linux's backends do
// since XSA-332 (late EOI, xen_irq_lateeoi with XEN_EOI_FLAG_SPURIOUS): a wake-up after
// which no new request was consumed and the GPU took no packet (on a GPU that cannot
// tell, no doorbell moved) is spurious. The first `free_wakeups` in a
// row cost nothing; after that the channel is re-armed (unmasked) only after a delay that
// starts at `delay_min` and doubles up to `delay_max`. Any real work resets the count.
//
// A fair guest kicks only to publish a request or a doorbell, so its wake-ups find work
// (at worst one in a row finds it taken already by a pass that ran meanwhile) and it is
// never slowed down; a guest that kicks in a loop without work costs one wake-up per
// `delay_max` instead of a core.
#ifndef XENHSA_BACKEND_CORE_SPURIOUS_EVENTS_HPP
#define XENHSA_BACKEND_CORE_SPURIOUS_EVENTS_HPP

#include <chrono>
#include <cstdint>
#include <limits>

namespace xenhsa::backend::core {

struct SpuriousEventPolicy {
    static constexpr uint32_t kNever = std::numeric_limits<uint32_t>::max();  // no throttling

    uint32_t free_wakeups = 8;  // spurious wake-ups in a row without a delay
    std::chrono::microseconds delay_min{1000};
    std::chrono::microseconds delay_max{128'000};
};

class SpuriousEventThrottle {
public:
    explicit SpuriousEventThrottle(const SpuriousEventPolicy& policy = {}) noexcept;

    // A wake-up by the event channel is over; `work` says whether a request was consumed
    // or the GPU took packets since the previous one (GuestCore). Returns how long to keep the
    // channel masked before unmasking it (zero: at once).
    std::chrono::microseconds wakeup(bool work) noexcept;

    [[nodiscard]] uint32_t spurious_in_a_row() const noexcept { return in_a_row_; }
    // Wake-ups that were followed by a delay.
    [[nodiscard]] uint64_t throttled() const noexcept { return throttled_; }

private:
    SpuriousEventPolicy policy_;
    uint32_t in_a_row_ = 0;
    uint64_t throttled_ = 0;
};

}  // namespace xenhsa::backend::core

#endif
