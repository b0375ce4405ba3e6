#include "fault_relay.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <exception>

namespace xenhsa::hsa::detail {

FaultRelay::FaultRelay(uint32_t max_queues) { live_.reserve(max_queues); }

void FaultRelay::set_callback(GpuContext::QueueLost callback) {
    std::lock_guard lock(mutex_);
    callback_ = std::move(callback);
}

void FaultRelay::add(QueueId queue, Handle handle) noexcept {
    std::lock_guard lock(mutex_);
    if (live_.size() < live_.capacity()) {
        live_.push_back(Live{queue, handle, false});
    }
}

bool FaultRelay::remove(QueueId queue) noexcept {
    std::lock_guard lock(mutex_);
    auto it = std::find_if(live_.begin(), live_.end(),
                           [queue](const Live& entry) { return entry.queue == queue; });
    if (it == live_.end()) {
        return true;
    }
    const bool unreported = !it->reported;
    *it = live_.back();
    live_.pop_back();
    return unreported;
}

void FaultRelay::on_fault(const GpuFault& fault) noexcept {
    std::lock_guard lock(mutex_);
    auto it = std::find_if(live_.begin(), live_.end(),
                           [&fault](const Live& entry) { return entry.queue == fault.queue; });
    if (it != live_.end() && !it->reported) {
        it->reported = true;
        call(it->handle, fault.address, fault.hang);
    }
}

void FaultRelay::report(Handle handle, Va address) noexcept {
    std::lock_guard lock(mutex_);
    call(handle, address, false);
}

void FaultRelay::call(Handle handle, Va address, bool hang) noexcept {
    if (!callback_) {
        return;
    }
    try {
        callback_(handle, address, hang);
    } catch (const std::exception& e) {
        spdlog::error("gpu context: QueueLost callback threw: {}", e.what());
    } catch (...) {
        spdlog::error("gpu context: QueueLost callback threw");
    }
}

}  // namespace xenhsa::hsa::detail
