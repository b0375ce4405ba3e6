#include "aql_queue.hpp"

#include <xenhsa/proto/queue.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>

#include "amd_queue.hpp"
#include "clock.hpp"
#include "rocr_blit_kernels.hpp"

namespace xenhsa::hsa::soft {

namespace {

constexpr uint64_t kPacketSize = XENHSA_AQL_PACKET_SIZE;
static_assert(sizeof(hsa_kernel_dispatch_packet_t) == kPacketSize &&
              sizeof(hsa_barrier_and_packet_t) == kPacketSize &&
              sizeof(hsa_barrier_or_packet_t) == kPacketSize);

constexpr uint32_t kMaxWorkgroupSize = 1024;      // HSA_AGENT_INFO_WORKGROUP_MAX_SIZE
constexpr uint64_t kMaxGridSize = 0xFFFFFFFFull;  // HSA_AGENT_INFO_GRID_MAX_SIZE
constexpr uint32_t kGroupSegmentMax = 64 * 1024;  // LDS
constexpr auto kStallBackoffMin = std::chrono::microseconds(50);
constexpr auto kStallBackoffMax = std::chrono::milliseconds(5);
// How long a queue polls for the header of a packet whose slot its producer reserved.
constexpr auto kStallSpinMin = std::chrono::microseconds(20);
constexpr auto kBarrierBackoffMin = std::chrono::microseconds(20);
constexpr auto kBarrierBackoffMax = std::chrono::milliseconds(1);

uint32_t header_field(uint16_t header, int shift, int width) noexcept {
    return (header >> shift) & ((1u << width) - 1);
}

uint32_t release_scope(uint16_t header) noexcept {
    return header_field(header, HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE,
                        HSA_PACKET_HEADER_WIDTH_SCRELEASE_FENCE_SCOPE);
}

void fence_for(uint32_t scope, std::memory_order order) noexcept {
    if (scope == HSA_FENCE_SCOPE_SYSTEM) {
        std::atomic_thread_fence(std::memory_order_seq_cst);
    } else if (scope == HSA_FENCE_SCOPE_AGENT) {
        std::atomic_thread_fence(order);
    }
}

// AMD's vendor-specific AQL packet that runs a PM4 indirect buffer (ROCr 5.2.3,
// AqlQueue::ExecutePM4 on gfx9+: amd_aql_pm4_ib), in our own words.
constexpr uint16_t kVendorFormatPm4Ib = 1;  // AMD_AQL_FORMAT_PM4_IB
struct Pm4IbPacket {
    uint16_t header;
    uint16_t vendor_format;
    uint32_t ib_jump[4];  // PM4 INDIRECT_BUFFER: the IB's address and size
    uint32_t dw_count_remain;
    uint32_t reserved[8];
    uint64_t completion_signal;
};
static_assert(sizeof(Pm4IbPacket) == kPacketSize && offsetof(Pm4IbPacket, vendor_format) == 2 &&
              offsetof(Pm4IbPacket, completion_signal) == 56);

// Workgroup counts of a dispatch packet, or the error of a malformed one.
struct DecodedShape {
    std::optional<DispatchShape> shape;
    QueueError error = QueueError::none;
};

DecodedShape decode_shape(const hsa_kernel_dispatch_packet_t& packet) {
    const uint32_t dims = header_field(packet.setup, HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS,
                                       HSA_KERNEL_DISPATCH_PACKET_SETUP_WIDTH_DIMENSIONS);
    const DecodedShape bad_dimensions{std::nullopt, QueueError::invalid_dimensions};
    if (dims < 1 || dims > 3) {
        return bad_dimensions;
    }
    DispatchShape shape;
    shape.grid = {packet.grid_size_x, packet.grid_size_y, packet.grid_size_z};
    shape.workgroup = {packet.workgroup_size_x, packet.workgroup_size_y, packet.workgroup_size_z};
    uint64_t items = 1;
    uint64_t group_items = 1;
    shape.total_groups = 1;
    for (uint32_t d = 0; d < 3; ++d) {
        const uint32_t grid = shape.grid[d];
        const uint32_t group = shape.workgroup[d];
        if (grid == 0 || group == 0 || (d >= dims && (grid != 1 || group != 1))) {
            return bad_dimensions;
        }
        items *= grid;  // below 2^32 after each step: no overflow
        if (items > kMaxGridSize) {
            return bad_dimensions;
        }
        group_items *= group;
        shape.groups[d] = (uint64_t{grid} + group - 1) / group;
        shape.total_groups *= shape.groups[d];
    }
    if (group_items > kMaxWorkgroupSize) {
        return {std::nullopt, QueueError::workgroup_too_large};
    }
    if (packet.group_segment_size > kGroupSegmentMax) {
        return {std::nullopt, QueueError::invalid_group_memory};
    }
    return {shape, QueueError::none};
}

}  // namespace

AqlQueue::AqlQueue(AgentShared& agent, QueueId id, const QueueSpec& spec,
                   const HeldQueueMemory& held)
    : agent_(agent),
      id_(id),
      held_(held),
      error_event_(spec.error_event),
      slot_mask_(spec.ring_size / kPacketSize - 1),
      active_(spec.percentage > 0) {
    // Where the guest left the read index (zero for a fresh amd_queue_t): read once.
    read_ = held_.rptr.load(std::memory_order_acquire);
    wptr_seen_ = read_;
}

AqlQueue::~AqlQueue() { stop(); }

void AqlQueue::start() {
    if (active_) {
        thread_ = std::thread([this] { run(); });
    }
}

void AqlQueue::doorbell() noexcept {
    std::lock_guard lock(mutex_);
    doorbells_.fetch_add(1, std::memory_order_release);
    cv_.notify_one();
}

void AqlQueue::stop() noexcept {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
        leaving_.store(true, std::memory_order_release);
        halted_.store(true, std::memory_order_release);
        cv_.notify_all();
    }
    agent_.signals.bump();  // a barrier wait sleeps on the hub
    if (!thread_.joinable()) {
        return;
    }
    if (thread_.get_id() == std::this_thread::get_id()) {
        // Destroyed from its own FaultHandler: run() touches nothing after the report.
        agent_.errors.adopt_thread(std::move(thread_));
    } else {
        thread_.join();
    }
}

