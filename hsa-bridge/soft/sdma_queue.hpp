// One SDMA queue: a thread that runs the gfx9 SDMA packets (sdma_packets.hpp) in the
// byte ring in guest memory, as ROCr's BlitSdmaV4 produces them. Its copies and fills
// take turns with the other SDMA queues' on the agent's engines (sdma_engines.hpp).
//
// The read and write pointers are 64-bit monotonic byte indexes; the ring offset of index
// i is i & (ring_size - 1). The engine reads its read index from the guest once, at
// creation, and keeps its own copy afterwards. It runs the bytes [read, wptr) packet by
// packet, in order: it copies each packet out of the ring once (a packet may straddle
// the ring's end: the copy wraps), validates the copy, runs it, and then stores the new
// read index (release). A write index more than ring_size ahead of the read index is a
// queue error; one that is not ahead means no work. A packet that runs past the write
// index waits for the producer to write the rest.
//
// Every address a packet names is checked through the address space (sources for read,
// destinations for write; naturally aligned where the packet stores atomically); a
// stray one is a GPU page fault that stops this queue only. An opcode the engine does not
// know, or a malformed packet, is a queue error too. Either stops the queue for good; the
// agent then signals its error event and reports the fault once.
//
// Polls (POLL_REGMEM on memory) sleep between looks with a backoff, and wake early when
// the agent completes a signal; they end when the condition holds or the queue stops.
// An idle queue waits as IdleWait says.
#ifndef XENHSA_HSA_SOFT_SDMA_QUEUE_HPP
#define XENHSA_HSA_SOFT_SDMA_QUEUE_HPP

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <span>
#include <thread>

#include "agent_shared.hpp"
#include "queue.hpp"
#include "sdma_memory.hpp"
#include "sdma_packets.hpp"

namespace xenhsa::hsa::soft {

class SdmaQueue final : public Queue {
public:
    // The caller holds `held` in the address space for the queue's lifetime.
    SdmaQueue(AgentShared& agent, QueueId id, const QueueSpec& spec, const HeldQueueMemory& held);
    ~SdmaQueue() override;  // stop()

    void start() override;
    void doorbell() noexcept override;
    // Interrupts a copy, fill or poll in progress between two chunks or looks.
    void stop() noexcept override;
    [[nodiscard]] const QueueMemory& memory() const noexcept override { return held_.memory; }

private:
    enum class Step : uint8_t { next, incomplete, stop };
    using Dwords = std::array<uint32_t, sdma::kMaxPacketDwords>;

    void run() noexcept;
    void process_packets();
    // The packet at read_, with `available` bytes published after it.
    Step process(uint64_t available);
    Step execute(const Dwords& packet);
    Step poll(const sdma::PollRegMem& packet);
    // The end of a memory operation: a fault stops the queue, so does a stop().
    Step finish(const sdma::OpEnd& end);
    Step malformed();
    void fail(std::optional<Va> fault) noexcept;
    // False when the ring refuses it (not for a copy of at most ring_size bytes).
    [[nodiscard]] bool copy_from_ring(uint64_t index, std::span<std::byte> out) const noexcept;
    [[nodiscard]] uint64_t load_wptr() const noexcept;
    bool wait_doorbell(uint64_t seen, std::chrono::microseconds timeout);

    AgentShared& agent_;
    QueueId id_;
    HeldQueueMemory held_;
    EventId error_event_;
    uint64_t ring_mask_;
    bool active_;
    uint64_t read_ = 0;  // the engine's read index (bytes)

    std::mutex mutex_;
    std::condition_variable cv_;
    uint64_t doorbells_ = 0;
    bool stopping_ = false;
    bool failed_ = false;
    std::optional<Va> fault_;
    std::atomic<bool> halted_{false};  // stopping_ or failed_: long operations give up
    std::thread thread_;
};

}  // namespace xenhsa::hsa::soft

#endif
