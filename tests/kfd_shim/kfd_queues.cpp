// Queues (kfd_chardev.c kfd_ioctl_create_queue, set_queue_properties_from_user) run by
// the software agent, and what stops them: a VM fault stops every queue of the process on
// the GPU (kfd_dqm_evict_pasid, no restore), a hung queue every queue (a GPU reset), an
// eviction those over the evicted BO.
#include <linux/kfd_ioctl.h>

#include <bit>
#include <cerrno>
#include <cstring>
#include <xenhsa/hsa/soft_agent.hpp>

#include "call_log.hpp"
#include "inside_shim.hpp"
#include "kfd_process.hpp"
#include "machine.hpp"

namespace xenhsa::kfd_shim {

namespace {

// HsaUserContextSaveAreaHeader's layout (hsakmttypes.h), as the CP reads it.
struct CtxSaveHeader {
    uint32_t control_stack_offset;
    uint32_t control_stack_size;
    uint32_t wave_state_offset;
    uint32_t wave_state_size;
    uint32_t debug_offset;
    uint32_t debug_size;
    uint64_t error_reason;
    uint32_t error_event_id;
    uint32_t reserved;
};
static_assert(sizeof(CtxSaveHeader) == 40);
constexpr uint32_t kMaxQueues = 1024;  // the doorbells of a process slice

// The thunk maps its priorities -3..3 to 0, 3, 5, 7, 9, 11, 15; back to the nearest.
int32_t agent_priority(uint32_t kfd_priority) {
    constexpr uint32_t kMap[] = {0, 3, 5, 7, 9, 11, 15};
    int32_t best = 0;
    for (int32_t i = 0; i < 7; ++i) {
        const auto d = [&](int32_t j) {
            const int32_t x = static_cast<int32_t>(kMap[j]) - static_cast<int32_t>(kfd_priority);
            return x < 0 ? -x : x;
        };
        if (d(i) < d(best)) {
            best = i;
        }
    }
    return best - 3;
}

}  // namespace

bool KfdProcess::queue_uses(const Queue& queue, const Bo& bo) const {
    const auto in = [&](uint64_t address, uint64_t size) {
        return address < bo.va + bo.size && bo.va < address + size;
    };
    return in(queue.ring, queue.ring_size) || in(queue.rptr, 8) || in(queue.wptr, 8);
}

void KfdProcess::stop_queues_using(const Bo& bo, const char* why) {
    for (auto& [id, queue] : queues_) {
        if (queue.running && queue_uses(queue, bo)) {
            (void)gpu_->destroy_queue(queue.agent);
            queue.running = false;
            call_log().line("kfd " + std::string(why) + " stops queue=" + std::to_string(id));
        }
    }
}

int KfdProcess::create_queue(void* arg) {
    auto& a = *static_cast<kfd_ioctl_create_queue_args*>(arg);
    hsa::QueueSpec spec;
    int err = 0;
    if (a.queue_type == KFD_IOC_QUEUE_TYPE_COMPUTE_AQL) {
        spec.type = hsa::QueueType::compute_aql;
    } else if (a.queue_type == KFD_IOC_QUEUE_TYPE_SDMA ||
               a.queue_type == KFD_IOC_QUEUE_TYPE_SDMA_XGMI) {
        spec.type = hsa::QueueType::sdma;
    } else {
        err = EINVAL;  // PM4 compute queues: the emulated GPU runs no PM4
    }
    // set_queue_properties_from_user.
    if (a.gpu_id != kGpuId || a.queue_percentage > 100 || a.queue_priority > 15 ||
        (a.ring_size != 0 && !std::has_single_bit(a.ring_size))) {
        err = EINVAL;
    }
    // The CP and trap handler report a queue's errors to the event the context-save area's
    // header names (hsakmttypes.h HsaUserContextSaveAreaHeader; the thunk writes it before
    // CREATE_QUEUE). SDMA queues have none.
    if (a.ctx_save_restore_address != 0 && a.ctx_save_restore_size >= sizeof(CtxSaveHeader)) {
        CtxSaveHeader header{};
        std::memcpy(&header, reinterpret_cast<const void*>(a.ctx_save_restore_address),
                    sizeof header);
        const std::lock_guard lock(mutex_);
        if (auto it = events_.find(header.error_event_id);
            header.error_event_id != 0 && it != events_.end()) {
            spec.error_event = it->second.agent;
        }
    }
    spec.node = hsa::kSoftGpuNode;
    spec.percentage = a.queue_percentage;
    spec.priority = agent_priority(a.queue_priority);
    spec.ring = a.ring_base_address;
    spec.ring_size = a.ring_size;
    spec.rptr = a.read_pointer_address;
    spec.wptr = a.write_pointer_address;
    const std::lock_guard lock(mutex_);
    uint32_t id = 0;
    while (err == 0 && id < kMaxQueues && queues_.contains(id)) {
        ++id;
    }
    if (err == 0 && id == kMaxQueues) {
        err = ENOSPC;
    }
    hsa::QueueId agent = 0;
    if (err == 0) {
        auto created = gpu_->create_queue(spec);
        if (created) {
            agent = created.value();
        } else {
            err = created.error().value();
        }
    }
    const std::string text = std::string("kfd CREATE_QUEUE type=") +
                             (spec.type == hsa::QueueType::sdma ? "SDMA" : "AQL") +
                             " ring=" + hex(a.ring_base_address) + " size=" + hex(a.ring_size) +
                             " rptr=" + hex(a.read_pointer_address) +
                             " wptr=" + hex(a.write_pointer_address);
    if (err != 0) {
        call_log().line(text + " -> " + result_text(err));
        return err;
    }
    start_evictor();
    queues_.emplace(id, Queue{agent, true, a.ring_base_address, a.ring_size, a.read_pointer_address,
                              a.write_pointer_address});
    a.queue_id = id;
    // SOC15: the doorbell's offset in the process's doorbell slice rides along.
    a.doorbell_offset = kMmapTypeDoorbell | (uint64_t{kGpuId} << 46) | (uint64_t{id} * 8);
    call_log().line(text + " -> ok queue=" + std::to_string(id));
    return 0;
}

int KfdProcess::destroy_queue(void* arg) {
    const auto& a = *static_cast<kfd_ioctl_destroy_queue_args*>(arg);
    const std::lock_guard lock(mutex_);
    auto it = queues_.find(a.queue_id);
    int err = 0;
    if (it == queues_.end()) {
        err = EINVAL;
    } else {
        if (it->second.running) {
            (void)gpu_->destroy_queue(it->second.agent);
        }
        queues_.erase(it);
    }
    call_log().line("kfd DESTROY_QUEUE queue=" + std::to_string(a.queue_id) + " -> " +
                    result_text(err));
    return err;
}

int KfdProcess::update_queue(void* arg) {
    const auto& a = *static_cast<kfd_ioctl_update_queue_args*>(arg);
    const std::lock_guard lock(mutex_);
    auto it = queues_.find(a.queue_id);
    int err = 0;
    if (it == queues_.end() || a.queue_percentage > 100 || a.queue_priority > 15) {
        err = EINVAL;
    } else if (a.ring_base_address != it->second.ring || a.ring_size != it->second.ring_size) {
        err = EINVAL;  // a moved ring: the emulated GPU keeps the one it was given
    }
    call_log().line("kfd UPDATE_QUEUE queue=" + std::to_string(a.queue_id) + " -> " +
                    result_text(err));
    return err;
}

// Called on the queue's own thread: the VM fault (or hang) is recorded and the other queues are
// stopped by the evictor thread (a queue cannot join itself; and mutex_ may be held by a
// caller that waits for this thread).
void KfdProcess::on_gpu_fault(const hsa::GpuFault& fault) {
    {
        const std::lock_guard lock(fault_mutex_);
        last_fault_ = fault;
        evict_all_ = true;
    }
    fault_cv_.notify_all();
}

void KfdProcess::start_evictor() {
    if (!evictor_.joinable()) {
        evictor_ = std::jthread([this](std::stop_token stop) { evict_on_faults(stop); });
    }
}

void KfdProcess::evict_on_faults(std::stop_token stop) {
    const InsideShim inside;
    for (;;) {
        hsa::GpuFault fault;
        {
            std::unique_lock lock(fault_mutex_);
            if (!fault_cv_.wait(lock, stop, [this] { return evict_all_; })) {
                return;
            }
            evict_all_ = false;
            fault = *last_fault_;
        }
        const std::lock_guard lock(mutex_);
        std::string stopped;
        for (auto& [id, queue] : queues_) {
            if (queue.running) {
                (void)gpu_->destroy_queue(queue.agent);
                queue.running = false;
                if (!stopped.empty()) {
                    stopped += ',';
                }
                stopped += std::to_string(id);
            }
        }
        // A hung queue: the kernel's reset of the GPU (amdgpu_device_gpu_recover ->
        // kfd_signal_reset_event) takes every queue and signals the HW_EXCEPTION events
        // only (cause GPU_HANG); a VM fault signals the MEMORY events.
        call_log().line(std::string(fault.hang ? "kfd GPU_RESET cause=hang"
                                               : "kfd VM_FAULT address=" + hex(fault.address)) +
                        " stops queues=" + (stopped.empty() ? "none" : stopped));
        const uint32_t signalled = fault.hang ? KFD_IOC_EVENT_HW_EXCEPTION : KFD_IOC_EVENT_MEMORY;
        for (const auto& [id, event] : events_) {
            if (event.type == signalled) {
                (void)gpu_->set_event(event.agent);
            }
        }
    }
}

}  // namespace xenhsa::kfd_shim
