// Turns the device's faults (device queue ids, any thread) into QueueLost calls that name
// the guest's queue handle, at most one per queue. The device's fault handler holds a
// shared_ptr to the relay, so a fault that races with the context's destruction finds a
// relay with no queues instead of a dangling context. The QueueLost callback runs with
// the relay's lock held (so that a cleared callback is never called afterwards): it must
// not call on_queue_lost.
#ifndef XENHSA_HSA_GPU_CONTEXT_FAULT_RELAY_HPP
#define XENHSA_HSA_GPU_CONTEXT_FAULT_RELAY_HPP

#include <mutex>
#include <vector>
#include <xenhsa/hsa/gpu_context.hpp>

namespace xenhsa::hsa::detail {

class FaultRelay {
public:
    explicit FaultRelay(uint32_t max_queues);

    void set_callback(GpuContext::QueueLost callback);

    // Never allocate: room for max_queues entries is reserved.
    void add(QueueId queue, Handle handle) noexcept;
    // Returns whether the queue's loss is still unreported.
    bool remove(QueueId queue) noexcept;

    // From the device, any thread. Faults of unknown (already destroyed) queues are
    // dropped, and so are a queue's faults after its first.
    void on_fault(const GpuFault& fault) noexcept;
    // For a queue the context destroyed without the guest asking (revoke, teardown).
    void report(Handle handle, Va address) noexcept;

private:
    struct Live {
        QueueId queue = 0;
        Handle handle = 0;
        bool reported = false;
    };

    void call(Handle handle, Va address, bool hang) noexcept;  // with mutex_ held

    std::mutex mutex_;
    std::vector<Live> live_;
    GpuContext::QueueLost callback_;
};

}  // namespace xenhsa::hsa::detail

#endif
