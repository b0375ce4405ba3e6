// Turns the device's faults (device queue ids, any thread) into QueueLost calls that name
// the guest's queue handle. The device's fault handler holds a shared_ptr to the relay,
// so a fault that races with the session's destruction finds a relay with no queues
// instead of a dangling session. The QueueLost callback runs with the relay's lock held
// (so that a cleared callback is never called afterwards): it must not call on_queue_lost.
#ifndef XENHSA_HSA_SESSION_FAULT_RELAY_HPP
#define XENHSA_HSA_SESSION_FAULT_RELAY_HPP

#include <mutex>
#include <utility>
#include <vector>
#include <xenhsa/hsa/gpu_session.hpp>

namespace xenhsa::hsa::detail {

class FaultRelay {
public:
    explicit FaultRelay(uint32_t max_queues);

    void set_callback(GpuSession::QueueLost callback);

    // Never allocate: room for max_queues entries is reserved.
    void add(QueueId queue, Handle handle) noexcept;
    void remove(QueueId queue) noexcept;

    // From the device, any thread. Faults of unknown (already destroyed) queues are dropped.
    void on_fault(const GpuFault& fault) noexcept;
    // From revoke_range, for a queue it destroyed.
    void report(Handle handle, Va address) noexcept;

private:
    void call(Handle handle, Va address) noexcept;  // with mutex_ held

    std::mutex mutex_;
    std::vector<std::pair<QueueId, Handle>> live_;
    GpuSession::QueueLost callback_;
};

}  // namespace xenhsa::hsa::detail

#endif
