// The fault thread: KFD's MEMORY and HW_EXCEPTION events -> GpuFault (see the comment
// block in hsakmt_device.hpp for what is and is not wired).
#include <spdlog/spdlog.h>

#include <vector>

#include "hsakmt_device.hpp"

namespace xenhsa::hsa::kmt {

namespace {

HsaEvent* create_manual_event(HSA_EVENTTYPE type) noexcept {
    HsaEventDescriptor desc{};
    desc.EventType = type;
    desc.NodeId = 0;
    HsaEvent* event = nullptr;
    if (hsaKmtCreateEvent(&desc, true, false, &event) != HSAKMT_STATUS_SUCCESS) {
        return nullptr;
    }
    return event;
}

}  // namespace

bool poll_event(HsaEvent* event) noexcept {
    return hsaKmtWaitOnEvent(event, 0) == HSAKMT_STATUS_SUCCESS;
}

// The fault thread starts with the first handler, not at open: a backend worker opens its
// device before it confines itself, and a thread that existed then would run unconfined.
void HsakmtDevice::set_fault_handler(FaultHandler handler) {
    const bool start = handler && !fault_thread_started_;
    {
        std::lock_guard lock(fault_mutex_);
        fault_handler_ = std::move(handler);
    }
    if (start) {
        fault_thread_started_ = true;
        start_fault_thread();
    }
}

void HsakmtDevice::start_fault_thread() {
    stop_event_ = create_manual_event(HSA_EVENTTYPE_SIGNAL);
    memory_event_ = create_manual_event(HSA_EVENTTYPE_MEMORY);
    exception_event_ = create_manual_event(HSA_EVENTTYPE_HW_EXCEPTION);
    if (stop_event_ == nullptr || memory_event_ == nullptr) {
        spdlog::warn(
            "hsakmt: cannot create the fault events; GPU faults will not be "
            "reported (queues still stop on a fault)");
        return;
    }
    if (exception_event_ == nullptr) {
        spdlog::info(
            "hsakmt: no HW_EXCEPTION event on this kernel; only VM faults are "
            "reported");
    }
    try {
        fault_thread_ = std::thread([this] { fault_loop(); });
    } catch (const std::system_error& e) {
        spdlog::warn("hsakmt: no fault thread ({}); GPU faults will not be reported", e.what());
    }
}

void HsakmtDevice::stop_fault_thread() noexcept {
    if (fault_thread_.joinable()) {
        hsaKmtSetEvent(stop_event_);
        fault_thread_.join();
    }
    for (HsaEvent** event : {&stop_event_, &memory_event_, &exception_event_}) {
        if (*event != nullptr) {
            hsaKmtDestroyEvent(*event);
            *event = nullptr;
        }
    }
}

void HsakmtDevice::fault_loop() noexcept {
    HsaEvent* events[3] = {stop_event_, memory_event_, exception_event_};
    const HSAuint32 count = exception_event_ != nullptr ? 3 : 2;
    for (;;) {
        const HSAKMT_STATUS s =
            hsaKmtWaitOnMultipleEvents(events, count, false, HSA_EVENTTIMEOUT_INFINITE);
        if (s != HSAKMT_STATUS_SUCCESS && s != HSAKMT_STATUS_WAIT_TIMEOUT) {
            spdlog::error(
                "hsakmt: fault thread wait failed (status {}); GPU faults will no "
                "longer be reported",
                static_cast<int>(s));
            return;
        }
        if (poll_event(stop_event_)) {
            return;
        }
        if (poll_event(memory_event_)) {
            // The thunk copies the fault data into the event when a wait sees it signaled.
            // Its structs are packed: fields are copied out, never bound to references.
            const HsaMemoryAccessFault& fault =
                memory_event_->EventData.EventData.MemoryAccessFault;
            const HSAuint32 node = fault.NodeId;
            const HSAuint64 address = fault.VirtualAddress;
            hsaKmtResetEvent(memory_event_);
            // ErrorType 3 (KFD_MEM_ERR_GPU_HANG): a hang's recovery, no fault address.
            const bool hang = fault.Failure.ErrorType == 3;
            spdlog::warn("hsakmt: GPU memory fault on node {} at {:#x}{}", node, address,
                         hang ? " (hang recovery)" : "");
            report_faults(false, node, address, hang);
        }
        if (exception_event_ != nullptr && poll_event(exception_event_)) {
            hsaKmtResetEvent(exception_event_);
            // KFD's reset of a hung GPU (kfd_signal_reset_event): every queue is gone.
            spdlog::warn("hsakmt: GPU hardware exception (reset)");
            report_faults(true, 0, 0, true);
        }
    }
}

void HsakmtDevice::report_faults(bool any_node, uint32_t node, Va address, bool hang) noexcept {
    std::vector<QueueId> stopped;
    try {
        std::lock_guard lock(mutex_);
        for (auto& [id, queue] : queues_) {
            if (!queue.faulted && (any_node || queue.node == node)) {
                queue.faulted = true;  // each queue reports its fault once
                stopped.push_back(id);
            }
        }
    } catch (const std::bad_alloc&) {
        spdlog::error("hsakmt: out of memory while reporting a GPU fault");
        return;
    }
    std::lock_guard lock(fault_mutex_);
    for (QueueId id : stopped) {
        if (fault_handler_) {
            try {
                fault_handler_(GpuFault{id, address, hang});
            } catch (...) {
                spdlog::error("hsakmt: the fault handler threw");
            }
        }
    }
}

}  // namespace xenhsa::hsa::kmt
