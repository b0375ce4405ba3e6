#include "strict_fake_device.hpp"

#include <xenhsa/proto/common.h>

#include <chrono>

namespace xenhsa::hsa::test {

namespace {

constexpr uint64_t kPageBytes = XENHSA_PAGE_SIZE;

bool page_range(Va va, uint64_t size) {
    return size != 0 && va % kPageBytes == 0 && size % kPageBytes == 0;
}

}  // namespace

const char* op_name(Op op) {
    switch (op) {
        case Op::alloc:
            return "alloc";
        case Op::free:
            return "free";
        case Op::register_user:
            return "register_user";
        case Op::deregister_user:
            return "deregister_user";
        case Op::map_to_gpu:
            return "map_to_gpu";
        case Op::unmap_from_gpu:
            return "unmap_from_gpu";
        case Op::create_queue:
            return "create_queue";
        case Op::destroy_queue:
            return "destroy_queue";
        case Op::ring_doorbell:
            return "ring_doorbell";
        case Op::create_event:
            return "create_event";
        case Op::destroy_event:
            return "destroy_event";
        case Op::set_event:
            return "set_event";
        case Op::reset_event:
            return "reset_event";
        case Op::wait_events:
            return "wait_events";
    }
    return "?";
}

void PrintTo(const Call& call, std::ostream* os) {
    *os << op_name(call.op) << "(0x" << std::hex << call.arg << std::dec << ")";
}

StrictFakeDevice::StrictFakeDevice() {
    // Recording must not allocate: the context's release paths are checked for that.
    calls_.reserve(1u << 16);
}

// --- topology: the context does not use it; a small fixed answer is enough.
Result<xenhsa_version_info> StrictFakeDevice::version() {
    return xenhsa_version_info{1, 0, XENHSA_PROTO_VERSION, XENHSA_GPU_BACKEND_NONE};
}
Result<xenhsa_system_props> StrictFakeDevice::system() { return xenhsa_system_props{}; }
Result<xenhsa_node_props> StrictFakeDevice::node(uint32_t) {
    return errc(std::errc::no_such_file_or_directory);
}
Result<xenhsa_mem_bank> StrictFakeDevice::mem_bank(uint32_t, uint32_t) {
    return errc(std::errc::no_such_file_or_directory);
}
Result<xenhsa_cache> StrictFakeDevice::cache(uint32_t, uint32_t) {
    return errc(std::errc::no_such_file_or_directory);
}
Result<xenhsa_io_link> StrictFakeDevice::io_link(uint32_t, uint32_t) {
    return errc(std::errc::no_such_file_or_directory);
}
Result<xenhsa_clock_counters> StrictFakeDevice::clock(uint32_t) {
    return errc(std::errc::no_such_file_or_directory);
}
Result<xenhsa_kernel_info> StrictFakeDevice::kernel(uint32_t) {
    return errc(std::errc::no_such_file_or_directory);
}

// --- bookkeeping
std::optional<std::error_code> StrictFakeDevice::enter(Op op, uint64_t arg) {
    calls_.push_back({op, arg});
    auto it = fail_next_.find(op);
    if (it != fail_next_.end()) {
        const std::errc error = it->second;
        fail_next_.erase(it);
        return errc(error);
    }
    return std::nullopt;
}

std::error_code StrictFakeDevice::violation(std::errc error, const std::string& what) {
    violations_.push_back(what);
    return errc(error);
}

bool StrictFakeDevice::used_by_queue(Va va) const {
    for (const auto& [id, queue] : queues_) {
        if (queue.memory.count(va) != 0) {
            return true;
        }
    }
    return false;
}

bool StrictFakeDevice::event_used_by_queue(EventId event) const {
    for (const auto& [id, queue] : queues_) {
        if (queue.spec.error_event == event) {
            return true;
        }
    }
    return false;
}

const Va* StrictFakeDevice::gpu_memory_holding(Va va, uint64_t len, uint32_t node) const {
    for (const auto& [start, mem] : memory_) {
        const bool on_node = node < 64 && (mem.node_mask >> node & 1u) != 0;
        if (on_node && va >= start && len <= mem.size && va - start <= mem.size - len) {
            return &start;
        }
    }
    return nullptr;
}

// --- memory
Result<void> StrictFakeDevice::alloc(uint32_t, Va va, uint64_t size, uint32_t) {
    std::lock_guard lock(mutex_);
    if (auto e = enter(Op::alloc, va)) {
        return *e;
    }
    if (!page_range(va, size)) {
        return violation(std::errc::invalid_argument, "alloc of an unaligned range");
    }
    for (const auto& [start, mem] : memory_) {
        if (va < start + mem.size && start < va + size) {
            return violation(std::errc::invalid_argument, "alloc overlaps memory");
        }
    }
    memory_[va] = Memory{size, false, false, 0};
    return boost::outcome_v2::success();
}

Result<void> StrictFakeDevice::free(Va va) {
    std::lock_guard lock(mutex_);
    if (auto e = enter(Op::free, va)) {
        return *e;
    }
    auto it = memory_.find(va);
    if (it == memory_.end() || it->second.user) {
        return violation(std::errc::no_such_file_or_directory, "free of no allocation");
    }
    if (used_by_queue(va)) {
        return violation(std::errc::device_or_resource_busy, "free of live queue memory");
    }
    if (it->second.node_mask != 0) {
        return violation(std::errc::device_or_resource_busy, "free of GPU-mapped memory");
    }
    memory_.erase(it);
    return boost::outcome_v2::success();
}

Result<void> StrictFakeDevice::register_user(Va va, uint64_t size, bool read_only) {
    std::lock_guard lock(mutex_);
    if (auto e = enter(Op::register_user, va)) {
        return *e;
    }
    if (!page_range(va, size)) {
        return violation(std::errc::invalid_argument, "register of an unaligned range");
    }
    if (memory_.count(va) != 0) {
        return violation(std::errc::device_or_resource_busy, "register twice at one address");
    }
    memory_[va] = Memory{size, true, read_only, 0};
    return boost::outcome_v2::success();
}

Result<void> StrictFakeDevice::deregister_user(Va va) {
    std::lock_guard lock(mutex_);
    if (auto e = enter(Op::deregister_user, va)) {
        return *e;
    }
    auto it = memory_.find(va);
    if (it == memory_.end() || !it->second.user) {
        return violation(std::errc::no_such_file_or_directory, "deregister of no registration");
    }
    if (used_by_queue(va)) {
        return violation(std::errc::device_or_resource_busy, "deregister of live queue memory");
    }
    if (it->second.node_mask != 0) {
        return violation(std::errc::device_or_resource_busy, "deregister of GPU-mapped memory");
    }
    memory_.erase(it);
    return boost::outcome_v2::success();
}

Result<void> StrictFakeDevice::map_to_gpu(Va va, uint64_t node_mask, bool read_only) {
    std::lock_guard lock(mutex_);
    if (auto e = enter(Op::map_to_gpu, va)) {
        return *e;
    }
    auto it = memory_.find(va);
    if (it == memory_.end()) {
        return violation(std::errc::no_such_file_or_directory, "map of unknown memory");
    }
    if (node_mask == 0) {
        return violation(std::errc::invalid_argument, "map to no node");
    }
    if (it->second.node_mask != 0) {
        return violation(std::errc::device_or_resource_busy, "map twice");
    }
    if (it->second.read_only && !read_only) {
        return violation(std::errc::permission_denied, "writable map of read-only memory");
    }
    it->second.node_mask = node_mask;
    it->second.read_only = it->second.read_only || read_only;
    return boost::outcome_v2::success();
}

Result<void> StrictFakeDevice::unmap_from_gpu(Va va) {
    std::lock_guard lock(mutex_);
    if (auto e = enter(Op::unmap_from_gpu, va)) {
        return *e;
    }
    auto it = memory_.find(va);
    if (it == memory_.end() || it->second.node_mask == 0) {
        return violation(std::errc::no_such_file_or_directory, "unmap of unmapped memory");
    }
    if (used_by_queue(va)) {
        return violation(std::errc::device_or_resource_busy, "unmap of live queue memory");
    }
    it->second.node_mask = 0;
    return boost::outcome_v2::success();
}

// --- queues
bool StrictFakeDevice::supports_queue_type(QueueType type) noexcept {
    std::lock_guard lock(mutex_);
    return type == QueueType::compute_aql || sdma_;
}

Result<QueueId> StrictFakeDevice::create_queue(const QueueSpec& spec) {
    std::lock_guard lock(mutex_);
    if (auto e = enter(Op::create_queue, spec.ring)) {
        return *e;
    }
    if (spec.type == QueueType::sdma && !sdma_) {
        return errc(std::errc::operation_not_supported);
    }
    const Va* ring = gpu_memory_holding(spec.ring, spec.ring_size, spec.node);
    const Va* rptr = gpu_memory_holding(spec.rptr, 8, spec.node);
    const Va* wptr = gpu_memory_holding(spec.wptr, 8, spec.node);
    if (ring == nullptr || rptr == nullptr || wptr == nullptr) {
        return violation(std::errc::bad_address, "queue memory not mapped to the GPU");
    }
    if (spec.error_event != 0 && events_.count(spec.error_event) == 0) {
        return violation(std::errc::no_such_file_or_directory, "queue with an unknown event");
    }
    const QueueId id = next_queue_++;
    queues_[id] = Queue{spec, {*ring, *rptr, *wptr}, 0};
    last_queue_ = id;
    return id;
}

Result<void> StrictFakeDevice::destroy_queue(QueueId queue) {
    std::lock_guard lock(mutex_);
    if (auto e = enter(Op::destroy_queue, queue)) {
        return *e;
    }
    if (queues_.erase(queue) == 0) {
        return violation(std::errc::no_such_file_or_directory, "destroy of an unknown queue");
    }
    return boost::outcome_v2::success();
}

Result<void> StrictFakeDevice::ring_doorbell(QueueId queue, uint64_t value) {
    std::lock_guard lock(mutex_);
    if (auto e = enter(Op::ring_doorbell, queue)) {
        return *e;
    }
    auto it = queues_.find(queue);
    if (it == queues_.end()) {
        return violation(std::errc::no_such_file_or_directory, "doorbell of an unknown queue");
    }
    it->second.doorbell = value;
    return boost::outcome_v2::success();
}

// --- events
Result<EventInfo> StrictFakeDevice::create_event(const EventSpec& spec) {
    std::lock_guard lock(mutex_);
    if (auto e = enter(Op::create_event, 0)) {
        return *e;
    }
    const EventId id = next_event_++;
    events_[id] = Event{spec.signaled, spec.manual_reset, 0};
    last_event_ = id;
    calls_.back().arg = id;
    return EventInfo{id, static_cast<uint32_t>(id), 0};
}

Result<void> StrictFakeDevice::destroy_event(EventId event) {
    std::lock_guard lock(mutex_);
    if (auto e = enter(Op::destroy_event, event)) {
        return *e;
    }
    auto it = events_.find(event);
    if (it == events_.end()) {
        return violation(std::errc::no_such_file_or_directory, "destroy of an unknown event");
    }
    if (it->second.waiters != 0) {
        return violation(std::errc::device_or_resource_busy, "destroy of an event being waited on");
    }
    if (event_used_by_queue(event)) {
        return violation(std::errc::device_or_resource_busy, "destroy of a live queue's event");
    }
    events_.erase(it);
    return boost::outcome_v2::success();
}

Result<void> StrictFakeDevice::set_event(EventId event) {
    std::lock_guard lock(mutex_);
    if (auto e = enter(Op::set_event, event)) {
        return *e;
    }
    auto it = events_.find(event);
    if (it == events_.end()) {
        return violation(std::errc::no_such_file_or_directory, "set of an unknown event");
    }
    it->second.signaled = true;
    changed_.notify_all();
    return boost::outcome_v2::success();
}

Result<void> StrictFakeDevice::reset_event(EventId event) {
    std::lock_guard lock(mutex_);
    if (auto e = enter(Op::reset_event, event)) {
        return *e;
    }
    auto it = events_.find(event);
    if (it == events_.end()) {
        return violation(std::errc::no_such_file_or_directory, "reset of an unknown event");
    }
    it->second.signaled = false;
    return boost::outcome_v2::success();
}

Result<uint32_t> StrictFakeDevice::wait_events(std::span<const EventId> events, bool all,
                                               uint32_t timeout_ms) {
    std::unique_lock lock(mutex_);
    if (auto e = enter(Op::wait_events, events.empty() ? 0 : events[0])) {
        return *e;
    }
    if (events.empty() || events.size() > 32) {
        return violation(std::errc::invalid_argument, "wait on no or too many events");
    }
    for (EventId id : events) {
        if (events_.count(id) == 0) {
            return violation(std::errc::no_such_file_or_directory, "wait on an unknown event");
        }
    }
    for (EventId id : events) {
        ++events_[id].waiters;
    }
    const uint32_t everything = events.size() == 32 ? ~0u : (1u << events.size()) - 1u;
    auto signaled = [&] {
        uint32_t mask = 0;
        for (size_t i = 0; i < events.size(); ++i) {
            if (events_[events[i]].signaled) {
                mask |= 1u << i;
            }
        }
        return mask;
    };
    auto ready = [&] { return !hold_waits_ && (all ? signaled() == everything : signaled() != 0); };
    bool ok = true;
    if (timeout_ms == XENHSA_WAIT_INFINITE) {
        changed_.wait(lock, ready);
    } else {
        ok = changed_.wait_for(lock, std::chrono::milliseconds(timeout_ms), ready);
    }
    const uint32_t mask = ok ? signaled() : 0;
    for (size_t i = 0; i < events.size(); ++i) {
        Event& ev = events_[events[i]];
        --ev.waiters;
        if ((mask >> i & 1u) != 0 && !ev.manual_reset) {
            ev.signaled = false;  // the wait that saw an auto-reset event consumes it
        }
    }
    changed_.notify_all();
    if (!ok) {
        return errc(std::errc::timed_out);
    }
    return mask;
}

void StrictFakeDevice::hold_waits(bool hold) {
    std::lock_guard lock(mutex_);
    hold_waits_ = hold;
    changed_.notify_all();
}

void StrictFakeDevice::set_fault_handler(FaultHandler handler) {
    std::lock_guard lock(mutex_);
    fault_handler_ = std::move(handler);
}

// --- test controls
std::vector<Call> StrictFakeDevice::calls() const {
    std::lock_guard lock(mutex_);
    return calls_;
}

std::vector<uint64_t> StrictFakeDevice::calls_of(Op op) const {
    std::lock_guard lock(mutex_);
    std::vector<uint64_t> out;
    for (const Call& call : calls_) {
        if (call.op == op) {
            out.push_back(call.arg);
        }
    }
    return out;
}

void StrictFakeDevice::clear_calls() {
    std::lock_guard lock(mutex_);
    calls_.clear();
}

std::vector<std::string> StrictFakeDevice::violations() const {
    std::lock_guard lock(mutex_);
    return violations_;
}

void StrictFakeDevice::fail_next(Op op, std::errc error) {
    std::lock_guard lock(mutex_);
    fail_next_[op] = error;
}

size_t StrictFakeDevice::memory_objects() const {
    std::lock_guard lock(mutex_);
    return memory_.size();
}

size_t StrictFakeDevice::gpu_mappings() const {
    std::lock_guard lock(mutex_);
    size_t n = 0;
    for (const auto& [va, mem] : memory_) {
        n += mem.node_mask != 0 ? 1 : 0;
    }
    return n;
}

size_t StrictFakeDevice::queues() const {
    std::lock_guard lock(mutex_);
    return queues_.size();
}

size_t StrictFakeDevice::events() const {
    std::lock_guard lock(mutex_);
    return events_.size();
}

size_t StrictFakeDevice::live_objects() const {
    return memory_objects() + gpu_mappings() + queues() + events();
}

bool StrictFakeDevice::registered(Va va) const {
    std::lock_guard lock(mutex_);
    return memory_.count(va) != 0;
}

bool StrictFakeDevice::mapped(Va va) const {
    std::lock_guard lock(mutex_);
    auto it = memory_.find(va);
    return it != memory_.end() && it->second.node_mask != 0;
}

bool StrictFakeDevice::read_only_mapping(Va va) const {
    std::lock_guard lock(mutex_);
    auto it = memory_.find(va);
    return it != memory_.end() && it->second.node_mask != 0 && it->second.read_only;
}

bool StrictFakeDevice::has_event(EventId event) const {
    std::lock_guard lock(mutex_);
    return events_.count(event) != 0;
}

std::optional<QueueId> StrictFakeDevice::last_queue() const {
    std::lock_guard lock(mutex_);
    return last_queue_;
}

std::optional<EventId> StrictFakeDevice::last_event() const {
    std::lock_guard lock(mutex_);
    return last_event_;
}

std::optional<uint64_t> StrictFakeDevice::doorbell_value(QueueId queue) const {
    std::lock_guard lock(mutex_);
    auto it = queues_.find(queue);
    if (it == queues_.end()) {
        return std::nullopt;
    }
    return it->second.doorbell;
}

std::optional<QueueType> StrictFakeDevice::queue_type(QueueId queue) const {
    std::lock_guard lock(mutex_);
    auto it = queues_.find(queue);
    if (it == queues_.end()) {
        return std::nullopt;
    }
    return it->second.spec.type;
}

void StrictFakeDevice::set_sdma(bool supported) {
    std::lock_guard lock(mutex_);
    sdma_ = supported;
}

uint32_t StrictFakeDevice::waiting() const {
    std::lock_guard lock(mutex_);
    uint32_t n = 0;
    for (const auto& [id, ev] : events_) {
        n += ev.waiters;
    }
    return n;
}

void StrictFakeDevice::inject_fault(QueueId queue, Va address) {
    FaultHandler handler;
    {
        std::lock_guard lock(mutex_);
        handler = fault_handler_;
    }
    if (handler) {
        handler(GpuFault{queue, address});
    }
}

}  // namespace xenhsa::hsa::test
