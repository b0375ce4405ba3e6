// One AQL queue's packet processor: a thread that fetches packets in order from the ring
// in guest memory and runs them (HSA 2.9, ROCr's producer protocol).
//
// It reads the write dispatch id from the queue's write pointer, processes packets from
// its read dispatch id, and for each: loads the header (acquire); stops on INVALID until
// the header becomes valid (the producer is still writing); honours the barrier bit and
// the acquire fence; runs the packet (barrier-AND/OR wait for their dependencies, spinning
// for idle_spin_time before they sleep; a small dispatch, of at most
// inline_max_workgroups workgroups, runs right here, a workgroup at a time, with no job,
// no pool and no in-flight cap; a bigger one goes to the worker pool, up to max_inflight
// at once); and, once the packet is launched, sets its header back to INVALID and
// advances the read dispatch id (release). A packet's completion signal is decremented
// after that, and after its release fence: for a dispatch, when its last workgroup ends;
// when the queue profiles (amd_queue.hpp), the packet's start and end times are written to
// the completion signal first.
// A stop or a fault is seen between the workgroups of an inline dispatch, and a revoke
// takes the address space between them (rw_lock.hpp).
//
// AMD's vendor-specific PM4 indirect-buffer packet (ROCr's ExecutePM4: cache
// invalidation) is retired as the no-op it is on a software GPU, with its completion
// signal; any other vendor format is an invalid packet.
//
// Busy queues poll the write pointer without taking a lock; an idle queue waits as
// IdleWait says (spin for a bounded time, back off, then ask for kicks and block with a
// slow re-check). An error
// (a GPU page fault, an invalid packet, a write index that went backwards, or one more
// than a ring ahead of the read index while the packet there has not been stored) stops
// the queue for good: workgroups not started are skipped, the agent signals the error
// event and reports the fault once, and an error that is not a fault is stored, as a
// command processor stores it, in the queue's inactive signal (queue_errors.hpp), which
// ROCr waits on.
#ifndef XENHSA_HSA_SOFT_AQL_QUEUE_HPP
#define XENHSA_HSA_SOFT_AQL_QUEUE_HPP

#include <hsa/hsa.h>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <span>
#include <thread>

#include "agent_shared.hpp"
#include "dispatch_job.hpp"
#include "queue.hpp"
#include "queue_errors.hpp"
#include "workgroups.hpp"

namespace xenhsa::hsa::soft {

class AqlQueue final : public Queue {
public:
    // The caller holds `held` in the address space for the queue's lifetime.
    AqlQueue(AgentShared& agent, QueueId id, const QueueSpec& spec, const HeldQueueMemory& held);
    ~AqlQueue() override;  // stop()

    void start() override;
    void doorbell() noexcept override;
    // Stops fetching, skips workgroups not yet started, waits for the ones running and
    // joins (from the queue's own thread, i.e. its FaultHandler: detaches instead).
    // Idempotent. Completion signals of cancelled dispatches are left alone.
    void stop() noexcept override;
    [[nodiscard]] const QueueMemory& memory() const noexcept override { return held_.memory; }

    // For workers.
    [[nodiscard]] bool halted() const noexcept { return halted_.load(std::memory_order_acquire); }
    [[nodiscard]] const AddressSpace& address_space() const noexcept { return agent_.memory; }
    // The queue hit an error: a GPU page fault at `fault` (its workgroups not started
    // are skipped), or (nullopt) an invalid packet or device failure (work already
    // launched completes). The queue fetches no more packets; the first error counts.
    void fail(std::optional<Va> fault) noexcept;
    // The same for an error that is not a fault, with the code ROCr is told.
    void fail(QueueError error) noexcept;
    // The last workgroup of `job` ended; the job must not touch the queue afterwards.
    void dispatch_done(const DispatchJob& job) noexcept;

private:
    enum class Step : uint8_t { next, stall, stop };
    enum class WriteIndex : uint8_t { no_work, work, invalid };

    void run() noexcept;
    void process_packets();
    Step process(uint64_t read);
    Step dispatch(const hsa_kernel_dispatch_packet_t& packet, uint16_t header, uint64_t read);
    Step run_inline(const BuiltinKernel& kernel, const DispatchShape& shape,
                    std::span<const std::byte> kernarg, uint64_t completion_signal,
                    uint32_t release);
    Step barrier(const hsa_barrier_and_packet_t& packet, uint16_t header, uint64_t read,
                 BarrierKind kind);
    Step vendor(std::span<const std::byte> bytes, uint16_t header, uint64_t read);
    // Retires a packet that is done at once and decrements its completion signal.
    Step complete(uint16_t header, uint64_t read, uint64_t completion_signal);
    // The packet's release fence, then its completion signal (a fault stops the queue).
    Step release_and_signal(uint32_t release, uint64_t completion_signal);
    void retire(uint64_t read) noexcept;
    [[nodiscard]] bool leaving() const noexcept { return leaving_.load(std::memory_order_acquire); }
    bool wait_inflight_below(uint32_t limit);
    // Sleeps until a doorbell after `seen`, a stop or the timeout; true unless it timed out.
    bool wait_doorbell(uint64_t seen, std::optional<std::chrono::microseconds> timeout);
    bool work_arrived(uint64_t read) const noexcept;
    // The packet at `read` has a header other than INVALID (its producer stored it).
    [[nodiscard]] bool header_stored(uint64_t read) const noexcept;
    // Loads the write index once: invalid when it went backwards.
    WriteIndex check_write_index() noexcept;
    // The write index last seen is more than a ring ahead of read_.
    [[nodiscard]] bool past_the_ring() const noexcept;
    uint64_t load_wptr() const noexcept;
    // The ring offset and the VA of the slot of `read`.
    [[nodiscard]] uint64_t slot_offset(uint64_t read) const noexcept;
    [[nodiscard]] Va slot_va(uint64_t read) const noexcept;

    AgentShared& agent_;
    QueueId id_;
    HeldQueueMemory held_;
    EventId error_event_;
    uint64_t slot_mask_;
    bool active_;
    uint64_t read_ = 0;          // the processor's read dispatch id
    uint64_t wptr_seen_ = 0;     // the highest write dispatch id seen
    uint64_t packet_start_ = 0;  // when the current packet started; 0: not profiled

    // Written under mutex_ (the condition variable's waiters check them under it), read
    // without it on the queue's fast path.
    std::mutex mutex_;
    std::condition_variable cv_;
    std::atomic<uint64_t> doorbells_{0};
    std::atomic<uint32_t> inflight_{0};  // pool jobs
    std::atomic<bool> leaving_{false};   // stopping_ or failed_
    bool stopping_ = false;
    bool failed_ = false;
    std::optional<Va> fault_;
    QueueError error_ = QueueError::none;
    std::atomic<bool> halted_{false};  // stopping_ or a page fault: workers skip
    std::thread thread_;
};

}  // namespace xenhsa::hsa::soft

#endif
