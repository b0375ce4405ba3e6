// GPU work from the guest: memory the GPU can reach (MAP + PIN + MAP_TO_GPU of guest
// pages) and an AQL queue whose ring and read/write pointers live in such memory
// (QUEUE_CREATE), rung through the doorbell page (protocol section 7).
#ifndef XENHSA_FRONTEND_AQL_QUEUE_HPP
#define XENHSA_FRONTEND_AQL_QUEUE_HPP

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <xenhsa/frontend/aql_packet.hpp>
#include <xenhsa/frontend/client.hpp>
#include <xenhsa/frontend/gpu_memory.hpp>
#include <xenhsa/frontend/queue_memory.hpp>
#include <xenhsa/frontend/signal.hpp>

namespace xenhsa::frontend::aql {

struct QueueOptions {
    uint32_t node = 0;
    uint32_t packets = 64;  // power of two, 64 .. 65536
    int32_t priority = 0;
    uint32_t percentage = 100;
    Handle error_event = 0;
};

class AqlQueue {
public:
    AqlQueue() = default;
    // Memory for the ring and the pointers (slots set INVALID, pointers 0), then
    // QUEUE_CREATE. The doorbell index is checked (xenhsa_check_queue_create_rsp).
    static Result<AqlQueue> create(Client& client, const QueueOptions& options);

    [[nodiscard]] Handle handle() const noexcept { return queue_.handle(); }
    [[nodiscard]] uint32_t doorbell_index() const noexcept { return queue_.doorbell_index(); }
    [[nodiscard]] uint32_t packets() const noexcept { return packets_; }
    [[nodiscard]] uint64_t ring_va() const noexcept { return queue_.ring_va(); }
    // The read dispatch id the packet processor published (untrusted: only a hint).
    [[nodiscard]] uint64_t read_index() const noexcept { return queue_.read_index(); }
    [[nodiscard]] uint64_t write_index() const noexcept { return next_; }

    // The next free slot: waits (polling the read index) while the ring is full.
    Result<uint64_t> reserve(std::chrono::milliseconds timeout);
    [[nodiscard]] void* slot(uint64_t index) const noexcept;
    // After the packet at `index` is written: publishes write index `index + 1` and rings
    // the doorbell (kicking the event channel when the GPU side asks for it).
    Result<void> submit(uint64_t index) { return queue_.publish(index + 1); }

    Result<uint64_t> dispatch(const DispatchSpec& spec, std::chrono::milliseconds timeout);
    Result<uint64_t> barrier_and(const BarrierSpec& spec, std::chrono::milliseconds timeout);
    Result<uint64_t> barrier_or(const BarrierSpec& spec, std::chrono::milliseconds timeout);

    // QUEUE_DESTROY, then the memory is given back.
    Result<void> destroy() { return queue_.destroy(); }

private:
    QueueMemory queue_;
    uint32_t packets_ = 0;
    uint64_t next_ = 0;
};

}  // namespace xenhsa::frontend::aql

#endif
