// Queues: AQL through the thunk (it allocates the EOP buffer and the context-save area and
// maps the doorbells), SDMA on the adapter's own descriptor with the guest's read and write
// pointers (kfd_fd.hpp); the doorbell the backend forwards.
#include <system_error>

#include "hsakmt_device.hpp"
#include "kmt_call.hpp"

namespace xenhsa::hsa::kmt {

namespace {

void* ptr(Va va) { return reinterpret_cast<void*>(va); }

}  // namespace

Result<QueueId> HsakmtDevice::create_queue(const QueueSpec& spec) {
    // Thunk 5.2.3 divides by the node's SIMDs per CU: a CPU node would be SIGFPE.
    auto gpu = gpu_of(spec.node);
    if (!gpu) {
        return gpu.error();
    }
    Queue queue;
    queue.node = spec.node;
    if (spec.type == QueueType::sdma) {
        auto created =
            kfd_.create_sdma_queue(gpu.value(), spec.ring, spec.ring_size, spec.rptr, spec.wptr,
                                   spec.percentage, kfd_priority(spec.priority));
        if (!created) {
            return created.error();
        }
        queue.raw_id = created.value().id;
        queue.raw = true;
        queue.doorbell = created.value().doorbell;
    } else {
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
                                         static_cast<HSA_QUEUE_PRIORITY>(spec.priority),
                                         ptr(spec.ring), spec.ring_size, error_event, &resource);
            })) {
            return e;
        }
        queue.id = resource.QueueId;
        queue.doorbell = resource.Queue_DoorBell_aql;
    }
    std::lock_guard lock(mutex_);
    const QueueId id = next_queue_++;
    queues_[id] = queue;
    return id;
}

Result<void> HsakmtDevice::destroy_queue(QueueId queue) {
    Queue q;
    {
        std::lock_guard lock(mutex_);
        auto it = queues_.find(queue);
        if (it == queues_.end()) {
            return errc(std::errc::no_such_file_or_directory);
        }
        q = it->second;
    }
    if (q.raw) {
        if (auto r = kfd_.destroy_queue(q.raw_id); !r) {
            return r.error();
        }
    } else if (auto e = call([&] { return hsaKmtDestroyQueue(q.id); })) {
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
    // As ROCr does for a gfx9+ doorbell: the new write index (AQL: the dispatch id; SDMA:
    // the byte index), with release order, so that the packets written before are visible.
    __atomic_store_n(it->second.doorbell, value, __ATOMIC_RELEASE);
    return boost::outcome_v2::success();
}

}  // namespace xenhsa::hsa::kmt
