// GpuContext: construction, lookups, the questions the backend's checks ask, stats. The
// operations live in context_*.cpp.
#include <algorithm>

#include "context_impl.hpp"

namespace xenhsa::hsa {

namespace {

using detail::kNoSlot;
using detail::MemKind;
using detail::MemObj;
using detail::QueueObj;

constexpr uint64_t kPointerSize = 8;

bool overlaps(Va a, uint64_t a_size, Va b, uint64_t b_size) noexcept {
    return a < b + b_size && b < a + a_size;
}

// Whether `f(va, size)` holds for the ring or a pointer of the queue.
template <class F>
bool any_queue_range(const QueueObj& q, F&& f) noexcept {
    return f(q.ring, q.ring_size) || f(q.rptr, kPointerSize) || f(q.wptr, kPointerSize);
}

// Makes a handle table allocation-free from now on: fill every slot once and empty it
// again, so that the slot vector and the free list both hold `capacity` entries.
template <class T>
void prefill(HandleTable<T>& table) {
    std::vector<Handle> handles;
    handles.reserve(table.capacity());
    while (auto h = table.insert(T{})) {
        handles.push_back(*h);
    }
    for (auto it = handles.rbegin(); it != handles.rend(); ++it) {
        table.erase(*it);
    }
}

}  // namespace

GpuContext::Impl::Impl(KfdDevice& dev, GpuLimits lim)
    : device(dev),
      capacity(lim),
      limits(lim),
      pins(detail::kPinKind, lim.max_handles),
      allocs(detail::kAllocKind, lim.max_handles),
      queues(detail::kQueueKind, lim.max_queues),
      events(detail::kEventKind, lim.max_events),
      // A deferred release has no handle: at most three memory objects and one error
      // event per live queue are held that way.
      mems(lim.max_handles + 3 * lim.max_queues),
      evs(lim.max_events + lim.max_queues),
      relay(std::make_shared<detail::FaultRelay>(lim.max_queues)),
      waits(dev, lim.max_waits) {
    prefill(pins);
    prefill(allocs);
    prefill(queues);
    prefill(events);
    scratch_queues.reserve(lim.max_queues);
}

uint32_t GpuContext::Impl::live_handles() const noexcept {
    return pins.size() + allocs.size() + queues.size() + events.size();
}

uint32_t GpuContext::Impl::mem_slot(Handle h) const noexcept {
    if (const uint32_t* slot = pins.find(h)) {
        return *slot;
    }
    if (const uint32_t* slot = allocs.find(h)) {
        return *slot;
    }
    return detail::kNoSlot;
}

uint32_t GpuContext::Impl::queue_memory(Va va, uint64_t len, uint32_t node) const noexcept {
    uint32_t found = detail::kNoSlot;
    mems.for_each([&](uint32_t slot, const detail::MemObj& mem) {
        const bool usable = found == detail::kNoSlot && mem.handle != 0 && mem.mapped() &&
                            !mem.unmap_deferred && node < 64 && (mem.node_mask >> node & 1u) != 0;
        if (usable && va >= mem.va && len <= mem.size && va - mem.va <= mem.size - len) {
            found = slot;
        }
    });
    return found;
}

bool GpuContext::Impl::queue_touches(const QueueObj& queue, Va va, uint64_t len) const noexcept {
    if (any_queue_range(queue, [&](Va r, uint64_t rs) { return overlaps(r, rs, va, len); })) {
        return true;
    }
    bool held = false;
    mems.for_each([&](uint32_t, const MemObj& mem) {
        if (held || !overlaps(mem.va, mem.size, va, len)) {
            return;
        }
        held = any_queue_range(
            queue, [&](Va r, uint64_t rs) { return overlaps(r, rs, mem.va, mem.size); });
    });
    return held;
}

std::optional<MemoryInfo> GpuContext::memory(Handle h) const noexcept {
    const uint32_t slot = impl_->mem_slot(h);
    if (slot == kNoSlot) {
        return std::nullopt;
    }
    const MemObj& mem = impl_->mems[slot];
    return MemoryInfo{mem.va, mem.size, mem.kind == MemKind::alloc,
                      mem.mapped() && !mem.unmap_deferred};
}

bool GpuContext::event_live(Handle h) const noexcept { return impl_->events.find(h) != nullptr; }

bool GpuContext::queue_live(Handle h) const noexcept { return impl_->queues.find(h) != nullptr; }

bool GpuContext::has_queues() const noexcept { return impl_->queues.size() != 0; }

bool GpuContext::queue_range_free(Va va, uint64_t size, uint32_t node) const noexcept {
    if (impl_->queue_memory(va, size, node) == kNoSlot) {
        return false;
    }
    bool used = false;
    impl_->queues.for_each([&](Handle, const QueueObj& queue) {
        used = used ||
               any_queue_range(queue, [&](Va r, uint64_t rs) { return overlaps(r, rs, va, size); });
    });
    return !used;
}

bool GpuContext::range_held(Va va, uint64_t size) const noexcept {
    bool held = false;
    impl_->queues.for_each([&](Handle, const QueueObj& queue) {
        held = held || impl_->queue_touches(queue, va, size);
    });
    return held;
}

bool GpuContext::pinned(Va va, uint64_t size) const noexcept {
    bool found = false;
    impl_->mems.for_each([&](uint32_t, const MemObj& mem) {
        found = found || (mem.kind == MemKind::pin && mem.handle != 0 &&
                          overlaps(mem.va, mem.size, va, size));
    });
    return found;
}

void GpuContext::set_limits(const GpuLimits& wanted) noexcept {
    Impl& s = *impl_;
    s.limits.max_handles = std::min(wanted.max_handles, s.capacity.max_handles);
    s.limits.max_pinned_pages = std::min(wanted.max_pinned_pages, s.capacity.max_pinned_pages);
    s.limits.max_alloc_bytes = std::min(wanted.max_alloc_bytes, s.capacity.max_alloc_bytes);
    s.limits.max_queues = std::min(wanted.max_queues, s.capacity.max_queues);
    s.limits.max_events = std::min(wanted.max_events, s.capacity.max_events);
}

GpuContext::GpuContext(KfdDevice& device, GpuLimits limits)
    : impl_(std::make_unique<Impl>(device, limits)) {
    device.set_fault_handler(
        [relay = impl_->relay](const GpuFault& fault) { relay->on_fault(fault); });
}

GpuContext::~GpuContext() {
    impl_->relay->set_callback({});  // a context going away reports nothing
    teardown();
    impl_->device.set_fault_handler({});
}

KfdDevice& GpuContext::device() noexcept { return impl_->device; }

void GpuContext::on_queue_lost(QueueLost callback) {
    impl_->relay->set_callback(std::move(callback));
}

GpuStats GpuContext::stats() const noexcept {
    GpuStats s;
    s.pinned_pages = impl_->pinned_pages;
    s.alloc_bytes = impl_->alloc_bytes;
    s.queues = impl_->queues.size();
    s.events = impl_->events.size();
    s.handles = impl_->live_handles();
    impl_->mems.for_each([&](uint32_t, const detail::MemObj& mem) {
        if (mem.handle == 0 || mem.unmap_deferred) {
            ++s.deferred;
        }
    });
    impl_->evs.for_each([&](uint32_t, const detail::EventObj& ev) {
        if (ev.handle == 0) {
            ++s.deferred;
        }
    });
    return s;
}

}  // namespace xenhsa::hsa
