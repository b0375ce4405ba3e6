#include "agent.hpp"

#include <xenhsa/proto/common.h>
#include <xenhsa/proto/event.h>
#include <xenhsa/proto/memory.h>
#include <xenhsa/proto/queue.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <new>
#include <system_error>

#include "kernels.hpp"

namespace xenhsa::hsa {

namespace {

constexpr uint64_t kGpuNodeBit = uint64_t{1} << kSoftGpuNode;

// Exceptions never cross the seam: what the parts throw becomes an errno value.
template <class F>
auto guarded(F&& body) noexcept -> decltype(body()) {
    try {
        return body();
    } catch (const std::bad_alloc&) {
        return errc(std::errc::not_enough_memory);
    } catch (const std::system_error&) {  // no thread for a queue
        return errc(std::errc::not_enough_memory);
    } catch (...) {
        return errc(std::errc::io_error);
    }
}

SoftAgentOptions clamped(SoftAgentOptions options) {
    using std::chrono::microseconds;
    using std::chrono::milliseconds;
    options.worker_threads = std::clamp<uint32_t>(options.worker_threads, 1, 256);
    options.max_inflight_dispatches = std::max<uint32_t>(options.max_inflight_dispatches, 1);
    options.sdma_engines = std::clamp<uint32_t>(options.sdma_engines, 1, kMaxSdmaEngines);
    options.work_slice = std::clamp(options.work_slice, microseconds(50), microseconds(100'000));
    options.inline_max_workgroups = std::min(
        options.inline_max_workgroups.value_or(options.worker_threads), kInlineMaxWorkgroupsLimit);
    options.idle_spin_time =
        std::clamp(options.idle_spin_time, microseconds(0), microseconds(1000));
    options.idle_backoff_min = std::max(options.idle_backoff_min, microseconds(1));
    options.idle_backoff_max = std::max(options.idle_backoff_max, options.idle_backoff_min);
    options.idle_block_after = std::max(options.idle_block_after, milliseconds(0));
    options.idle_block_recheck = std::max(options.idle_block_recheck, milliseconds(1));
    if (!parse_soft_gfx(soft_gfx_name(options.gfx))) {
        options.gfx = SoftGfx::gfx900;
    }
    return options;
}

soft::IdlePolicy idle_policy(const SoftAgentOptions& options) {
    return soft::IdlePolicy{options.idle_spin,          options.idle_backoff_min,
                            options.idle_backoff_max,   options.idle_block_after,
                            options.idle_block_recheck, options.idle_spin_time};
}

bool pointer_ok(Va va) noexcept {
    return va != 0 && va % sizeof(uint64_t) == 0 && va < XENHSA_VA_LIMIT;
}

bool overlaps(Va a, uint64_t a_size, Va b, uint64_t b_size) noexcept {
    return a < b + b_size && b < a + a_size;
}

// Any of the ring, read and write pointer of `a` overlaps any of `b`'s.
bool queue_memory_overlaps(const soft::QueueMemory& a, const soft::QueueMemory& b) noexcept {
    const std::array<std::pair<Va, uint64_t>, 3> as{
        {{a.ring, a.ring_size}, {a.rptr, sizeof(uint64_t)}, {a.wptr, sizeof(uint64_t)}}};
    const std::array<std::pair<Va, uint64_t>, 3> bs{
        {{b.ring, b.ring_size}, {b.rptr, sizeof(uint64_t)}, {b.wptr, sizeof(uint64_t)}}};
    for (const auto& [va, size] : as) {
        for (const auto& [vb, sb] : bs) {
            if (overlaps(va, size, vb, sb)) {
                return true;
            }
        }
    }
    return false;
}

bool queue_spec_ok(const QueueSpec& spec) noexcept {
    const bool type_ok = spec.type == QueueType::compute_aql || spec.type == QueueType::sdma;
    const bool ring_size_ok = spec.ring_size >= XENHSA_QUEUE_RING_MIN &&
                              spec.ring_size <= XENHSA_QUEUE_RING_MAX &&
                              (spec.ring_size & (spec.ring_size - 1)) == 0;
    return type_ok && spec.node == kSoftGpuNode && spec.percentage <= 100 &&
           spec.priority >= XENHSA_QUEUE_PRIORITY_MIN &&
           spec.priority <= XENHSA_QUEUE_PRIORITY_MAX && ring_size_ok && spec.ring != 0 &&
           xenhsa_va_range_ok(spec.ring, spec.ring_size) != 0 && pointer_ok(spec.rptr) &&
           pointer_ok(spec.wptr) && !overlaps(spec.rptr, 8, spec.ring, spec.ring_size) &&
           !overlaps(spec.wptr, 8, spec.ring, spec.ring_size) && spec.rptr != spec.wptr;
}

}  // namespace

SoftAgent::SoftAgent(const SoftAgentOptions& options)
    : options_(clamped(options)),
      topology_(options_),
      events_(options_.max_events),
      memory_(kGpuNodeBit, options_.local_mem_size),
      pool_(options_.worker_threads, options_.work_slice),
      sdma_engines_(options_.sdma_engines, options_.work_slice),
      shared_{memory_,
              events_,
              signals_,
              pool_,
              *this,
              kicks_,
              sdma_engines_,
              packets_taken_,
              options_.max_inflight_dispatches,
              idle_policy(options_),
              *options_.inline_max_workgroups} {}

SoftAgent::~SoftAgent() {
    std::map<QueueId, std::unique_ptr<soft::Queue>> queues;
    {
        std::lock_guard lock(queues_mutex_);
        queues.swap(queues_);
    }
    for (auto& [id, queue] : queues) {
        queue->stop();
        memory_.release_queue_memory(queue->memory());
    }
    std::vector<std::thread> adopted;
    {
        std::lock_guard lock(adopted_mutex_);
        adopted.swap(adopted_);
    }
    for (auto& thread : adopted) {
        if (thread.get_id() == std::this_thread::get_id()) {
            thread.detach();  // a fault handler that destroys the whole agent
        } else {
            thread.join();
        }
    }
}

void SoftAgent::adopt_thread(std::thread thread) noexcept {
    std::lock_guard lock(adopted_mutex_);
    try {
        adopted_.push_back(std::move(thread));
    } catch (...) {  // no memory: the thread runs on unjoined, as it did before
        thread.detach();
    }
}

Result<xenhsa_version_info> SoftAgent::version() { return topology_.version(); }
Result<xenhsa_system_props> SoftAgent::system() { return topology_.system(); }
Result<xenhsa_node_props> SoftAgent::node(uint32_t node) { return topology_.node(node); }

Result<xenhsa_mem_bank> SoftAgent::mem_bank(uint32_t node, uint32_t index) {
    return topology_.mem_bank(node, index);
}

Result<xenhsa_cache> SoftAgent::cache(uint32_t node, uint32_t index) {
    return topology_.cache(node, index);
}

Result<xenhsa_io_link> SoftAgent::io_link(uint32_t node, uint32_t index) {
    return topology_.io_link(node, index);
}

Result<xenhsa_clock_counters> SoftAgent::clock(uint32_t node) { return topology_.clock(node); }

Result<xenhsa_tile_config> SoftAgent::tile_config(uint32_t node) {
    return topology_.tile_config(node);
}

Result<xenhsa_kernel_info> SoftAgent::kernel(uint32_t index) {
    if (index >= soft::builtin_kernels().size()) {
        return errc(std::errc::no_such_file_or_directory);
    }
    return soft::kernel_info(index);
}

Result<void> SoftAgent::alloc(uint32_t node, Va va, uint64_t size, uint32_t flags) {
    const bool device_local = (flags & XENHSA_ALLOC_DEVICE_LOCAL) != 0;
    if ((flags & ~XENHSA_ALLOC_FLAGS_ALL) != 0 || node >= soft::kNodeCount ||
        (device_local && node != kSoftGpuNode)) {
        return errc(std::errc::invalid_argument);
    }
    return guarded([&] {
        return memory_.alloc(va, size, device_local, (flags & XENHSA_ALLOC_READ_ONLY) != 0);
    });
}

Result<void> SoftAgent::free(Va va) {
    return guarded([&] { return memory_.free(va); });
}

Result<void> SoftAgent::register_user(Va va, uint64_t size, bool read_only) {
    return guarded([&] { return memory_.register_user(va, size, read_only); });
}

Result<void> SoftAgent::deregister_user(Va va) {
    return guarded([&] { return memory_.deregister_user(va); });
}

Result<void> SoftAgent::map_to_gpu(Va va, uint64_t node_mask, bool read_only) {
    return guarded([&] { return memory_.map_to_gpu(va, node_mask, read_only); });
}

Result<void> SoftAgent::unmap_from_gpu(Va va) {
    return guarded([&] { return memory_.unmap_from_gpu(va); });
}

bool SoftAgent::supports_queue_type(QueueType type) noexcept {
    return type == QueueType::compute_aql || type == QueueType::sdma;
}

Result<QueueId> SoftAgent::create_queue(const QueueSpec& spec) {
    if (!queue_spec_ok(spec)) {
        return errc(std::errc::invalid_argument);
    }
    if (spec.error_event != 0 && !events_.contains(spec.error_event)) {
        return errc(std::errc::no_such_file_or_directory);
    }
    return guarded([&] { return make_queue(spec); });
}

Result<QueueId> SoftAgent::make_queue(const QueueSpec& spec) {
    std::lock_guard lock(queues_mutex_);
    if (queues_.size() >= options_.max_queues) {
        return errc(std::errc::not_enough_memory);
    }
    const soft::QueueMemory memory{spec.ring, spec.ring_size, spec.rptr, spec.wptr};
    // Two processors on one ring would fetch, retire and write it twice over.
    for (const auto& [id, queue] : queues_) {
        if (queue && queue_memory_overlaps(memory, queue->memory())) {
            return errc(std::errc::device_or_resource_busy);
        }
    }
    auto held = memory_.hold_queue_memory(memory, kGpuNodeBit);
    if (!held) {
        return held.error();
    }
    try {
        const QueueId id = next_queue_;
        std::unique_ptr<soft::Queue> queue;
        if (spec.type == QueueType::sdma) {
            queue = std::make_unique<soft::SdmaQueue>(shared_, id, spec, held.value());
        } else {
            queue = std::make_unique<soft::AqlQueue>(shared_, id, spec, held.value());
        }
        auto& slot = queues_[id];
        try {
            queue->start();
        } catch (...) {
            queues_.erase(id);
            throw;
        }
        slot = std::move(queue);
        ++next_queue_;
        return id;
    } catch (...) {
        memory_.release_queue_memory(memory);
        throw;
    }
}

Result<void> SoftAgent::destroy_queue(QueueId id) {
    std::unique_ptr<soft::Queue> queue;
    {
        std::lock_guard lock(queues_mutex_);
        auto it = queues_.find(id);
        if (it == queues_.end()) {
            return errc(std::errc::no_such_file_or_directory);
        }
        queue = std::move(it->second);
        queues_.erase(it);
    }
    queue->stop();  // joins: nothing of the queue touches memory after this
    memory_.release_queue_memory(queue->memory());
    return boost::outcome_v2::success();
}

Result<void> SoftAgent::ring_doorbell(QueueId id, uint64_t /*value*/) {
    // The value is the guest's claim; the write pointer in guest memory is what counts.
    std::lock_guard lock(queues_mutex_);
    auto it = queues_.find(id);
    if (it == queues_.end()) {
        return errc(std::errc::no_such_file_or_directory);
    }
    it->second->doorbell();
    return boost::outcome_v2::success();
}

bool SoftAgent::track_kicks(uint32_t* kick_requested) noexcept {
    kicks_.attach(kick_requested);
    return true;
}

Result<EventInfo> SoftAgent::create_event(const EventSpec& spec) {
    if (spec.type >= XENHSA_EVENT_TYPE_COUNT_ || spec.node >= soft::kNodeCount) {
        return errc(std::errc::invalid_argument);
    }
    return guarded([&] { return events_.create(spec); });
}

Result<void> SoftAgent::destroy_event(EventId event) {
    return guarded([&] { return events_.destroy(event); });
}

Result<void> SoftAgent::set_event(EventId event) {
    return guarded([&] { return events_.set(event); });
}

Result<void> SoftAgent::reset_event(EventId event) {
    return guarded([&] { return events_.reset(event); });
}

Result<uint32_t> SoftAgent::wait_events(std::span<const EventId> events, bool all,
                                        uint32_t timeout_ms) {
    return guarded([&] { return events_.wait(events, all, timeout_ms); });
}

void SoftAgent::set_fault_handler(FaultHandler handler) {
    std::lock_guard lock(fault_mutex_);
    fault_handler_ = std::move(handler);
}

void SoftAgent::queue_failed(QueueId queue, EventId error_event, std::optional<Va> fault,
                             bool hang) noexcept {
    // The handler first: whoever wakes on the error event finds the fault reported.
    if (fault || hang) {
        try {
            FaultHandler handler;
            {
                std::lock_guard lock(fault_mutex_);
                handler = fault_handler_;
            }
            if (handler) {
                handler(GpuFault{queue, fault.value_or(0), hang});
            }
        } catch (...) {  // a throwing handler loses its report, not the agent
        }
    }
    if (error_event != 0) {
        (void)events_.set(error_event);  // ENOENT: the guest destroyed it meanwhile
    }
    if (fault || hang) {
        events_.set_memory_events();
    }
}

std::unique_ptr<KfdDevice> make_soft_agent(SoftAgentOptions options) {
    return std::make_unique<SoftAgent>(options);
}

}  // namespace xenhsa::hsa
