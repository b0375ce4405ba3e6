// HSA completion signals in guest memory: an amd_signal_t (ROCm's <hsa/amd_hsa_signal.h>)
// whose address is the hsa_signal_t handle, as ROCr does. The packet processor (the
// backend's GPU side) decrements `value` when a packet completes; the guest waits by
// polling it with backoff.
#ifndef XENHSA_FRONTEND_SIGNAL_HPP
#define XENHSA_FRONTEND_SIGNAL_HPP

#include <hsa/amd_hsa_signal.h>
#include <hsa/hsa.h>

#include <chrono>
#include <cstdint>
#include <xenhsa/frontend/result.hpp>

namespace xenhsa::frontend::aql {

static_assert(sizeof(amd_signal_t) == 64);

// A user signal with `value`; `mailbox`/`event_id` from EVENT_CREATE when the signal
// should also raise an HSA event (0: none).
void signal_init(amd_signal_t& signal, int64_t value, uint64_t mailbox = 0,
                 uint32_t event_id = 0) noexcept;
[[nodiscard]] inline uint64_t signal_handle(const amd_signal_t& signal) noexcept {
    return reinterpret_cast<uintptr_t>(&signal);
}
[[nodiscard]] int64_t signal_load(const amd_signal_t& signal) noexcept;  // acquire
void signal_store(amd_signal_t& signal, int64_t value) noexcept;         // release

[[nodiscard]] bool signal_satisfied(int64_t current, hsa_signal_condition_t condition,
                                    int64_t operand) noexcept;

// Polls until `condition(value, operand)` holds: spins for 50 µs, then yields for 50 µs,
// then sleeps growing from 10 µs to 1 ms. Returns the value that satisfied it; ETIMEDOUT after
// `timeout`.
Result<int64_t> signal_wait(const amd_signal_t& signal, hsa_signal_condition_t condition,
                            int64_t operand, std::chrono::nanoseconds timeout);

}  // namespace xenhsa::frontend::aql

#endif
