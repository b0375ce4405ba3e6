#include <xenhsa/proto/ring.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>
#include <xenhsa/frontend/signal.hpp>

namespace xenhsa::frontend::aql {

void signal_init(amd_signal_t& signal, int64_t value, uint64_t mailbox,
                 uint32_t event_id) noexcept {
    std::memset(static_cast<void*>(&signal), 0, sizeof signal);
    signal.kind = AMD_SIGNAL_KIND_USER;
    signal.event_mailbox_ptr = mailbox;
    signal.event_id = event_id;
    signal_store(signal, value);
}

int64_t signal_load(const amd_signal_t& signal) noexcept {
    return __atomic_load_n(const_cast<const int64_t*>(&signal.value), __ATOMIC_ACQUIRE);
}

void signal_store(amd_signal_t& signal, int64_t value) noexcept {
    __atomic_store_n(const_cast<int64_t*>(&signal.value), value, __ATOMIC_RELEASE);
}

bool signal_satisfied(int64_t current, hsa_signal_condition_t condition, int64_t operand) noexcept {
    switch (condition) {
        case HSA_SIGNAL_CONDITION_EQ:
            return current == operand;
        case HSA_SIGNAL_CONDITION_NE:
            return current != operand;
        case HSA_SIGNAL_CONDITION_LT:
            return current < operand;
        case HSA_SIGNAL_CONDITION_GTE:
            return current >= operand;
    }
    return false;
}

namespace {

// A completion usually lands within a microsecond of the submit when the agent has a core
// of its own: spinning that long costs less than a sleep and a wake-up. One that has not
// come after kSpinTime may be waiting for this very core (more runnable threads than
// cores, as with many guests): the wait then sleeps, in naps that grow, and so gives the
// core away at once. Never a sched_yield: on a busy host it gives the core away for a
// whole time slice of every other runnable thread (milliseconds), not until the answer.
constexpr auto kSpinTime = std::chrono::microseconds(5);

}  // namespace

Result<int64_t> signal_wait(const amd_signal_t& signal, hsa_signal_condition_t condition,
                            int64_t operand, std::chrono::nanoseconds timeout) {
    using Clock = std::chrono::steady_clock;
    const auto start = Clock::now();
    const auto deadline = start + timeout;
    auto nap = std::chrono::microseconds(10);
    for (uint32_t round = 0;; ++round) {
        const int64_t current = signal_load(signal);
        if (signal_satisfied(current, condition, operand)) {
            return current;
        }
        if (round % 32 != 0) {
            xenhsa_cpu_relax();
            continue;  // the clock is read every 32 polls only
        }
        const auto now = Clock::now();
        if (now >= deadline) {
            return std::error_code(ETIMEDOUT, std::generic_category());
        }
        if (now - start < kSpinTime) {
            xenhsa_cpu_relax();
            continue;
        }
        std::this_thread::sleep_for(nap);
        nap = std::min<std::chrono::microseconds>(nap * 2, std::chrono::milliseconds(1));
    }
}

}  // namespace xenhsa::frontend::aql
