// HSA signals as the GPU sees them: an amd_signal_t in guest memory, named by its address
// (hsa_signal_t.handle), with the value at offset 8.
#ifndef XENHSA_HSA_SOFT_SIGNALS_HPP
#define XENHSA_HSA_SOFT_SIGNALS_HPP

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <span>

#include "address_space.hpp"
#include "events.hpp"

namespace xenhsa::hsa::soft {

// Ticks whenever the agent completes a signal, or a queue must re-check why it waits;
// queues stalled on barrier dependencies sleep on it (with a timeout, since the host
// may also store to a signal without telling the agent). A tick is one atomic add; the
// mutex and the condition variable are touched only while someone sleeps.
class SignalHub {
public:
    [[nodiscard]] uint64_t epoch() const noexcept { return epoch_.load(std::memory_order_seq_cst); }
    void bump() noexcept {
        // seq_cst, as the sleeper's count and its re-check: either the sleeper sees the new
        // epoch, or this sees the sleeper and wakes it.
        epoch_.fetch_add(1, std::memory_order_seq_cst);
        if (sleepers_.load(std::memory_order_seq_cst) != 0) {
            { std::lock_guard lock(mutex_); }
            cv_.notify_all();
        }
    }
    void wait(uint64_t seen, std::chrono::microseconds timeout) const {
        sleepers_.fetch_add(1, std::memory_order_seq_cst);
        {
            std::unique_lock lock(mutex_);
            cv_.wait_for(lock, timeout,
                         [&] { return epoch_.load(std::memory_order_seq_cst) != seen; });
        }
        sleepers_.fetch_sub(1, std::memory_order_relaxed);
    }

private:
    mutable std::mutex mutex_;
    mutable std::condition_variable cv_;
    std::atomic<uint64_t> epoch_{0};
    mutable std::atomic<uint32_t> sleepers_{0};
};

// The end of a packet: decrement the value (release), then, if the signal asks for it,
// store its event_id in its mailbox and set the event. Returns the address of a fault
// (the signal, or its mailbox: then the value is left alone).
// A packet's start and end on the agent's clock (clock.hpp), written to its completion
// signal's start_ts and end_ts when the queue profiles (amd_queue.hpp).
struct PacketTimes {
    uint64_t start = 0;
    uint64_t end = 0;
};
std::optional<Va> complete_signal(const AddressSpace& space, EventTable& events, SignalHub& hub,
                                  uint64_t handle, const PacketTimes* times = nullptr);

// The same write with another operation: subtract `operand`, or store it (as a command
// processor stores an error code in a queue's inactive signal).
enum class SignalWrite : uint8_t { decrement, store };
std::optional<Va> write_signal(const AddressSpace& space, EventTable& events, SignalHub& hub,
                               uint64_t handle, SignalWrite how, int64_t operand,
                               const PacketTimes* times = nullptr);

enum class BarrierKind : uint8_t { all_zero, any_zero };

struct DependencyState {
    bool satisfied = false;
    std::optional<Va> fault;
};

// Barrier-AND: satisfied when every nonzero handle's value is 0. Barrier-OR: when some
// nonzero handle's value is 0; handle 0 counts as not satisfied (HSA 2.9.8), so an OR
// over no signals never completes.
DependencyState check_dependencies(const AddressSpace& space, std::span<const uint64_t> handles,
                                   BarrierKind kind);

}  // namespace xenhsa::hsa::soft

#endif