void AqlQueue::fail(std::optional<Va> fault) noexcept {
    {
        std::lock_guard lock(mutex_);
        if (!failed_) {
            failed_ = true;
            fault_ = fault;
        }
        leaving_.store(true, std::memory_order_release);
        // A page fault kills the queue's work in flight, as a VM fault does on a GPU
        // without XNACK. Any other error only stops the fetching: dispatches already
        // launched run to completion.
        if (fault) {
            halted_.store(true, std::memory_order_release);
        }
        cv_.notify_all();
    }
    agent_.signals.bump();
}

void AqlQueue::fail(QueueError error) noexcept {
    {
        std::lock_guard lock(mutex_);
        if (!failed_) {
            error_ = error;
        }
    }
    fail(std::nullopt);
}

void AqlQueue::dispatch_done(const DispatchJob& job) noexcept {
    if (!halted()) {
        fence_for(job.release_scope(), std::memory_order_release);
        if (job.completion_signal() != 0) {
            const PacketTimes times{job.start_ts(), clock_now()};
            if (auto fault = complete_signal(agent_.memory, agent_.events, agent_.signals,
                                             job.completion_signal(),
                                             job.start_ts() != 0 ? &times : nullptr)) {
                fail(fault);
            }
        }
    }
    // Notify under the lock: once it is released the queue may be destroyed.
    std::lock_guard lock(mutex_);
    inflight_.fetch_sub(1, std::memory_order_release);  // pairs with wait_inflight_below
    cv_.notify_all();
}

uint64_t AqlQueue::load_wptr() const noexcept { return held_.wptr.load(std::memory_order_acquire); }

uint64_t AqlQueue::slot_offset(uint64_t read) const noexcept {
    return (read & slot_mask_) * kPacketSize;
}

Va AqlQueue::slot_va(uint64_t read) const noexcept { return held_.ring.va() + slot_offset(read); }

// The write dispatch id is guest-written and only compared, never trusted.
bool AqlQueue::work_arrived(uint64_t read) const noexcept { return load_wptr() != read; }

AqlQueue::WriteIndex AqlQueue::check_write_index() noexcept {
    const uint64_t wptr = load_wptr();
    // Behind a value it already had: no producer publishes that.
    if (static_cast<int64_t>(wptr - wptr_seen_) < 0) {
        return WriteIndex::invalid;
    }
    wptr_seen_ = wptr;
    return wptr == read_ ? WriteIndex::no_work : WriteIndex::work;
}

