// Release paths: deferred releases, revoke_range() and teardown(). None of them fails or
// allocates (everything they touch was sized at construction); a device error here is a
// bug and aborts (fatal.hpp).
#include "context_impl.hpp"
#include "fatal.hpp"

namespace xenhsa::hsa {

using detail::EventObj;
using detail::kNoSlot;
using detail::MemKind;
using detail::MemObj;
using detail::QueueObj;

bool GpuContext::Impl::stop_queue(const QueueObj& queue) noexcept {
    const bool unreported = relay->remove(queue.id);
    doorbell_used[queue.doorbell] = false;
    doorbell_queue[queue.doorbell] = 0;
    if (auto r = device.destroy_queue(queue.id); !r) {
        detail::fatal("destroy queue", queue.id, r.error());
    }
    return unreported;
}

void GpuContext::Impl::drop_refs(const QueueObj& queue) noexcept {
    for (uint32_t mem : queue.mems) {
        if (mem != kNoSlot) {
            --mems[mem].queue_refs;
        }
    }
    if (queue.error_event != kNoSlot) {
        --evs[queue.error_event].queue_refs;
    }
}

void GpuContext::Impl::destroy_event_now(uint32_t slot) noexcept {
    EventObj& ev = evs[slot];
    if (auto r = device.destroy_event(ev.id); !r) {
        detail::fatal("destroy event", ev.id, r.error());
    }
    if (ev.handle != 0) {
        events.erase(ev.handle);
    }
    evs.release(slot);
}

void GpuContext::Impl::settle_event(uint32_t slot) noexcept {
    if (evs.live(slot) && evs[slot].queue_refs == 0 && evs[slot].handle == 0) {
        destroy_event_now(slot);
    }
}

void GpuContext::Impl::unmap_now(uint32_t slot) noexcept {
    MemObj& mem = mems[slot];
    if (auto r = device.unmap_from_gpu(mem.va); !r) {
        detail::fatal("unmap from GPU", mem.va, r.error());
    }
    mem.node_mask = 0;
    mem.map_read_only = false;
    mem.unmap_deferred = false;
}

void GpuContext::Impl::settle_unmap(uint32_t slot) noexcept {
    if (!mems.live(slot)) {
        return;
    }
    const MemObj& mem = mems[slot];
    if (mem.queue_refs == 0 && mem.mapped() && (mem.unmap_deferred || mem.handle == 0)) {
        unmap_now(slot);
    }
}

void GpuContext::Impl::release_now(uint32_t slot, FreedAllocs* freed) noexcept {
    MemObj& mem = mems[slot];
    if (mem.mapped()) {
        unmap_now(slot);
    }
    if (mem.kind == MemKind::pin) {
        if (auto r = device.deregister_user(mem.va); !r) {
            detail::fatal("deregister memory", mem.va, r.error());
        }
        pinned_pages -= mem.size / detail::kPage;
        if (mem.handle != 0) {
            pins.erase(mem.handle);
        }
    } else {
        if (auto r = device.free(mem.va); !r) {
            detail::fatal("free memory", mem.va, r.error());
        }
        alloc_bytes -= mem.size;
        if (mem.handle != 0) {
            allocs.erase(mem.handle);
        }
        if (freed != nullptr) {
            freed->alloc_freed(mem.va, mem.size);
        }
    }
    mems.release(slot);
}

void GpuContext::Impl::settle_release(uint32_t slot, FreedAllocs* freed) noexcept {
    if (mems.live(slot) && mems[slot].queue_refs == 0 && mems[slot].handle == 0) {
        release_now(slot, freed);
    }
}

void GpuContext::revoke_range(Va va, uint64_t size, FreedAllocs& freed) noexcept {
    Impl& s = *impl_;
    if (size == 0) {
        return;
    }
    const Va end = va + size < va ? UINT64_MAX : va + size;
    bool any = false;
    s.mems.for_each([&](uint32_t, MemObj& mem) {
        mem.marked = mem.va < end && va < mem.end();
        any = any || mem.marked;
    });
    if (!any) {
        return;  // idempotent: a second revoke finds nothing
    }

    // 1. the queues using the range
    s.scratch_queues.clear();
    s.queues.for_each([&](Handle h, QueueObj& queue) {
        for (uint32_t mem : queue.mems) {
            if (mem != kNoSlot && s.mems[mem].marked) {
                s.scratch_queues.push_back(h);
                return;
            }
        }
    });
    for (Handle h : s.scratch_queues) {
        const QueueObj queue = *s.queues.erase(h);
        const bool unreported = s.stop_queue(queue);
        s.drop_refs(queue);
        if (unreported) {
            s.relay->report(h, 0);
        }
    }
    // 2. error events whose guest handle went while those queues held them
    s.evs.for_each([&](uint32_t slot, EventObj&) { s.settle_event(slot); });
    // 3. GPU mappings: the range's, and deferred ones the queues held elsewhere
    s.mems.for_each([&](uint32_t slot, MemObj& mem) {
        if (mem.marked && mem.mapped()) {
            s.unmap_now(slot);
        } else {
            s.settle_unmap(slot);
        }
    });
    // 4. the memory itself; its handles go stale
    s.mems.for_each([&](uint32_t slot, MemObj& mem) {
        if (mem.marked) {
            s.release_now(slot, &freed);
        } else {
            s.settle_release(slot, &freed);
        }
    });
}

void GpuContext::teardown() noexcept {
    Impl& s = *impl_;
    // Waits touch events: they end (and their `done` runs) before anything is released.
    s.waits.stop();
    s.mems.for_each([](uint32_t, MemObj& mem) { mem.marked = false; });

    // 1. queues; what they held is queue memory
    s.scratch_queues.clear();
    s.queues.for_each([&](Handle h, QueueObj&) { s.scratch_queues.push_back(h); });
    for (Handle h : s.scratch_queues) {
        const QueueObj queue = *s.queues.erase(h);
        if (s.stop_queue(queue)) {
            s.relay->report(h, 0);
        }
        for (uint32_t mem : queue.mems) {
            if (mem != kNoSlot) {
                s.mems[mem].marked = true;
            }
        }
        s.drop_refs(queue);
    }
    // 2. events, the waits' cancel events included
    s.evs.for_each([&](uint32_t slot, EventObj&) { s.destroy_event_now(slot); });
    s.waits.release_events();
    // 3. GPU mappings
    s.mems.for_each([&](uint32_t slot, MemObj& mem) {
        if (mem.mapped()) {
            s.unmap_now(slot);
        }
    });
    // 4. queue memory, 5. all other memory
    s.mems.for_each([&](uint32_t slot, MemObj& mem) {
        if (mem.marked) {
            s.release_now(slot, nullptr);
        }
    });
    s.mems.for_each([&](uint32_t slot, MemObj&) { s.release_now(slot, nullptr); });
    s.doorbell_seen.fill(0);
}

}  // namespace xenhsa::hsa
