// One guest's GPU context: opaque handles over a KfdDevice, the guest's GPU quotas, and
// the dependency graph that decides release order (docs/protocol.md §5.20).
//
// A live queue holds the memory it uses (ring, read/write pointers: the PIN or ALLOC and
// its GPU mapping). UNPIN, FREE or UNMAP_FROM_GPU of such memory succeeds at once for the
// guest (its handle is gone) and the release is deferred until the queue is destroyed:
// never an error, never a leak. Teardown releases queues, then events, then GPU
// mappings, then queue memory, then other memory, whatever order the handles were made
// in. The caller (the backend worker) then unmaps grants and releases VA ranges.
//
// Single-threaded (the worker's loop) except where a comment says otherwise.
#ifndef XENHSA_HSA_GPU_CONTEXT_HPP
#define XENHSA_HSA_GPU_CONTEXT_HPP

#include <xenhsa/proto/doorbell.h>
#include <xenhsa/proto/event.h>
#include <xenhsa/proto/memory.h>
#include <xenhsa/proto/queue.h>

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <xenhsa/hsa/handle_table.hpp>
#include <xenhsa/hsa/kfd_device.hpp>

namespace xenhsa::hsa {

struct GpuLimits {
    uint32_t max_handles = 4096;  // PIN + ALLOC + QUEUE + EVENT handles together
    uint64_t max_pinned_pages = 1u << 20;
    uint64_t max_alloc_bytes = 1ull << 32;
    uint32_t max_queues = 64;
    uint32_t max_events = 1024;
    uint32_t max_waits = 64;  // EVENT_WAITs pending at once
};

struct GpuStats {
    uint64_t pinned_pages = 0;  // pages registered with the device (deferred ones included)
    uint64_t alloc_bytes = 0;
    uint32_t queues = 0;
    uint32_t events = 0;
    uint32_t handles = 0;   // live guest handles
    uint32_t deferred = 0;  // releases waiting for a queue to go
};

// Told of each ALLOC whose device memory went during a call: its VA range is the caller's
// again (the backend puts PROT_NONE back over it). Must not allocate or throw.
class FreedAllocs {
public:
    virtual void alloc_freed(Va va, uint64_t size) noexcept = 0;

protected:
    ~FreedAllocs() = default;
};

// A live PIN or ALLOC as the guest sees it.
struct MemoryInfo {
    Va va = 0;
    uint64_t size = 0;
    bool alloc = false;       // else a PIN
    bool gpu_mapped = false;  // MAP_TO_GPU'd and not UNMAP_FROM_GPU'd since
};

// Why a wait ended.
enum class WaitEnd : uint8_t { fired, timeout, cancelled, failed };

class GpuContext {
public:
    // Errors of the context itself (on top of the device's errno values):
    //   EBADF   unknown, stale or other-kind handle      EDQUOT  a GpuLimits quota
    //   EFAULT  a queue's ring/rptr/wptr is not in GPU-mapped memory of this context
    //   EINVAL  a size, flag or range the context refuses
    GpuContext(KfdDevice& device, GpuLimits limits);
    ~GpuContext();  // teardown()
    GpuContext(const GpuContext&) = delete;
    GpuContext& operator=(const GpuContext&) = delete;

    [[nodiscard]] KfdDevice& device() noexcept;

    // Quota changes at run time: `limits` apply to requests from now on, each at most what
    // the context was made with (its tables are sized then; max_waits stays). Objects
    // above a lowered limit stay; new ones are refused (EDQUOT) until the guest is under.
    void set_limits(const GpuLimits& limits) noexcept;

    // PIN: the caller has checked that [va, va + size) lies in this guest's MAPs, writable
    // unless XENHSA_PIN_READ_ONLY.
    Result<Handle> pin(Va va, uint64_t size, uint32_t flags);
    // UNPIN and FREE: the handle goes at once; while a live queue holds the memory, the
    // device release waits until the last such queue goes (destroy_queue, revoke_range).
    Result<void> unpin(Handle pin);
    // A PIN or ALLOC handle; returns the GPU VA (== va: xenhsa mirrors).
    Result<Va> map_to_gpu(Handle memory, uint64_t node_mask, uint32_t flags);
    Result<void> unmap_from_gpu(Handle memory);
    // ALLOC at a VA the caller reserved inside the guest's window.
    Result<Handle> alloc(Va va, uint64_t size, uint32_t node, uint32_t flags);
    Result<void> free(Handle alloc, FreedAllocs& freed);

