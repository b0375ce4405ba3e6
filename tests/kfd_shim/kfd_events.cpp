// Events (kfd_events.c): the agent's event table has KFD's semantics; this is the ABI
// around it: ids, the signal page the thunk hands over, WAIT_EVENTS' array and results,
// and the memory-exception data of a VM fault.
#include <linux/kfd_ioctl.h>

#include <cerrno>
#include <cstring>
#include <vector>
#include <xenhsa/hsa/soft_agent.hpp>

#include "call_log.hpp"
#include "kfd_process.hpp"
#include "machine.hpp"

namespace xenhsa::kfd_shim {

namespace {

constexpr uint64_t kUnsignaledSlot = ~uint64_t{0};  // UNSIGNALED_EVENT_SLOT
constexpr uint32_t kMaxWaitEvents = 32;             // the agent's mask is 32 bits
constexpr uint32_t kTimeoutInfinite = 0xffffffffu;  // kfd_events.h KFD_EVENT_TIMEOUT_INFINITE

bool cpu_can_signal(uint32_t type) { return type == KFD_IOC_EVENT_SIGNAL; }

}  // namespace

int KfdProcess::create_event(void* arg) {
    auto& a = *static_cast<kfd_ioctl_create_event_args*>(arg);
    const std::lock_guard lock(mutex_);
    int err = 0;
    if (a.event_type > KFD_IOC_EVENT_MEMORY) {
        err = EINVAL;
    } else if (a.event_page_offset != 0) {
        // kfd_kmap_event_page: the signal page is a BO of this process, given once.
        const Bo* page = find_bo(a.event_page_offset);
        if (events_page_ != 0 || page == nullptr || page->kind == Kind::userptr ||
            page->size < KFD_SIGNAL_EVENT_LIMIT * 8) {
            err = EINVAL;
        } else {
            events_page_ = a.event_page_offset;
        }
    }
    hsa::EventInfo info{};
    if (err == 0) {
        hsa::EventSpec spec;
        // A memory event is the evictor's to set once the queues are stopped (the kernel
        // evicts the process's queues before it signals the VM fault), not the agent's.
        spec.type = a.event_type == KFD_IOC_EVENT_MEMORY ? KFD_IOC_EVENT_SIGNAL : a.event_type;
        spec.node = hsa::kSoftGpuNode;
        spec.manual_reset = a.auto_reset == 0;
        auto created = gpu_->create_event(spec);
        if (created) {
            info = created.value();
        } else {
            err = created.error().value();
        }
    }
    if (err == 0) {
        events_.emplace(info.event_id, Event{info.id, a.event_type});
        a.event_id = info.event_id;
        a.event_trigger_data = info.event_id;
        if (a.event_type == KFD_IOC_EVENT_SIGNAL) {
            a.event_slot_index = info.event_id;
            a.event_page_offset = kMmapTypeEvents;
            const Bo* page = events_page_ == 0 ? nullptr : find_bo(events_page_);
            if (page != nullptr && info.event_id < KFD_SIGNAL_EVENT_LIMIT) {
                auto* slots = reinterpret_cast<uint64_t*>(page->va);
                __atomic_store_n(&slots[info.event_id], kUnsignaledSlot, __ATOMIC_RELEASE);
            }
        }
    }
    call_log().line("kfd CREATE_EVENT type=" + std::to_string(a.event_type) +
                    " auto_reset=" + std::to_string(a.auto_reset) + " -> " + result_text(err) +
                    (err == 0 ? " event=" + std::to_string(a.event_id) : ""));
    return err;
}

int KfdProcess::destroy_event(void* arg) {
    const auto& a = *static_cast<kfd_ioctl_destroy_event_args*>(arg);
    hsa::EventId agent = 0;
    {
        const std::lock_guard lock(mutex_);
        auto it = events_.find(a.event_id);
        if (it != events_.end()) {
            agent = it->second.agent;
            events_.erase(it);
        }
    }
    const int err = agent == 0 ? EINVAL : 0;
    if (agent != 0) {
        (void)gpu_->destroy_event(agent);  // ends its waits (outside mutex_)
    }
    call_log().line("kfd DESTROY_EVENT event=" + std::to_string(a.event_id) + " -> " +
                    result_text(err));
    return err;
}

int KfdProcess::set_event(void* arg) {
    const auto& a = *static_cast<kfd_ioctl_set_event_args*>(arg);
    const std::lock_guard lock(mutex_);
    auto it = events_.find(a.event_id);
    const int err = it == events_.end() || !cpu_can_signal(it->second.type)
                        ? EINVAL
                        : (gpu_->set_event(it->second.agent) ? 0 : EINVAL);
    call_log().line("kfd SET_EVENT event=" + std::to_string(a.event_id) + " -> " +
                    result_text(err));
    return err;
}

int KfdProcess::reset_event(void* arg) {
    const auto& a = *static_cast<kfd_ioctl_reset_event_args*>(arg);
    const std::lock_guard lock(mutex_);
    auto it = events_.find(a.event_id);
    const int err = it == events_.end() || !cpu_can_signal(it->second.type)
                        ? EINVAL
                        : (gpu_->reset_event(it->second.agent) ? 0 : EINVAL);
    call_log().line("kfd RESET_EVENT event=" + std::to_string(a.event_id) + " -> " +
                    result_text(err));
    return err;
}

int KfdProcess::wait_events(void* arg) {
    auto& a = *static_cast<kfd_ioctl_wait_events_args*>(arg);
    auto* data = reinterpret_cast<kfd_event_data*>(a.events_ptr);
    if (data == nullptr || a.num_events == 0 || a.num_events > kMaxWaitEvents) {
        return EINVAL;
    }
    std::vector<hsa::EventId> ids(a.num_events);
    std::vector<uint32_t> types(a.num_events);
    {
        const std::lock_guard lock(mutex_);
        for (uint32_t i = 0; i < a.num_events; ++i) {
            auto it = events_.find(data[i].event_id);
            if (it == events_.end()) {
                return EINVAL;
            }
            ids[i] = it->second.agent;
            types[i] = it->second.type;
        }
    }
    // Blocks without mutex_: other calls (a SET_EVENT, a DESTROY_QUEUE) go on meanwhile.
    const uint32_t timeout = a.timeout == kTimeoutInfinite ? XENHSA_WAIT_INFINITE : a.timeout;
    auto fired = gpu_->wait_events(ids, a.wait_for_all != 0, timeout);
    if (!fired) {
        a.wait_result = fired.error() == std::errc::timed_out ? KFD_IOC_WAIT_RESULT_TIMEOUT
                                                              : KFD_IOC_WAIT_RESULT_FAIL;
        return 0;
    }
    a.wait_result = KFD_IOC_WAIT_RESULT_COMPLETE;
    std::optional<hsa::GpuFault> fault;
    {
        const std::lock_guard lock(fault_mutex_);
        fault = last_fault_;
    }
    for (uint32_t i = 0; i < a.num_events; ++i) {
        if ((fired.value() & (1u << i)) == 0 || !fault) {
            continue;
        }
        if (types[i] == KFD_IOC_EVENT_MEMORY && !fault->hang) {
            auto& m = data[i].memory_exception_data;
            std::memset(&m, 0, sizeof m);
            m.failure.NotPresent = 1;
            m.va = fault->address;
            m.gpu_id = kGpuId;
        } else if (types[i] == KFD_IOC_EVENT_HW_EXCEPTION && fault->hang) {
            auto& h = data[i].hw_exception_data;  // kfd_signal_reset_event's
            std::memset(&h, 0, sizeof h);
            h.reset_type = KFD_HW_EXCEPTION_WHOLE_GPU_RESET;
            h.reset_cause = KFD_HW_EXCEPTION_GPU_HANG;
            h.memory_lost = 1;
            h.gpu_id = kGpuId;
        }
    }
    return 0;
}

}  // namespace xenhsa::kfd_shim
