// How a queue thread waits when it has run out of work, so that it notices a producer
// that only stores its write pointer (ROCr in a guest never kicks) without burning an
// idle core (SoftAgentOptions idle_*, soft_agent.hpp):
//   1. spin: at least `spin` polls in a row, and for at least `spin_time`;
//   2. back off: sleeps from backoff_min doubling to backoff_max, re-checking after each;
//   3. block, once idle for block_after: ask for kicks (KickTracker: kick_requested = 1),
//      re-check, and sleep until a doorbell, re-checking every block_recheck anyway.
// A doorbell, or work found, returns to the spin phase (and withdraws the kick request).
#ifndef XENHSA_HSA_SOFT_IDLE_WAIT_HPP
#define XENHSA_HSA_SOFT_IDLE_WAIT_HPP

#include <xenhsa/proto/ring.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <thread>

#include "kick_tracker.hpp"

namespace xenhsa::hsa::soft {

struct IdlePolicy {
    uint32_t spin = 256;
    std::chrono::microseconds backoff_min{20};
    std::chrono::microseconds backoff_max{2000};
    std::chrono::milliseconds block_after{250};
    std::chrono::milliseconds block_recheck{20};
    std::chrono::microseconds spin_time{50};
};

// Polls `done` with a pause in between for about `budget`; true as soon as it holds.
template <class Done>
bool spin_for(std::chrono::nanoseconds budget, Done&& done) {
    const auto until = std::chrono::steady_clock::now() + budget;
    for (uint32_t i = 1;; ++i) {
        if (done()) {
            return true;
        }
        xenhsa_cpu_relax();
        if (i % 32 == 0) {
            if (std::chrono::steady_clock::now() >= until) {
                return done();
            }
            // A thread of ours may wait for this core (two cores, a busy machine).
            std::this_thread::yield();
        }
    }
}

class IdleWait {
public:
    IdleWait(const IdlePolicy& policy, KickTracker& kicks) noexcept
        : policy_(policy), kicks_(kicks), backoff_(policy.backoff_min) {}
    ~IdleWait() { busy(); }
    IdleWait(const IdleWait&) = delete;
    IdleWait& operator=(const IdleWait&) = delete;
    IdleWait(IdleWait&&) = delete;
    IdleWait& operator=(IdleWait&&) = delete;

    // Work was found: the next wait starts with the spin phase again.
    void busy() noexcept;

    // One step of waiting while there is no work. `work()` re-checks the producer's write
    // pointer; `sleep(timeout)` sleeps until a doorbell, a stop or the timeout and returns
    // true when a doorbell or a stop ended it. The caller re-checks everything afterwards.
    template <class Work, class Sleep>
    void step(Work&& work, Sleep&& sleep) {
        const auto now = std::chrono::steady_clock::now();
        if (!idle_) {
            idle_ = true;
            idle_since_ = now;
            backoff_ = policy_.backoff_min;
            for (uint32_t i = 0; i < policy_.spin; ++i) {
                xenhsa_cpu_relax();
                if (work()) {
                    busy();
                    return;
                }
            }
            if (spin_for(policy_.spin_time, work)) {
                busy();
            }
            return;
        }
        if (now - idle_since_ < policy_.block_after) {
            if (sleep(std::chrono::duration_cast<std::chrono::microseconds>(backoff_))) {
                busy();
                return;
            }
            backoff_ = std::min(backoff_ * 2, policy_.backoff_max);
            return;
        }
        if (!blocked_) {
            blocked_ = true;
            kicks_.sleeping();  // then a full fence: the re-check below pairs with the producer's
            if (work()) {
                busy();
                return;
            }
        }
        if (sleep(std::chrono::duration_cast<std::chrono::microseconds>(policy_.block_recheck))) {
            busy();
        }
    }

    [[nodiscard]] bool blocked() const noexcept { return blocked_; }

private:
    IdlePolicy policy_;
    KickTracker& kicks_;
    bool idle_ = false;
    bool blocked_ = false;
    std::chrono::steady_clock::time_point idle_since_;
    std::chrono::microseconds backoff_;
};

}  // namespace xenhsa::hsa::soft

#endif
