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
#include <xenhsa/frontend/signal.hpp>

namespace xenhsa::frontend::aql {

// Guest pages at one VA, MAPped, PINned and MAPped to the GPU of `node`, with a bump
// allocator for kernel arguments, signals and data. Give it back with release() before
// the Client goes.
class GpuMemory {
public:
    GpuMemory() = default;
    static Result<GpuMemory> create(Client& client, std::size_t pages, uint32_t node = 0);

    [[nodiscard]] uint64_t va() const noexcept { return buffer_.va(); }
    [[nodiscard]] std::byte* data() const noexcept { return buffer_.data(); }
    [[nodiscard]] std::size_t size() const noexcept { return buffer_.size(); }
    [[nodiscard]] Handle map_handle() const noexcept { return map_; }
    [[nodiscard]] Handle pin_handle() const noexcept { return pin_; }

    // `bytes` zeroed bytes at a multiple of `align` (ENOMEM when it does not fit). The
    // pointer is also the GPU address (VA mirroring).
    Result<std::byte*> carve(std::size_t bytes, std::size_t align = 64);
    template <class T>
    Result<T*> carve_array(std::size_t count,
                           std::size_t align = alignof(T) < 64 ? 64 : alignof(T)) {
        auto p = carve(count * sizeof(T), align);
        if (!p) {
            return p.error();
        }
        return reinterpret_cast<T*>(p.value());
    }
    // UNMAP_FROM_GPU, UNPIN, UNMAP, then withdraws the grants. Stops at the first failure.
    Result<void> release(Client& client);

private:
    GuestBuffer buffer_;
    Handle map_ = 0;
    Handle pin_ = 0;
    bool gpu_mapped_ = false;
    std::size_t used_ = 0;
};

// The first node with GPU compute cores (QUERY SYSTEM, then QUERY NODE per node);
// nullopt when the host has none. CPU nodes come first in HSA topologies.
Result<std::optional<uint32_t>> find_gpu_node(Client& client);

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

    [[nodiscard]] Handle handle() const noexcept { return handle_; }
    [[nodiscard]] uint32_t doorbell_index() const noexcept { return doorbell_; }
    [[nodiscard]] uint32_t packets() const noexcept { return packets_; }
    [[nodiscard]] uint64_t ring_va() const noexcept { return memory_.va(); }
    // The read dispatch id the packet processor published (untrusted: only a hint).
    [[nodiscard]] uint64_t read_index() const noexcept;
    [[nodiscard]] uint64_t write_index() const noexcept { return next_; }

    // The next free slot: waits (polling the read index) while the ring is full.
    Result<uint64_t> reserve(std::chrono::milliseconds timeout);
    [[nodiscard]] void* slot(uint64_t index) const noexcept;
    // After the packet at `index` is written: publishes write index `index + 1` and rings
    // the doorbell (kicking the event channel when the GPU side asks for it).
    Result<void> submit(uint64_t index);

    Result<uint64_t> dispatch(const DispatchSpec& spec, std::chrono::milliseconds timeout);
    Result<uint64_t> barrier_and(const BarrierSpec& spec, std::chrono::milliseconds timeout);
    Result<uint64_t> barrier_or(const BarrierSpec& spec, std::chrono::milliseconds timeout);

    // QUEUE_DESTROY, then the memory is given back.
    Result<void> destroy();

private:
    Client* client_ = nullptr;
    GpuMemory memory_;
    Handle handle_ = 0;
    uint32_t doorbell_ = 0;
    uint32_t packets_ = 0;
    uint64_t next_ = 0;
    uint64_t* rptr_ = nullptr;
    uint64_t* wptr_ = nullptr;
};

}  // namespace xenhsa::frontend::aql

#endif