// ROCr reserves a slot by adding to the write index first and waits for room afterwards,
// so a producer that finds the ring full is one (a slot per waiting thread) past it while
// the packet at the read index is there to run. Nothing to run and more than a ring
// ahead, though, is no producer's index.
bool AqlQueue::past_the_ring() const noexcept { return wptr_seen_ - read_ > slot_mask_ + 1; }

bool AqlQueue::wait_doorbell(uint64_t seen, std::optional<std::chrono::microseconds> timeout) {
    std::unique_lock lock(mutex_);
    auto woken = [&] { return doorbells_.load(std::memory_order_relaxed) != seen || leaving(); };
    if (timeout) {
        return cv_.wait_for(lock, *timeout, woken);
    }
    cv_.wait(lock, woken);
    return true;
}

bool AqlQueue::wait_inflight_below(uint32_t limit) {
    // acquire: the stores of the jobs that ended are seen before what follows them.
    auto below = [&] { return inflight_.load(std::memory_order_acquire) < limit || leaving(); };
    if (!below()) {
        std::unique_lock lock(mutex_);
        cv_.wait(lock, below);
    }
    return !leaving();
}

void AqlQueue::run() noexcept {
    try {
        process_packets();
    } catch (...) {
        fail(QueueError::device_failure);  // out of memory making a job
    }
    // Stopped, failed or faulted: let the dispatches in flight end (a stop or a fault
    // has them skip their remaining workgroups) before reporting.
    bool failed = false;
    std::optional<Va> fault;
    QueueError error = QueueError::none;
    {
        std::unique_lock lock(mutex_);
        cv_.wait(lock, [this] { return inflight_.load(std::memory_order_acquire) == 0; });
        failed = failed_;
        fault = fault_;
        error = error_;
    }
    if (failed && !fault) {
        // What the command processor tells ROCr; writing the signal may fault in turn.
        fault = raise_queue_error(agent_.memory, agent_.events, agent_.signals, held_.memory.rptr,
                                  error);
    }
    if (failed) {
        // Last: the handler may destroy this queue.
        agent_.errors.queue_failed(id_, error_event_, fault, false);
    }
}

void AqlQueue::process_packets() {
    auto stall = kStallBackoffMin;
    IdleWait idle(agent_.idle, agent_.kicks);
    for (;;) {
        if (leaving()) {
            return;
        }
        // Before the wptr load: a later doorbell wakes the wait.
        const uint64_t seen = doorbells_.load(std::memory_order_acquire);
        const WriteIndex index = check_write_index();
        if (index == WriteIndex::invalid) {
            fail(QueueError::invalid_packet_format);  // no producer moves it back
            return;
        }
        if (index == WriteIndex::no_work) {
            idle.step(
                [&] { return work_arrived(read_); },
                [&](std::chrono::microseconds timeout) { return wait_doorbell(seen, timeout); });
            continue;
        }
        idle.busy();
        switch (process(read_)) {
            case Step::next:
                ++read_;
                agent_.packets_taken.fetch_add(1, std::memory_order_relaxed);
                stall = kStallBackoffMin;
                break;
            case Step::stall:
                if (past_the_ring()) {
                    fail(QueueError::invalid_packet_format);
                    return;
                }
                // The producer has reserved the slot but not yet stored its header: it is
                // writing the packet now, so the header is usually there within the spin.
                // ROCr in a guest never kicks, so a sleep would last its whole timeout.
                if (spin_for(std::max(agent_.idle.spin_time, kStallSpinMin),
                             [&] { return header_stored(read_) || leaving(); })) {
                    break;
                }
                // It rings the doorbell after storing the header; the timeout covers
                // producers that do not.
                agent_.kicks.sleeping();
                wait_doorbell(seen, stall);
                agent_.kicks.awake();
                stall = std::min<std::chrono::microseconds>(stall * 2, kStallBackoffMax);
                break;
            case Step::stop:
                return;
        }
    }
}

// Every slot lies in the ring, its header aligned (the ring is page aligned and a whole
// number of slots): the accessors refuse none of them.
bool AqlQueue::header_stored(uint64_t read) const noexcept {
    const auto header = held_.ring.atomic<uint16_t>(slot_offset(read));
    return !header ||  // process() reports it
           header_field(header->load(std::memory_order_relaxed), HSA_PACKET_HEADER_TYPE,
                        HSA_PACKET_HEADER_WIDTH_TYPE) != HSA_PACKET_TYPE_INVALID;
}

