// The backend's books on one guest's GPU objects, for the checks and releases that are
// the backend's own (GpuSession keeps the device-side graph):
//  * which memory live queues hold: UNMAP of a MAP under a queue is deferred (§5.5), and
//    an ALLOC's window range is released only when the device memory is really gone;
//  * which PINs lie over a MAP: UNMAP of that MAP is BAD_STATE while they are registered;
//  * which PIN and ALLOC handles are live and MAPped to the GPU on which nodes, and which
//    EVENT handles are live, so that checks run in the documented order (§3.4).
// A queue holds the PIN or ALLOC its ring, read pointer or write pointer lies in.
// Nothing here allocates except add_*(); removal never throws.
#ifndef XENHSA_BACKEND_CORE_GPU_OBJECTS_HPP
#define XENHSA_BACKEND_CORE_GPU_OBJECTS_HPP

#include <cstdint>
#include <map>
#include <set>
#include <xenhsa/hsa/handle_table.hpp>

namespace xenhsa::backend::core {

class GpuObjects {
public:
    using Handle = hsa::Handle;

    struct Memory {
        uint64_t va = 0;
        uint64_t size = 0;
        bool alloc = false;      // ALLOC; else PIN
        bool released = false;   // the guest's UNPIN/FREE was deferred: handle stale
        uint64_t gpu_nodes = 0;  // MAP_TO_GPU nodes, as the guest sees it
    };
    struct Queue {
        uint64_t ring = 0;
        uint64_t ring_size = 0;
        uint64_t rptr = 0;
        uint64_t wptr = 0;
        uint32_t doorbell = 0;
        bool notified = false;  // a GPU_FAULT was posted for it (at most one per queue)
    };

    void add_memory(Handle h, const Memory& m) { memory_.emplace(h, m); }
    void add_queue(Handle h, const Queue& q) { queues_.emplace(h, q); }
    void add_event(Handle h) { events_.insert(h); }

    // A live (not released) PIN or ALLOC handle.
    [[nodiscard]] Memory* live_memory(Handle h) noexcept;
    [[nodiscard]] Queue* queue(Handle h) noexcept;
    [[nodiscard]] bool event_live(Handle h) const noexcept { return events_.count(h) != 0; }
    void remove_event(Handle h) noexcept { events_.erase(h); }

    // [va, va + size) lies inside a live PIN or ALLOC MAPped to the GPU on `node`.
    [[nodiscard]] bool gpu_mapped_on(uint64_t va, uint64_t size, uint32_t node) const noexcept;
    // A live queue holds memory overlapping [va, va + size), or uses the range itself.
    [[nodiscard]] bool range_held(uint64_t va, uint64_t size) const noexcept;
    // A live queue's ring, read pointer or write pointer overlaps [va, va + size).
    [[nodiscard]] bool queue_uses(uint64_t va, uint64_t size) const noexcept;
    // A PIN the guest has not released overlaps [va, va + size).
    [[nodiscard]] bool pinned(uint64_t va, uint64_t size) const noexcept;

    // The guest's UNPIN or FREE succeeded. Returns true when the memory is gone now, false
    // when a live queue holds it (kept, marked released, until the queue goes).
    bool release_memory(Handle h) noexcept;

    // A queue is gone (QUEUE_DESTROY, or destroyed by a revoke). `on_freed(const Memory &)`
    // runs for each released PIN or ALLOC that no queue holds any more.
    template <class OnFreed>
    void remove_queue(Handle h, OnFreed&& on_freed) noexcept {
        queues_.erase(h);
        sweep(on_freed);
    }

    // The GPU half of [va, va + size) was revoked: PINs overlapping it are gone, and so
    // are the queues that held them or used the range; `on_queue(Handle, Queue &)` runs for
    // each such queue before it is forgotten, `on_freed` for memory freed as a result.
    template <class OnQueue, class OnFreed>
    void range_revoked(uint64_t va, uint64_t size, OnQueue&& on_queue,
                       OnFreed&& on_freed) noexcept {
        for (auto q = queues_.begin(); q != queues_.end();) {
            auto next = std::next(q);
            if (queue_touches(q->second, va, size, /*pins_only=*/true)) {
                on_queue(q->first, q->second);
                queues_.erase(q);
            }
            q = next;
        }
        for (auto m = memory_.begin(); m != memory_.end();) {
            auto next = std::next(m);
            if (!m->second.alloc && overlaps(m->second.va, m->second.size, va, size)) {
                memory_.erase(m);
            }
            m = next;
        }
        sweep(on_freed);
    }

    // Session end: everything is gone on the device. `on_alloc(const Memory &)` runs for
    // every ALLOC, so its window range can be released.
    template <class OnAlloc>
    void clear(OnAlloc&& on_alloc) noexcept {
        for (auto& [h, m] : memory_) {
            if (m.alloc) {
                on_alloc(m);
            }
        }
        memory_.clear();
        queues_.clear();
        events_.clear();
    }

    template <class F>
    void for_each_queue(F&& f) {
        for (auto& [h, q] : queues_) {
            f(h, q);
        }
    }

    [[nodiscard]] std::size_t queue_count() const noexcept { return queues_.size(); }

    static bool overlaps(uint64_t a, uint64_t asize, uint64_t b, uint64_t bsize) noexcept {
        return a < b + bsize && b < a + asize;
    }

private:
    // The queue uses [va, va + size) directly, or holds memory (PINs only, or any)
    // overlapping it.
    [[nodiscard]] bool queue_touches(const Queue& q, uint64_t va, uint64_t size,
                                     bool pins_only) const noexcept;
    [[nodiscard]] bool held(const Memory& m) const noexcept;

    template <class OnFreed>
    void sweep(OnFreed& on_freed) noexcept {
        for (auto m = memory_.begin(); m != memory_.end();) {
            auto next = std::next(m);
            if (m->second.released && !held(m->second)) {
                on_freed(m->second);
                memory_.erase(m);
            }
            m = next;
        }
    }

    std::map<Handle, Memory> memory_;  // PIN and ALLOC handles, released ones included
    std::map<Handle, Queue> queues_;
    std::set<Handle> events_;
};

}  // namespace xenhsa::backend::core

#endif
