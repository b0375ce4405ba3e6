// SDMA from the guest (XENHSA_FEATURE_SDMA): a queue of gfx9 "SDMA v4" packets, as ROCr's
// BlitSdmaV4 writes them, in a byte ring of GPU-reachable guest memory whose read and
// write pointers are 64-bit byte indexes (protocol section 7). Copies and fences: what a
// guest needs to move memory and learn that it moved; any other packet through submit().
#ifndef XENHSA_FRONTEND_SDMA_QUEUE_HPP
#define XENHSA_FRONTEND_SDMA_QUEUE_HPP

#include <chrono>
#include <cstdint>
#include <span>
#include <xenhsa/frontend/client.hpp>
#include <xenhsa/frontend/queue_memory.hpp>

namespace xenhsa::frontend::sdma {

struct QueueOptions {
    uint32_t node = 0;
    uint32_t ring_bytes = 16384;  // power of two, XENHSA_QUEUE_RING_MIN..MAX
    Handle error_event = 0;
};

class SdmaQueue {
public:
    SdmaQueue() = default;
    // Memory for the ring and the pointers, then QUEUE_CREATE of type SDMA.
    static Result<SdmaQueue> create(Client& client, const QueueOptions& options);

    [[nodiscard]] Handle handle() const noexcept { return queue_.handle(); }
    [[nodiscard]] uint64_t read_index() const noexcept { return queue_.read_index(); }

    // COPY_LINEAR packets (4 MiB at most each) for [src, src + bytes) -> dst; GPU VAs.
    Result<void> copy(uint64_t dst, uint64_t src, uint64_t bytes,
                      std::chrono::milliseconds timeout);
    // A FENCE: `value` stored at the dword `address` once the packets before it ran.
    Result<void> fence(uint64_t address, uint32_t value, std::chrono::milliseconds timeout);
    // Any packet the caller encoded (the synthetic frontend's hostile guests): waits for
    // room, pads to the ring's end with NOPs when the packet would wrap, writes it,
    // publishes the write index and rings the doorbell.
    Result<void> submit(std::span<const uint32_t> packet, std::chrono::milliseconds timeout);

    // QUEUE_DESTROY, then the memory is given back.
    Result<void> destroy() { return queue_.destroy(); }

private:
    Result<void> wait_for_room(uint64_t bytes, std::chrono::steady_clock::time_point deadline);

    QueueMemory queue_;
    uint64_t next_ = 0;  // the write byte index
};

}  // namespace xenhsa::frontend::sdma

#endif