AqlQueue::Step AqlQueue::process(uint64_t read) {
    const auto header_ref = held_.ring.atomic<uint16_t>(slot_offset(read));
    if (!header_ref) {
        fail(slot_va(read));
        return Step::stop;
    }
    const uint16_t header = header_ref->load(std::memory_order_acquire);
    const uint32_t type =
        header_field(header, HSA_PACKET_HEADER_TYPE, HSA_PACKET_HEADER_WIDTH_TYPE);
    if (type == HSA_PACKET_TYPE_INVALID) {
        return Step::stall;
    }
    // Read for each packet, as ROCr may switch it at any time.
    packet_start_ = profiling_enabled(agent_.memory, held_.memory.rptr) ? clock_now() : 0;
    if (!held_.writable_ring) {
        fail(slot_va(read));  // retiring the packet writes its header: a GPU write to the ring
        return Step::stop;
    }
    // One copy of the body, after the header's acquire; the guest may rewrite the slot.
    std::array<std::byte, kPacketSize> bytes{};
    if (!held_.ring.read(slot_offset(read), bytes)) {
        fail(slot_va(read));
        return Step::stop;
    }

    if (header_field(header, HSA_PACKET_HEADER_BARRIER, HSA_PACKET_HEADER_WIDTH_BARRIER) != 0 &&
        !wait_inflight_below(1)) {
        return Step::stop;
    }
    fence_for(header_field(header, HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE,
                           HSA_PACKET_HEADER_WIDTH_SCACQUIRE_FENCE_SCOPE),
              std::memory_order_acquire);

    switch (type) {
        case HSA_PACKET_TYPE_KERNEL_DISPATCH: {
            hsa_kernel_dispatch_packet_t packet;
            std::memcpy(&packet, bytes.data(), sizeof packet);
            return dispatch(packet, header, read);
        }
        case HSA_PACKET_TYPE_BARRIER_AND:
        case HSA_PACKET_TYPE_BARRIER_OR: {
            hsa_barrier_and_packet_t packet;  // the OR packet has the same layout
            std::memcpy(&packet, bytes.data(), sizeof packet);
            return barrier(packet, header, read,
                           type == HSA_PACKET_TYPE_BARRIER_AND ? BarrierKind::all_zero
                                                               : BarrierKind::any_zero);
        }
        case HSA_PACKET_TYPE_VENDOR_SPECIFIC:
            return vendor(bytes, header, read);
        default:  // agent dispatch, reserved
            fail(QueueError::invalid_packet_format);
            return Step::stop;
    }
}

AqlQueue::Step AqlQueue::vendor(std::span<const std::byte> bytes, uint16_t header, uint64_t read) {
    Pm4IbPacket packet{};
    std::memcpy(&packet, bytes.data(), sizeof packet);
    if (packet.vendor_format != kVendorFormatPm4Ib) {
        fail(QueueError::unsupported_vendor_packet);
        return Step::stop;
    }
    // The IB only invalidates GPU caches; a software GPU has none to invalidate, and the
    // IB's memory is never read.
    return complete(header, read, packet.completion_signal);
}

AqlQueue::Step AqlQueue::complete(uint16_t header, uint64_t read, uint64_t completion_signal) {
    retire(read);
    return release_and_signal(release_scope(header), completion_signal);
}

AqlQueue::Step AqlQueue::release_and_signal(uint32_t release, uint64_t completion_signal) {
    fence_for(release, std::memory_order_release);
    if (completion_signal != 0) {
        const PacketTimes times{packet_start_, clock_now()};
        if (auto fault =
                complete_signal(agent_.memory, agent_.events, agent_.signals, completion_signal,
                                packet_start_ != 0 ? &times : nullptr)) {
            fail(fault);
            return Step::stop;
        }
    }
    return Step::next;
}

// The packet is consumed: its slot goes back to the producer. Done before the packet can
// complete, so a producer that sees the completion also sees the slot free. (process()
// runs no packet of a ring the GPU may not write.)
void AqlQueue::retire(uint64_t read) noexcept {
    if (held_.writable_ring) {
        if (const auto header = held_.writable_ring->atomic<uint16_t>(slot_offset(read))) {
            header->store(HSA_PACKET_TYPE_INVALID, std::memory_order_relaxed);
        }
    }
    held_.rptr.store(read + 1, std::memory_order_release);
}