    struct QueueCreated {
        Handle handle = 0;
        uint32_t doorbell_index = 0;  // < XENHSA_DOORBELLS_PER_PAGE
    };
    // AQL or SDMA (XENHSA_QUEUE_*); a type the device cannot make: EOPNOTSUPP.
    Result<QueueCreated> create_queue(const xenhsa_queue_create_req& req);
    // KfdDevice::supports_queue_type for a XENHSA_QUEUE_* value (false for unknown ones).
    [[nodiscard]] bool supports_queue_type(uint32_t type) noexcept;
    // The releases the queue held back run now, in teardown order.
    Result<void> destroy_queue(Handle queue, FreedAllocs& freed);
    // The guest's doorbell page slot `index` holds `value`; unknown indices are ignored.
    void doorbell(uint32_t index, uint64_t value) noexcept;
    // Each live queue's slot of the guest's doorbell page, read once; a value that changed
    // since the last look (or since the queue was made) goes to doorbell(). Returns how
    // many did.
    uint32_t forward_doorbells(const xenhsa_doorbell_page& page) noexcept;
    // KfdDevice::track_kicks of this context's device.
    bool track_kicks(uint32_t* kick_requested) noexcept;
    // KfdDevice::packets_taken of this context's device.
    [[nodiscard]] std::optional<uint64_t> packets_taken() const noexcept;

    struct EventCreated {
        Handle handle = 0;
        uint32_t event_id = 0;
        Va mailbox = 0;
    };
    Result<EventCreated> create_event(const xenhsa_event_create_req& req);
    Result<void> destroy_event(Handle event);  // pending waits on it end as `cancelled`
    Result<void> set_event(Handle event);
    Result<void> reset_event(Handle event);

    // EVENT_WAIT, asynchronous. `done` runs exactly once, on a context-owned thread, with
    // the mask of events that fired (when `fired`). Returns a wait id for cancel_wait.
    using WaitDone = std::function<void(WaitEnd end, uint32_t signaled_mask)>;
    Result<uint64_t> start_wait(std::span<const Handle> events, bool all, uint32_t timeout_ms,
                                WaitDone done);
    // true when the wait was pending; its `done` then runs with `cancelled`.
    bool cancel_wait(uint64_t wait) noexcept;

    // --- what the backend's checks ask before a request is forwarded (§3.4 order)
    [[nodiscard]] std::optional<MemoryInfo> memory(Handle h) const noexcept;
    [[nodiscard]] bool event_live(Handle h) const noexcept;
    [[nodiscard]] bool queue_live(Handle h) const noexcept;
    [[nodiscard]] bool has_queues() const noexcept;
    // Where a new queue's ring or pointer may lie: in live memory GPU-mapped on `node`,
    // and not a live queue's ring or pointer (two queues never share one).
    [[nodiscard]] bool queue_range_free(Va va, uint64_t size, uint32_t node) const noexcept;
    // A live queue uses [va, va + size) as its ring or a pointer, or holds memory that
    // overlaps it.
    [[nodiscard]] bool range_held(Va va, uint64_t size) const noexcept;
    // A PIN the guest has not released overlaps [va, va + size).
    [[nodiscard]] bool pinned(Va va, uint64_t size) const noexcept;

    // A queue is lost, reported once per queue: a GPU fault stopped it at `address` (any
    // thread), it hung (`hang`, address 0: GpuFault::hang), or the context destroyed it
    // without the guest asking, because revoke_range took its memory or teardown ran
    // (address 0, on the caller's thread).
    using QueueLost = std::function<void(Handle queue, Va address, bool hang)>;
    void on_queue_lost(QueueLost callback);

    // Revoke's GPU half for [va, va + size): destroys the queues using memory in the
    // range, unmaps it from the GPU and deregisters it; the handles naming it go stale.
    // Never fails, never allocates, idempotent. The caller unmaps the grants afterwards.
    void revoke_range(Va va, uint64_t size, FreedAllocs& freed) noexcept;
    // Everything, in the fixed order. Never fails, never allocates, idempotent. Every
    // ALLOC's VA range is the caller's again afterwards.
    void teardown() noexcept;

    [[nodiscard]] GpuStats stats() const noexcept;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace xenhsa::hsa

#endif
