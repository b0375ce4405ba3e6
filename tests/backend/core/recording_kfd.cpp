#include "recording_kfd.hpp"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

namespace xenhsa::backend::core::testing {
namespace {

constexpr uint32_t kNodes = 2;
constexpr uint32_t kGpuNode = 1;

std::string hex(uint64_t v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%#llx", static_cast<unsigned long long>(v));
    return buf;
}

std::error_code e(std::errc code) { return std::make_error_code(code); }

}  // namespace

void RecordingKfd::record(std::string entry) {
    if (log_ != nullptr) {
        log_->add(std::move(entry));
    }
}

hsa::Result<xenhsa_version_info> RecordingKfd::version() {
    xenhsa_version_info v{};
    v.kfd_major = 1;
    v.kfd_minor = 14;
    v.proto_version = 99;  // the backend must put its own protocol version here
    v.gpu_backend = XENHSA_GPU_BACKEND_SOFT;
    return v;
}

hsa::Result<xenhsa_system_props> RecordingKfd::system() {
    xenhsa_system_props s{};
    s.num_nodes = kNodes;
    s.platform_oem = 0x414d44;
    s.xnack_enabled = 1;  // the backend must report 0
    s.num_kernels = 1;
    return s;
}

hsa::Result<xenhsa_node_props> RecordingKfd::node(uint32_t node) {
    if (node >= kNodes) {
        return e(std::errc::no_such_file_or_directory);
    }
    xenhsa_node_props p{};
    if (node == kGpuNode) {
        p.num_fcompute_cores = 64;
        p.num_memory_banks = 2;
        p.num_caches = 1;
        p.num_io_links = 1;
        p.local_mem_size = 0;  // as Linux >= 5.14 reports a dGPU: its memory is in its banks
        std::memset(p.marketing_name, 'M', sizeof p.marketing_name);  // not terminated
        std::memset(p.amd_name, 'A', sizeof p.amd_name);
    } else {
        p.num_cpu_cores = 4;
        p.num_memory_banks = 1;
    }
    return p;
}

hsa::Result<xenhsa_mem_bank> RecordingKfd::mem_bank(uint32_t node, uint32_t index) {
    if (node >= kNodes) {
        return e(std::errc::no_such_file_or_directory);
    }
    xenhsa_mem_bank b{};
    b.heap_type = node == kGpuNode ? XENHSA_HEAP_FB_PUBLIC : XENHSA_HEAP_SYSTEM;
    b.size_bytes = (index + 1) * (1ull << 20);
    return b;
}

hsa::Result<xenhsa_cache> RecordingKfd::cache(uint32_t node, uint32_t) {
    if (node >= kNodes) {
        return e(std::errc::no_such_file_or_directory);
    }
    xenhsa_cache c{};
    c.level = 2;
    return c;
}

hsa::Result<xenhsa_io_link> RecordingKfd::io_link(uint32_t node, uint32_t) {
    if (node >= kNodes) {
        return e(std::errc::no_such_file_or_directory);
    }
    xenhsa_io_link l{};
    l.node_from = node;
    return l;
}

hsa::Result<xenhsa_clock_counters> RecordingKfd::clock(uint32_t node) {
    if (node >= kNodes) {
        return e(std::errc::no_such_file_or_directory);
    }
    xenhsa_clock_counters c{};
    c.system_clock_frequency_hz = 1000000000;
    return c;
}

hsa::Result<xenhsa_kernel_info> RecordingKfd::kernel(uint32_t index) {
    if (index >= 1) {
        return e(std::errc::no_such_file_or_directory);
    }
    xenhsa_kernel_info k{};
    k.kernel_object = 0x1000;
    std::memset(k.name, 'k', sizeof k.name);  // not terminated
    return k;
}

hsa::Result<void> RecordingKfd::alloc(uint32_t node, hsa::Va va, uint64_t size, uint32_t) {
    std::lock_guard<std::mutex> hold(lock_);
    if (node >= kNodes || memory_.count(va) != 0) {
        return e(std::errc::invalid_argument);
    }
    memory_[va] = Memory{size, true, 0};
    if (log_ != nullptr) record("alloc " + hex(va));
    return boost::outcome_v2::success();
}

bool RecordingKfd::used_by_queue(hsa::Va va) const {
    const auto it = memory_.find(va);
    if (it == memory_.end()) {
        return false;
    }
    const uint64_t end = va + it->second.size;
    for (const auto& [id, q] : queues_) {
        if ((q.ring >= va && q.ring < end) || (q.rptr >= va && q.rptr < end) ||
            (q.wptr >= va && q.wptr < end)) {
            return true;
        }
    }
    return false;
}

hsa::Result<void> RecordingKfd::free(hsa::Va va) {
    std::lock_guard<std::mutex> hold(lock_);
    auto it = memory_.find(va);
    if (it == memory_.end() || !it->second.alloc) {
        return e(std::errc::invalid_argument);
    }
    if (used_by_queue(va) || it->second.gpu_nodes != 0) {
        return e(std::errc::device_or_resource_busy);
    }
    memory_.erase(it);
    if (log_ != nullptr) record("free " + hex(va));
    return boost::outcome_v2::success();
}

hsa::Result<void> RecordingKfd::register_user(hsa::Va va, uint64_t size, bool read_only) {
    std::lock_guard<std::mutex> hold(lock_);
    if (memory_.count(va) != 0) {
        return e(std::errc::invalid_argument);
    }
    if (unpinnable_.count(va) != 0) {
        return e(std::errc::bad_address);
    }
    memory_[va] = Memory{size, false, 0};
    if (log_ != nullptr)
        record(std::string("register_user ") + hex(va) + (read_only ? " ro" : " rw"));
    return boost::outcome_v2::success();
}

hsa::Result<void> RecordingKfd::deregister_user(hsa::Va va) {
    std::lock_guard<std::mutex> hold(lock_);
    auto it = memory_.find(va);
    if (it == memory_.end() || it->second.alloc) {
        return e(std::errc::invalid_argument);
    }
    if (used_by_queue(va) || it->second.gpu_nodes != 0) {
        return e(std::errc::device_or_resource_busy);
    }
    memory_.erase(it);
    if (log_ != nullptr) record("deregister_user " + hex(va));
    return boost::outcome_v2::success();
}

hsa::Result<void> RecordingKfd::map_to_gpu(hsa::Va va, uint64_t node_mask, bool) {
    std::lock_guard<std::mutex> hold(lock_);
    auto it = memory_.find(va);
    if (it == memory_.end()) {
        return e(std::errc::invalid_argument);
    }
    it->second.gpu_nodes = node_mask;
    if (log_ != nullptr) record("map_to_gpu " + hex(va));
    return boost::outcome_v2::success();
}

hsa::Result<void> RecordingKfd::unmap_from_gpu(hsa::Va va) {
    std::lock_guard<std::mutex> hold(lock_);
    auto it = memory_.find(va);
    if (it == memory_.end() || it->second.gpu_nodes == 0) {
        return e(std::errc::invalid_argument);
    }
    if (used_by_queue(va)) {
        return e(std::errc::device_or_resource_busy);
    }
    it->second.gpu_nodes = 0;
    if (log_ != nullptr) record("unmap_from_gpu " + hex(va));
    return boost::outcome_v2::success();
}

bool RecordingKfd::supports_queue_type(hsa::QueueType type) noexcept {
    std::lock_guard<std::mutex> hold(lock_);
    return type == hsa::QueueType::compute_aql || sdma_;
}

hsa::Result<hsa::QueueId> RecordingKfd::create_queue(const hsa::QueueSpec& spec) {
    std::lock_guard<std::mutex> hold(lock_);
    if (spec.type == hsa::QueueType::sdma && !sdma_) {
        return e(std::errc::operation_not_supported);
    }
    const hsa::QueueId id = next_queue_++;
    queues_[id] = spec;
    last_queue_ = id;
    if (log_ != nullptr) record("create_queue " + std::to_string(id));
    return id;
}

hsa::Result<void> RecordingKfd::destroy_queue(hsa::QueueId queue) {
    std::lock_guard<std::mutex> hold(lock_);
    if (queues_.erase(queue) == 0) {
        return e(std::errc::invalid_argument);
    }
    if (log_ != nullptr) record("destroy_queue " + std::to_string(queue));
    return boost::outcome_v2::success();
}

hsa::Result<void> RecordingKfd::ring_doorbell(hsa::QueueId queue, uint64_t value) {
    std::lock_guard<std::mutex> hold(lock_);
    if (queues_.count(queue) == 0) {
        return e(std::errc::invalid_argument);
    }
    last_doorbell_ = value;
    taken_ += per_doorbell_.value_or(0);
    if (log_ != nullptr) record("doorbell " + std::to_string(queue) + " " + std::to_string(value));
    return boost::outcome_v2::success();
}

hsa::Result<hsa::EventInfo> RecordingKfd::create_event(const hsa::EventSpec& spec) {
    std::lock_guard<std::mutex> hold(lock_);
    const hsa::EventId id = next_event_++;
    events_[id] = Event{spec.manual_reset, spec.signaled};
    hsa::EventInfo info;
    info.id = id;
    info.event_id = static_cast<uint32_t>(id);
    return info;
}

hsa::Result<void> RecordingKfd::destroy_event(hsa::EventId event) {
    std::lock_guard<std::mutex> hold(lock_);
    if (events_.erase(event) == 0) {
        return e(std::errc::invalid_argument);
    }
    if (log_ != nullptr) record("destroy_event " + std::to_string(event));
    changed_.notify_all();
    return boost::outcome_v2::success();
}

hsa::Result<void> RecordingKfd::set_event(hsa::EventId event) {
    std::lock_guard<std::mutex> hold(lock_);
    auto it = events_.find(event);
    if (it == events_.end()) {
        return e(std::errc::invalid_argument);
    }
    it->second.signaled = true;
    changed_.notify_all();
    return boost::outcome_v2::success();
}

hsa::Result<void> RecordingKfd::reset_event(hsa::EventId event) {
    std::lock_guard<std::mutex> hold(lock_);
    auto it = events_.find(event);
    if (it == events_.end()) {
        return e(std::errc::invalid_argument);
    }
    it->second.signaled = false;
    return boost::outcome_v2::success();
}

hsa::Result<uint32_t> RecordingKfd::wait_events(std::span<const hsa::EventId> events, bool all,
                                                uint32_t timeout_ms) {
    std::unique_lock<std::mutex> hold(lock_);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
        uint32_t mask = 0;
        for (std::size_t i = 0; i < events.size(); ++i) {
            auto it = events_.find(events[i]);
            if (it == events_.end()) {
                return e(std::errc::invalid_argument);
            }
            if (it->second.signaled) {
                mask |= 1u << i;
            }
        }
        const uint32_t full = events.size() >= 32 ? ~0u : (1u << events.size()) - 1;
        if (mask != 0 && (!all || mask == full)) {
            for (std::size_t i = 0; i < events.size(); ++i) {
                auto& ev = events_[events[i]];
                if ((mask >> i & 1u) != 0 && !ev.manual_reset) {
                    ev.signaled = false;
                }
            }
            return mask;
        }
        if (timeout_ms == XENHSA_WAIT_INFINITE) {
            changed_.wait(hold);
        } else if (changed_.wait_until(hold, deadline) == std::cv_status::timeout) {
            return e(std::errc::timed_out);
        }
    }
}

