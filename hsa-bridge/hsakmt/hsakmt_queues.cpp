// Queues over the thunk: create, destroy, and the doorbell the backend forwards (paths and
// caveats: hsakmt_device.hpp).
#include <system_error>

#include "hsakmt_device.hpp"
#include "kmt_call.hpp"

namespace xenhsa::hsa::kmt {

namespace {

void* ptr(Va va) { return reinterpret_cast<void*>(va); }

}  // namespace

Result<QueueId> HsakmtDevice::create_queue(const QueueSpec& spec) {
    if (spec.type != QueueType::compute_aql) {
        // Thunk 5.2.3 hands an SDMA queue read/write pointers of its own instead of the
        // guest's (see README.md): not yet.
        return errc(std::errc::operation_not_supported);
    }
    HsaEvent* error_event = nullptr;
    if (spec.error_event != 0) {
        auto found = find_event(spec.error_event);
        if (!found) {
            return found.error();
        }
        error_event = found.value().event;
    }
    HsaQueueResource resource{};
    resource.Queue_read_ptr_aql = reinterpret_cast<HSAuint64*>(spec.rptr);
    resource.Queue_write_ptr_aql = reinterpret_cast<HSAuint64*>(spec.wptr);
    resource.ErrorReason = nullptr;
    if (auto e = call([&] {
            return hsaKmtCreateQueue(spec.node, HSA_QUEUE_COMPUTE_AQL, spec.percentage,
                                     static_cast<HSA_QUEUE_PRIORITY>(spec.priority), ptr(spec.ring),
                                     spec.ring_size, error_event, &resource);
        })) {
        return e;
    }
    std::lock_guard lock(mutex_);
    const QueueId id = next_queue_++;
    queues_[id] = Queue{resource.QueueId, resource.Queue_DoorBell_aql, spec.node, false};
    return id;
}

Result<void> HsakmtDevice::destroy_queue(QueueId queue) {
    HSA_QUEUEID kfd_id = 0;
    {
        std::lock_guard lock(mutex_);
        auto it = queues_.find(queue);
        if (it == queues_.end()) {
            return errc(std::errc::no_such_file_or_directory);
        }
        kfd_id = it->second.id;
    }
    if (auto e = call([&] { return hsaKmtDestroyQueue(kfd_id); })) {
        return e;  // the queue and everything it uses stay (thunk: nothing freed)
    }
    std::lock_guard lock(mutex_);
    queues_.erase(queue);
    return boost::outcome_v2::success();
}

Result<void> HsakmtDevice::ring_doorbell(QueueId queue, uint64_t value) {
    std::lock_guard lock(mutex_);
    auto it = queues_.find(queue);
    if (it == queues_.end()) {
        return errc(std::errc::no_such_file_or_directory);
    }
    // As ROCr does for a gfx9+ doorbell: the new write dispatch id, with release order, so
    // that the packets written before are visible to the CP.
    __atomic_store_n(it->second.doorbell, value, __ATOMIC_RELEASE);
    return boost::outcome_v2::success();
}

}  // namespace xenhsa::hsa::kmt
