// The agent's one clock: the GPU, CPU and system clock counters of the topology and the
// SDMA timestamps all read it, so that they compare (nanoseconds; the "GPU" runs on the
// host's CPUs).
#ifndef XENHSA_HSA_SOFT_CLOCK_HPP
#define XENHSA_HSA_SOFT_CLOCK_HPP

#include <chrono>
#include <cstdint>

namespace xenhsa::hsa::soft {

inline constexpr uint64_t kClockHz = 1'000'000'000;

inline uint64_t clock_now() noexcept {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::steady_clock::now().time_since_epoch())
                                     .count());
}

}  // namespace xenhsa::hsa::soft

#endif
