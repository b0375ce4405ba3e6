// What every guest queue is made of, whatever its packets: a ring and its read and write
// pointers in GPU-reachable guest memory, and the backend's queue made over them
// (QUEUE_CREATE), with its doorbell. AqlQueue and SdmaQueue are built on it.
#ifndef XENHSA_FRONTEND_QUEUE_MEMORY_HPP
#define XENHSA_FRONTEND_QUEUE_MEMORY_HPP

#include <cstdint>
#include <xenhsa/frontend/client.hpp>
#include <xenhsa/frontend/gpu_memory.hpp>

namespace xenhsa::frontend {

struct QueueSpec {
    uint32_t type = XENHSA_QUEUE_COMPUTE_AQL;  // enum xenhsa_queue_type
    uint32_t node = 0;
    uint64_t ring_bytes = 0;  // power of two, XENHSA_QUEUE_RING_MIN..MAX
    int32_t priority = 0;
    uint32_t percentage = 100;
    Handle error_event = 0;
};

class QueueMemory {
public:
    QueueMemory() = default;
    // The ring (page aligned, zeroed), the pointers (0) on the page after it, then
    // QUEUE_CREATE. EINVAL for a ring size out of range; nothing is left on failure.
    static Result<QueueMemory> create(Client& client, const QueueSpec& spec);

    [[nodiscard]] Client* client() const noexcept { return client_; }
    [[nodiscard]] Handle handle() const noexcept { return handle_; }
    [[nodiscard]] uint32_t doorbell_index() const noexcept { return doorbell_; }
    [[nodiscard]] std::byte* ring() const noexcept { return ring_; }
    [[nodiscard]] uint64_t ring_va() const noexcept { return memory_.va(); }
    [[nodiscard]] uint64_t ring_bytes() const noexcept { return ring_bytes_; }
    // The read index the engine published (untrusted: only a hint).
    [[nodiscard]] uint64_t read_index() const noexcept;
    // Publishes write index `index` (never backwards) and rings the doorbell with it,
    // kicking the event channel when the GPU side asks for it.
    Result<void> publish(uint64_t index);
    // For a caller waiting on the engine: the backend is still there.
    Result<void> check_backend();

    // QUEUE_DESTROY, then the memory is given back.
    Result<void> destroy();

private:
    Client* client_ = nullptr;
    aql::GpuMemory memory_;
    std::byte* ring_ = nullptr;
    uint64_t ring_bytes_ = 0;
    Handle handle_ = 0;
    uint32_t doorbell_ = 0;
    uint64_t* rptr_ = nullptr;
    uint64_t* wptr_ = nullptr;
};

}  // namespace xenhsa::frontend

#endif
