// PIN, UNPIN, MAP_TO_GPU, UNMAP_FROM_GPU, ALLOC, FREE.
//
// errno values (on top of the device's): EBADF unknown/stale/other-kind handle, EDQUOT a
// quota, EINVAL a flag or range the context refuses, EBUSY the object's state forbids it
// (still mapped to the GPU, not mapped, already mapped, or a range that collides with
// memory the context still holds).
#include <xenhsa/proto/memory.h>

#include <algorithm>

#include "context_impl.hpp"
#include "fatal.hpp"

namespace xenhsa::hsa {

namespace {

using detail::MemKind;
using detail::MemObj;

bool overlaps(const MemObj& mem, Va va, uint64_t size) noexcept {
    return va < mem.end() && mem.va < va + size;
}

// A new PIN or ALLOC must not touch memory the context holds. KFD would register a PIN
// overlapping another one that starts elsewhere, the software agent would not: refused
// here, every device answers the same (found by the sequence fuzzer). Deferred objects
// count: their memory is still registered.
bool collides(const detail::ObjectPool<MemObj>& mems, Va va, uint64_t size) {
    bool hit = false;
    mems.for_each([&](uint32_t, const MemObj& mem) { hit = hit || overlaps(mem, va, size); });
    return hit;
}

// What a new PIN or ALLOC counts against: the handles (`handles_full`), and pinned pages
// or ALLOC bytes, `amount` more of them.
struct Budget {
    bool handles_full;
    uint64_t& used;
    uint64_t limit;
    uint64_t amount;
};

// PIN and ALLOC once their arguments passed: the quotas (EDQUOT), the range (EBUSY), then
// the object's slot, the device call and the handle; a failed step undoes exactly the
// ones before it.
template <class Make, class Unmake>
Result<Handle> add_memory(detail::ObjectPool<MemObj>& mems, HandleTable<uint32_t>& table,
                          const MemObj& mem, Budget budget, Make&& make, Unmake&& unmake,
                          const char* undo_what) {
    if (budget.handles_full || budget.amount > budget.limit - std::min(budget.used, budget.limit)) {
        return detail::quota_exceeded();
    }
    if (collides(mems, mem.va, mem.size)) {
        return errc(std::errc::device_or_resource_busy);
    }
    auto slot = mems.acquire(mem);
    if (!slot) {
        return detail::quota_exceeded();
    }
    if (auto r = make(); !r) {
        mems.release(*slot);
        return r.error();
    }
    auto handle = table.insert(*slot);  // cannot fail: capacity == max_handles
    if (!handle) {
        if (auto undo = unmake(); !undo) {
            detail::fatal(undo_what, mem.va, undo.error());
        }
        mems.release(*slot);
        return detail::quota_exceeded();
    }
    mems[*slot].handle = *handle;
    budget.used += budget.amount;
    return *handle;
}

}  // namespace

Result<Handle> GpuContext::pin(Va va, uint64_t size, uint32_t flags) {
    Impl& s = *impl_;
    if ((flags & ~XENHSA_PIN_FLAGS_ALL) != 0 || !xenhsa_va_range_ok(va, size)) {
        return errc(std::errc::invalid_argument);
    }
    return add_memory(
        s.mems, s.pins, MemObj{MemKind::pin, va, size, flags},
        Budget{s.live_handles() >= s.limits.max_handles, s.pinned_pages, s.limits.max_pinned_pages,
               size / detail::kPage},
        [&] { return s.device.register_user(va, size, (flags & XENHSA_PIN_READ_ONLY) != 0); },
        [&] { return s.device.deregister_user(va); }, "deregister after a failed pin");
}

Result<Handle> GpuContext::alloc(Va va, uint64_t size, uint32_t node, uint32_t flags) {
    Impl& s = *impl_;
    if ((flags & ~XENHSA_ALLOC_FLAGS_ALL) != 0 || node >= XENHSA_QUERY_MAX_NODES ||
        !xenhsa_va_range_ok(va, size)) {
        return errc(std::errc::invalid_argument);
    }
    return add_memory(
        s.mems, s.allocs, MemObj{MemKind::alloc, va, size, flags},
        Budget{s.live_handles() >= s.limits.max_handles, s.alloc_bytes, s.limits.max_alloc_bytes,
               size},
        [&] { return s.device.alloc(node, va, size, flags); }, [&] { return s.device.free(va); },
        "free after a failed alloc");
}

// UNPIN and FREE: at once, or deferred while a live queue holds the memory.
Result<void> GpuContext::Impl::release_memory(HandleTable<uint32_t>& table, Handle h,
                                              FreedAllocs* freed) {
    Impl& s = *this;
    const uint32_t* found = table.find(h);
    if (found == nullptr) {
        return errc(std::errc::bad_file_descriptor);
    }
    const uint32_t slot = *found;
    MemObj& mem = s.mems[slot];
    if (mem.queue_refs > 0) {
        table.erase(h);
        mem.handle = 0;  // the last queue using it releases it (settle_release)
        return boost::outcome_v2::success();
    }
    if (mem.mapped()) {
        return errc(std::errc::device_or_resource_busy);
    }
    auto r = mem.kind == MemKind::pin ? s.device.deregister_user(mem.va) : s.device.free(mem.va);
    if (!r) {
        return r.error();
    }
    table.erase(h);
    mem.handle = 0;
    if (mem.kind == MemKind::pin) {
        s.pinned_pages -= mem.size / detail::kPage;
    } else {
        s.alloc_bytes -= mem.size;
        if (freed != nullptr) {
            freed->alloc_freed(mem.va, mem.size);
        }
    }
    s.mems.release(slot);
    return boost::outcome_v2::success();
}

Result<void> GpuContext::unpin(Handle pin) {
    return impl_->release_memory(impl_->pins, pin, nullptr);
}

Result<void> GpuContext::free(Handle alloc, FreedAllocs& freed) {
    return impl_->release_memory(impl_->allocs, alloc, &freed);
}

Result<Va> GpuContext::map_to_gpu(Handle memory, uint64_t node_mask, uint32_t flags) {
    Impl& s = *impl_;
    const uint32_t slot = s.mem_slot(memory);
    if (slot == detail::kNoSlot) {
        return errc(std::errc::bad_file_descriptor);
    }
    if (node_mask == 0 || (flags & ~XENHSA_GPU_MAP_FLAGS_ALL) != 0) {
        return errc(std::errc::invalid_argument);
    }
    MemObj& mem = s.mems[slot];
    // Read-only memory (a read-only grant, a read-only allocation) is never GPU-writable.
    const bool read_only = (flags & XENHSA_GPU_MAP_READ_ONLY) != 0 ||
                           (mem.kind == MemKind::pin && (mem.flags & XENHSA_PIN_READ_ONLY)) ||
                           (mem.kind == MemKind::alloc && (mem.flags & XENHSA_ALLOC_READ_ONLY));
    if (mem.unmap_deferred) {
        // The mapping still exists for the queue holding it: taking it back is fine, a
        // different one is not possible until the queue goes.
        if (mem.node_mask != node_mask || mem.map_read_only != read_only) {
            return errc(std::errc::device_or_resource_busy);
        }
        mem.unmap_deferred = false;
        return mem.va;
    }
    if (mem.mapped()) {
        return errc(std::errc::device_or_resource_busy);
    }
    if (auto r = s.device.map_to_gpu(mem.va, node_mask, read_only); !r) {
        return r.error();
    }
    mem.node_mask = node_mask;
    mem.map_read_only = read_only;
    return mem.va;
}

Result<void> GpuContext::unmap_from_gpu(Handle memory) {
    Impl& s = *impl_;
    const uint32_t slot = s.mem_slot(memory);
    if (slot == detail::kNoSlot) {
        return errc(std::errc::bad_file_descriptor);
    }
    MemObj& mem = s.mems[slot];
    if (!mem.mapped() || mem.unmap_deferred) {
        return errc(std::errc::device_or_resource_busy);
    }
    if (mem.queue_refs > 0) {
        mem.unmap_deferred = true;  // the last queue using it unmaps it (settle_unmap)
        return boost::outcome_v2::success();
    }
    if (auto r = s.device.unmap_from_gpu(mem.va); !r) {
        return r.error();
    }
    mem.node_mask = 0;
    mem.map_read_only = false;
    return boost::outcome_v2::success();
}

}  // namespace xenhsa::hsa