AqlQueue::Step AqlQueue::dispatch(const hsa_kernel_dispatch_packet_t& packet, uint16_t header,
                                  uint64_t read) {
    const auto [shape, malformed] = decode_shape(packet);
    if (!shape) {
        fail(malformed);
        return Step::stop;
    }
    const BuiltinKernel* kernel = find_kernel(packet.kernel_object);
    if (kernel == nullptr) {
        kernel = find_rocr_kernel(agent_.memory, packet.kernel_object);
    }
    if (kernel == nullptr) {
        fail(QueueError::invalid_code);
        return Step::stop;
    }
    const Va kernarg_va = reinterpret_cast<uintptr_t>(packet.kernarg_address);
    std::array<std::byte, kMaxKernargSize> kernarg{};
    const std::span<std::byte> args(kernarg.data(), kernel->kernarg_size);
    {
        const auto view = agent_.memory.view();
        const auto guest_args = view.slice<Access::read>(kernarg_va, args.size());
        if (!guest_args || !guest_args->read(0, args)) {
            fail(guest_args.fault().value_or(kernarg_va));  // read: not refused
            return Step::stop;
        }
    }
    if (kernel->accepts != nullptr && !kernel->accepts(args, shape->grid, shape->workgroup)) {
        fail(QueueError::invalid_dimensions);
        return Step::stop;
    }
    const auto release = static_cast<uint8_t>(release_scope(header));
    if (shape->total_groups <= agent_.inline_max_groups) {
        retire(read);
        return run_inline(*kernel, *shape, args, packet.completion_signal.handle, release);
    }
    auto job = std::make_shared<DispatchJob>(
        *this, *kernel, *shape, args, packet.completion_signal.handle, release, packet_start_);

    if (!wait_inflight_below(agent_.max_inflight)) {
        return Step::stop;
    }
    {
        std::lock_guard lock(mutex_);
        inflight_.fetch_add(1, std::memory_order_relaxed);
    }
    retire(read);
    try {
        agent_.pool.submit(job, static_cast<uint32_t>(
                                    std::min<uint64_t>(shape->total_groups, agent_.pool.size())));
    } catch (...) {
        std::lock_guard lock(mutex_);
        inflight_.fetch_sub(1, std::memory_order_relaxed);
        throw;
    }
    return Step::next;
}

// A small dispatch on the queue's own thread, a workgroup at a time: between two, a stop
// or a fault ends it (the rest skipped, the completion signal left alone, as a halted pool
// job) and a revoke gets the address space.
AqlQueue::Step AqlQueue::run_inline(const BuiltinKernel& kernel, const DispatchShape& shape,
                                    std::span<const std::byte> kernarg, uint64_t completion_signal,
                                    uint32_t release) {
    for (uint64_t group = 0; group < shape.total_groups; ++group) {
        if (halted()) {
            return Step::stop;
        }
        if (auto fault = run_workgroups(kernel, shape, kernarg, agent_.memory, group, group + 1)) {
            fail(fault);
            return Step::stop;
        }
    }
    if (halted()) {
        return Step::stop;
    }
    return release_and_signal(release, completion_signal);
}

AqlQueue::Step AqlQueue::barrier(const hsa_barrier_and_packet_t& packet, uint16_t header,
                                 uint64_t read, BarrierKind kind) {
    const std::array<uint64_t, 5> deps{packet.dep_signal[0].handle, packet.dep_signal[1].handle,
                                       packet.dep_signal[2].handle, packet.dep_signal[3].handle,
                                       packet.dep_signal[4].handle};
    auto backoff = kBarrierBackoffMin;
    const auto spin_until = std::chrono::steady_clock::now() + agent_.idle.spin_time;
    bool spinning = true;
    for (uint32_t looks = 1;; ++looks) {
        const uint64_t epoch = agent_.signals.epoch();  // before the checks: see SignalHub
        if (halted()) {
            return Step::stop;
        }
        const DependencyState state = check_dependencies(agent_.memory, deps, kind);
        if (state.fault) {
            fail(state.fault);
            return Step::stop;
        }
        if (state.satisfied) {
            break;
        }
        // A dependency a producer is about to complete is caught without a sleep.
        if (spinning && looks % 32 == 0) {
            spinning = std::chrono::steady_clock::now() < spin_until;
        }
        if (spinning) {
            xenhsa_cpu_relax();
            continue;
        }
        agent_.signals.wait(epoch, backoff);
        backoff = std::min<std::chrono::microseconds>(backoff * 2, kBarrierBackoffMax);
    }
    return complete(header, read, packet.completion_signal.handle);
}

}  // namespace xenhsa::hsa::soft