void RecordingKfd::set_fault_handler(FaultHandler handler) {
    std::lock_guard<std::mutex> hold(lock_);
    fault_handler_ = std::move(handler);
}

void RecordingKfd::fault(hsa::QueueId queue, hsa::Va address, bool hang) {
    FaultHandler handler;
    {
        std::lock_guard<std::mutex> hold(lock_);
        handler = fault_handler_;
    }
    if (handler) {
        handler(hsa::GpuFault{queue, address, hang});
    }
}

std::size_t RecordingKfd::registered() const {
    std::lock_guard<std::mutex> hold(lock_);
    std::size_t n = 0;
    for (const auto& [va, m] : memory_) {
        n += m.alloc ? 0 : 1;
    }
    return n;
}

std::size_t RecordingKfd::allocations() const {
    std::lock_guard<std::mutex> hold(lock_);
    std::size_t n = 0;
    for (const auto& [va, m] : memory_) {
        n += m.alloc ? 1 : 0;
    }
    return n;
}

std::size_t RecordingKfd::live_queues() const {
    std::lock_guard<std::mutex> hold(lock_);
    return queues_.size();
}

hsa::QueueId RecordingKfd::last_queue() const {
    std::lock_guard<std::mutex> hold(lock_);
    return last_queue_;
}

std::optional<uint64_t> RecordingKfd::packets_taken() const noexcept {
    std::lock_guard<std::mutex> hold(lock_);
    if (!per_doorbell_) {
        return std::nullopt;
    }
    return taken_;
}

void RecordingKfd::take_packets(std::optional<uint64_t> per_doorbell) {
    std::lock_guard<std::mutex> hold(lock_);
    per_doorbell_ = per_doorbell;
}

uint64_t RecordingKfd::last_doorbell() const {
    std::lock_guard<std::mutex> hold(lock_);
    return last_doorbell_;
}

hsa::QueueType RecordingKfd::last_queue_type() const {
    std::lock_guard<std::mutex> hold(lock_);
    auto it = queues_.find(last_queue_);
    return it != queues_.end() ? it->second.type : hsa::QueueType::compute_aql;
}

void RecordingKfd::refuse_pin_at(hsa::Va va) {
    std::lock_guard<std::mutex> hold(lock_);
    unpinnable_.insert(va);
}

void RecordingKfd::set_sdma(bool supported) {
    std::lock_guard<std::mutex> hold(lock_);
    sdma_ = supported;
}

}  // namespace xenhsa::backend::core::testing
