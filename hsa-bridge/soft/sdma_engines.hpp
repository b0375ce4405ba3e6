// The agent's SDMA engines: a few (SoftAgentOptions::sdma_engines), shared by all its SDMA
// queues in turn, as a GPU's engines serve the queues mapped to them. A copy or fill runs
// only while its queue holds an engine; after `slice` it hands the engine to the queue
// that waited longest, if one waits, and queues up again. So however many SDMA queues a
// guest makes, and however much one packet describes (a rectangle copy may describe
// terabytes), it keeps at most `engines` threads busy, and no packet holds an engine from
// the others for more than a slice.
//
// Turns are given in arrival order. A queue that halts (stop, fault) while it waits
// leaves the line at once: stop() calls interrupt().
#ifndef XENHSA_HSA_SOFT_SDMA_ENGINES_HPP
#define XENHSA_HSA_SOFT_SDMA_ENGINES_HPP

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>

#include "sdma_memory.hpp"

namespace xenhsa::hsa::soft {

class SdmaEngines {
public:
    SdmaEngines(uint32_t engines, std::chrono::microseconds slice) noexcept
        : free_(engines), slice_(slice) {}
    SdmaEngines(const SdmaEngines&) = delete;
    SdmaEngines& operator=(const SdmaEngines&) = delete;

    // Waits for an engine; false (and no engine) when `halted` became true first.
    bool acquire(const std::atomic<bool>& halted);
    void release() noexcept;
    // Whether a queue waits for an engine now.
    [[nodiscard]] bool contended() const noexcept {
        return waiting_.load(std::memory_order_relaxed) != 0;
    }
    // Waiters look at their `halted` flag again.
    void interrupt() noexcept;
    [[nodiscard]] std::chrono::microseconds slice() const noexcept { return slice_; }

private:
    std::mutex mutex_;
    std::condition_variable cv_;
    std::deque<uint64_t> line_;  // tickets of the waiting queues, oldest first
    uint64_t next_ticket_ = 0;
    uint32_t free_;
    std::atomic<uint32_t> waiting_{0};
    const std::chrono::microseconds slice_;
};

// One packet's hold on an engine, taken at its first chunk and given back with the turn's
// end; between chunks it yields the engine when its slice is over and another queue waits.
class EngineTurn final : public sdma::Pace {
public:
    EngineTurn(SdmaEngines& engines, const std::atomic<bool>& halted) noexcept
        : engines_(engines), halted_(halted) {}
    ~EngineTurn();
    EngineTurn(const EngineTurn&) = delete;
    EngineTurn& operator=(const EngineTurn&) = delete;

    bool go() override;

private:
    bool take();

    SdmaEngines& engines_;
    const std::atomic<bool>& halted_;
    bool held_ = false;
    std::chrono::steady_clock::time_point since_{};
};

}  // namespace xenhsa::hsa::soft

#endif
