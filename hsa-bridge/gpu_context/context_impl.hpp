// GpuContext's state: the guest's handle tables, the device objects behind them, and the
// dependency edges (queue -> memory, queue -> error event) that decide release order.
//
// Device objects live in fixed pools, apart from the handles that name them, because a
// release the guest asked for may be deferred: the handle goes at once, the object stays
// until the last queue using it is destroyed. Every pool, table and scratch list is sized
// at construction, so revoke_range() and teardown() never allocate.
#ifndef XENHSA_HSA_GPU_CONTEXT_IMPL_HPP
#define XENHSA_HSA_GPU_CONTEXT_IMPL_HPP

#include <xenhsa/proto/doorbell.h>

#include <array>
#include <memory>
#include <vector>
#include <xenhsa/hsa/gpu_context.hpp>

#include "fault_relay.hpp"
#include "object_pool.hpp"
#include "wait_engine.hpp"

namespace xenhsa::hsa {

namespace detail {

inline constexpr uint32_t kNoSlot = UINT32_MAX;
inline constexpr uint64_t kPage = XENHSA_PAGE_SIZE;

// Handle kinds: a handle of one kind is unknown to every other table.
inline constexpr uint8_t kPinKind = 1;
inline constexpr uint8_t kAllocKind = 2;
inline constexpr uint8_t kQueueKind = 3;
inline constexpr uint8_t kEventKind = 4;

enum class MemKind : uint8_t { pin, alloc };

struct MemObj {
    MemKind kind = MemKind::pin;
    Va va = 0;
    uint64_t size = 0;
    uint32_t flags = 0;      // XENHSA_PIN_* or XENHSA_ALLOC_*
    Handle handle = 0;       // 0 once the guest released it (a deferred release)
    uint64_t node_mask = 0;  // the GPU mapping; 0 when not mapped
    bool map_read_only = false;
    bool unmap_deferred = false;  // the guest unmapped it while a queue held it
    uint32_t queue_refs = 0;      // live queues whose ring/rptr/wptr lie in it
    bool marked = false;          // scratch flag of revoke_range() and teardown()

    [[nodiscard]] bool mapped() const noexcept { return node_mask != 0; }
    [[nodiscard]] Va end() const noexcept { return va + size; }
};

struct EventObj {
    EventId id = 0;
    Handle handle = 0;        // 0 once the guest destroyed it while a queue held it
    uint32_t queue_refs = 0;  // live queues that signal it on error
    bool manual_reset = false;
};

struct QueueObj {
    QueueId id = 0;
    uint32_t doorbell = 0;
    Va ring = 0;
    uint64_t ring_size = 0;
    Va rptr = 0;
    Va wptr = 0;
    std::array<uint32_t, 3> mems{kNoSlot, kNoSlot, kNoSlot};  // distinct MemObj slots
    uint32_t error_event = kNoSlot;                           // EventObj slot
};

}  // namespace detail

struct GpuContext::Impl {
    Impl(KfdDevice& device, GpuLimits limits);

    KfdDevice& device;
    const GpuLimits capacity;  // what the tables are sized for
    GpuLimits limits;          // what requests are held to: at most `capacity`

    HandleTable<uint32_t> pins;    // -> mems slot
    HandleTable<uint32_t> allocs;  // -> mems slot
    HandleTable<detail::QueueObj> queues;
    HandleTable<uint32_t> events;  // -> evs slot

    detail::ObjectPool<detail::MemObj> mems;
    detail::ObjectPool<detail::EventObj> evs;

    // doorbell index -> the queue behind it (0: free)
    std::array<QueueId, XENHSA_DOORBELLS_PER_PAGE> doorbell_queue{};
    std::array<bool, XENHSA_DOORBELLS_PER_PAGE> doorbell_used{};
    std::array<uint64_t, XENHSA_DOORBELLS_PER_PAGE> doorbell_seen{};  // forward_doorbells()

    std::vector<Handle> scratch_queues;  // reserved: capacity.max_queues

    uint64_t pinned_pages = 0;
    uint64_t alloc_bytes = 0;

    std::shared_ptr<detail::FaultRelay> relay;
    detail::WaitEngine waits;

    // --- lookups
    [[nodiscard]] uint32_t live_handles() const noexcept;
    // A PIN or ALLOC handle's mems slot, or kNoSlot.
    [[nodiscard]] uint32_t mem_slot(Handle h) const noexcept;
    // The live (guest-named), GPU-mapped memory on `node` holding [va, va + len), or kNoSlot.
    [[nodiscard]] uint32_t queue_memory(Va va, uint64_t len, uint32_t node) const noexcept;
    // The queue uses [va, va + len) as its ring or a pointer, or holds memory that
    // overlaps it (memory its ring or a pointer lies in).
    [[nodiscard]] bool queue_touches(const detail::QueueObj& queue, Va va,
                                     uint64_t len) const noexcept;

    // UNPIN and FREE (context_memory.cpp); `freed` null for UNPIN.
    Result<void> release_memory(HandleTable<uint32_t>& table, Handle h, FreedAllocs* freed);

    // --- release steps; device failures abort (fatal.hpp). `freed` is told of the ALLOCs
    // released (null: teardown, after which the caller takes every ALLOC range back).
    // Destroys the queue in the device; returns whether its loss is still unreported (a
    // queue that faulted was reported then).
    bool stop_queue(const detail::QueueObj& queue) noexcept;
    void drop_refs(const detail::QueueObj& queue) noexcept;
    void settle_event(uint32_t slot) noexcept;  // deferred destroy, once unreferenced
    void settle_unmap(uint32_t slot) noexcept;  // deferred GPU unmap, once unreferenced
    // Deferred unpin/free, once unreferenced.
    void settle_release(uint32_t slot, FreedAllocs* freed) noexcept;
    void unmap_now(uint32_t slot) noexcept;
    void release_now(uint32_t slot, FreedAllocs* freed) noexcept;  // device + handle + slot
    void destroy_event_now(uint32_t slot) noexcept;
};

}  // namespace xenhsa::hsa

#endif
