// hsaKmtCreateQueue / hsaKmtDestroyQueue over QUEUE_CREATE / QUEUE_DESTROY.
//
// AQL queues run on the memory ROCr passes: its ring and the read/write dispatch ids in
// its amd_queue_t, all guest memory this library allocated and mapped to the GPU. SDMA
// queues (what hsa_amd_memory_async_copy uses on gfx9) need read/write pointers from the
// thunk: this library gives each one a GPU-mapped page of its own. Either way the queue's
// doorbell is a slot of the device's doorbell page; ROCr stores its write index there and
// never kicks, and the backend notices the store by itself (protocol section 7).
#ifndef XENHSA_FRONTEND_HSAKMT_QUEUES_HPP
#define XENHSA_FRONTEND_HSAKMT_QUEUES_HPP

#include <hsakmt.h>

#include <map>
#include <xenhsa/frontend/client.hpp>

#include "events.hpp"
#include "memory.hpp"

namespace xenhsa::frontend::hsakmt {

struct QueueSpec {
    uint32_t node = 0;
    HSA_QUEUE_TYPE type = HSA_QUEUE_COMPUTE_AQL;
    uint32_t percentage = 100;
    HSA_QUEUE_PRIORITY priority = HSA_QUEUE_PRIORITY_NORMAL;
    uint64_t ring = 0;
    uint64_t ring_size = 0;
    HsaEvent* event = nullptr;
};

class Queues {
public:
    Queues(Client& client, Memory& memory, Events& events, xenhsa_doorbell_page& doorbells) noexcept
        : client_(client), memory_(memory), events_(events), doorbells_(doorbells) {}
    ~Queues();  // destroys what ROCr left, best effort
    Queues(const Queues&) = delete;
    Queues& operator=(const Queues&) = delete;

    // Fills QueueId, the doorbell and, for SDMA, the read/write pointers.
    Result<void> create(const QueueSpec& spec, HsaQueueResource& resource);
    Result<void> destroy(HSA_QUEUEID id);
    // hsaKmtUpdateQueue with a percentage of 0: ROCr suspends a queue after the device
    // stopped it on an error (the code in the queue's inactive signal), and that queue is
    // suspended already. Suspending a running queue, or changing a priority, has no
    // command in the protocol: ENOTSUP.
    Result<void> suspend(HSA_QUEUEID id) const;
    [[nodiscard]] std::size_t live() const noexcept { return queues_.size(); }

private:
    struct Queue {
        uint64_t ring = 0;
        uint64_t rptr = 0;
        uint64_t wptr = 0;
        uint64_t pointers_page = 0;  // SDMA: ours
        uint32_t node = 0;
    };

    void unhold(const Queue& q) noexcept;

    Client& client_;
    Memory& memory_;
    Events& events_;
    xenhsa_doorbell_page& doorbells_;
    std::map<HSA_QUEUEID, Queue> queues_;  // by backend handle
};

}  // namespace xenhsa::frontend::hsakmt

#endif
