#include "memory.hpp"

#include <algorithm>
#include <xenhsa/frontend/errors.hpp>

#include "log.hpp"
#include "private_pages.hpp"
#include "rocm6.hpp"

namespace xenhsa::frontend::hsakmt {

namespace {

constexpr uint64_t kPage = XENHSA_PAGE_SIZE;
constexpr uint64_t kChunkBytes = uint64_t{XENHSA_MAP_MAX_PAGES} * kPage;
constexpr uint64_t kLargeAlign = 2ull << 20;
constexpr uint64_t kMaxAlign = 1ull << 30;

uint64_t round_up(uint64_t bytes) { return (bytes + kPage - 1) & ~(kPage - 1); }

}  // namespace

Memory::~Memory() {
    // The process keeps its own memory: user ranges move back first.
    while (!user_.empty()) {
        const auto [start, va] = *user_.begin();
        if (auto it = allocs_.find(va); it != allocs_.end()) {
            (void)unregister_moved(it);  // a failure still gives the bytes back when it can
        }
        user_.erase(start);
    }
    while (!allocs_.empty()) {
        auto it = allocs_.begin();
        it->second.holds = 0;
        (void)release_backend(it->second);
        drop(it);
    }
}

Memory::Allocation* Memory::find(uint64_t va) noexcept {
    auto it = allocs_.upper_bound(va);
    if (it == allocs_.begin()) {
        return nullptr;
    }
    --it;
    Allocation& a = it->second;
    return va - a.va < a.size && !a.freed ? &a : nullptr;
}

Result<uint64_t> Memory::mask_of(std::span<const uint32_t> nodes) const {
    uint64_t mask = 0;
    if (nodes.empty()) {
        for (uint32_t n = 0; n < topology_.nodes.size(); ++n) {
            mask |= topology_.is_gpu(n) ? (1ull << n) : 0;
        }
        return mask != 0 ? Result<uint64_t>(mask)
                         : Result<uint64_t>(errc(std::errc::no_such_device));
    }
    for (const uint32_t n : nodes) {
        if (!topology_.is_gpu(n)) {
            return errc(std::errc::invalid_argument);
        }
        mask |= 1ull << n;
    }
    return mask;
}

std::byte* Memory::placed_at(const Allocation& a, uint64_t off) noexcept {
    return a.user_start == 0
               ? nullptr
               : reinterpret_cast<std::byte*>(static_cast<uintptr_t>(a.user_start + off));
}

Result<void> Memory::fill_system(Allocation& a, const std::byte* contents) {
    if (lend_system_) {
        return fill_lent(a, contents);
    }
    const bool writable = a.flags.ui32.ReadOnly == 0;
    // Registered memory without `contents`: each chunk starts with the range's bytes as
    // they are when it replaces them (this process's heap may lie in the range).
    const bool keep = a.user_start != 0 && contents == nullptr;
    for (uint64_t off = 0; off < a.size; off += kChunkBytes) {
        const auto pages = static_cast<std::size_t>(std::min(kChunkBytes, a.size - off) / kPage);
        auto buffer = client_.share_at(a.va + off, pages, writable, placed_at(a, off),
                                       keep ? &copy_pages : nullptr);
        if (!buffer) {
            return refused(SystemStep::grant, buffer.error(), a, pages);
        }
        a.chunks.push_back(std::move(buffer.value()));
        if (contents != nullptr) {
            copy_pages(a.chunks.back().data(), contents + off, a.chunks.back().size());
        }
        auto handle = client_.map(a.chunks.back(), writable);
        if (!handle) {
            return refused(SystemStep::map, handle.error(), a, pages);
        }
        a.maps.push_back(handle.value());
    }
    auto pinned = pin_system(a);
    if (pinned || status_of(pinned.error()) != XENHSA_STATUS_UNSUPPORTED) {
        return pinned;
    }
    // The backend's kernel cannot pin this domain's grant mappings: from now on system
    // memory is the backend's pages, lent at the same VA.
    refused_once("PIN of granted guest pages",
                 "the backend's kernel cannot pin grant mappings for the GPU (a PV dom0); "
                 "system memory is lent by the backend instead (within its lend quota)",
                 spdlog::level::info);
    while (!a.maps.empty()) {  // a failure leaves exactly the MAPs still there to undo
        if (auto r = client_.unmap(a.maps.back()); !r) {
            return r;
        }
        a.maps.pop_back();
    }
    if (a.user_start != 0) {
        // A registration: its chunks hold the range's bytes; the caller moves them back and
        // registers again, lent.
        lend_system_ = true;
        return pinned;
    }
    for (GuestBuffer& chunk : a.chunks) {
        if (!chunk.release()) {
            return std::error_code(Errc::backend_broken);
        }
    }
    a.chunks.clear();
    lend_system_ = true;
    return fill_lent(a, contents);
}

Result<void> Memory::fill_lent(Allocation& a, const std::byte* contents) {
    const bool writable = a.flags.ui32.ReadOnly == 0;
    for (uint64_t off = 0; off < a.size; off += kChunkBytes) {
        const auto pages = static_cast<uint32_t>(std::min(kChunkBytes, a.size - off) / kPage);
        auto lent = client_.lend_at(a.va + off, pages, writable, placed_at(a, off));
        if (!lent) {
            return refused(SystemStep::lend, lent.error(), a, pages);
        }
        a.lent.push_back(std::move(lent.value()));
        if (contents != nullptr) {
            copy_pages(a.lent.back().data(), contents + off, a.lent.back().size());
        }
    }
    return pin_system(a);
}

Result<void> Memory::pin_system(Allocation& a) {
    uint32_t pin_flags = a.flags.ui32.ReadOnly != 0 ? XENHSA_PIN_READ_ONLY : 0u;
    pin_flags |= a.flags.ui32.CoarseGrain != 0 ? XENHSA_PIN_COARSE_GRAIN : 0u;
    auto pin = client_.pin(a.va, a.size, pin_flags);
    if (!pin) {
        return refused(SystemStep::pin, pin.error(), a, a.size / kPage);
    }
    a.pin = pin.value();
    return boost::outcome_v2::success();
}

uint64_t Memory::system_capacity() const { return system_capacity_bytes(limits_(), lend_system_); }

Result<uint64_t> Memory::available(uint32_t node) const {
    if (!topology_.is_gpu(node)) {
        return errc(std::errc::invalid_argument);  // the KFD has no GPU by that id
    }
    uint64_t heap = 0;
    for (const HsaMemoryProperties& bank : topology_.nodes[node].banks) {
        if (bank.HeapType == HSA_HEAPTYPE_FRAME_BUFFER_PRIVATE ||
            bank.HeapType == HSA_HEAPTYPE_FRAME_BUFFER_PUBLIC) {
            heap += bank.SizeInBytes;
        }
    }
    uint64_t used = 0;
    for (const auto& [va, a] : allocs_) {
        if (a.kind == Kind::device && a.node == node) {
            used += a.size;
        }
    }
    return heap > used ? heap - used : 0;
}

std::error_code Memory::refused(SystemStep step, const std::error_code& error, const Allocation& a,
                                uint64_t step_pages) const {
    SystemUse use;
    use.bytes = a.size;
    use.step_pages = step_pages;
    const auto count = [&](const Allocation& b) {
        for (const GuestBuffer& chunk : b.chunks) {
            use.mapped_pages += chunk.pages();
        }
        for (const LentBuffer& lent : b.lent) {
            use.lent_pages += lent.npages;
        }
    };
    for (const auto& [va, b] : allocs_) {
        count(b);
    }
    count(a);
    use.mapped_pages -= step == SystemStep::map ? step_pages : 0;  // its chunk is granted
    try {
        tell_limit_once(limit_refusal(limits_(), step, error, use));
    } catch (...) {
    }
    return error;
}

bool Memory::release_lent(Allocation& a) noexcept {
    bool ok = true;
    for (auto it = a.lent.rbegin(); it != a.lent.rend(); ++it) {
        it->mapping.reset();  // the range stays reserved PROT_NONE
        if (auto r = client_.unmap(it->handle); !r) {
            if (!client_.broken()) {
                log().error("giving back lent memory at {:#x}: {}", it->va, r.error().message());
            }
            ok = false;
        }
    }
    a.lent.clear();
    return ok;
}

Result<uint64_t> Memory::alloc(uint32_t node, uint64_t size, HsaMemFlags flags,
                               std::optional<uint64_t> fixed, uint64_t align) {
    if (size == 0 || node >= topology_.nodes.size() || size > XENHSA_VA_WINDOW_MAX ||
        (align != 0 && (align < kPage || (align & (align - 1)) != 0 || align > kMaxAlign))) {
        return errc(std::errc::invalid_argument);
    }
    if ((flags.Value & (rocm6::kMemNoAddress | rocm6::kMemOnlyAddress)) != 0) {
        refused_once("hsaKmtAllocMemory(NoAddress or OnlyAddress)",
                     "memory without an address, or an address without memory, is ROCm 6's "
                     "virtual memory API (KFD 1.15), which xenhsa does not offer");
        return errc(std::errc::not_supported);
    }
    const uint64_t bytes = round_up(size);
    const bool gpu_node = topology_.is_gpu(node);
    const Kind kind = !gpu_node                 ? Kind::system
                      : flags.ui32.Scratch != 0 ? Kind::scratch
                                                : Kind::device;
    if (kind == Kind::device && flags.ui32.HostAccess != 0) {
        refused_once("hsaKmtAllocMemory(device memory, HostAccess)",
                     "a guest CPU cannot reach GPU memory through Xen; the GPU heap is "
                     "FB_PRIVATE");
        return errc(std::errc::not_supported);
    }
    VaAllocator& window = client_.window();
    uint64_t va = 0;
    if (fixed) {
        if (align != 0 && *fixed % align != 0) {
            return errc(std::errc::invalid_argument);
        }
        if (auto claimed = window.claim(*fixed, bytes); !claimed) {
            return errc(std::errc::invalid_argument);
        }
        va = *fixed;
    } else {
        const uint64_t natural = kind != Kind::system && bytes >= kLargeAlign ? kLargeAlign : kPage;
        auto placed = window.allocate(bytes, std::max(natural, align));
        if (!placed) {
            return errc(std::errc::not_enough_memory);
        }
        va = placed.value();
    }
    Allocation a;
    a.va = va;
    a.size = bytes;
    a.kind = kind;
    a.node = node;
    a.flags = flags;
    Result<void> made = boost::outcome_v2::success();
    if (kind == Kind::system) {
        made = fill_system(a);
    } else if (kind == Kind::device) {
        uint32_t alloc_flags = XENHSA_ALLOC_DEVICE_LOCAL;
        alloc_flags |= flags.ui32.ExecuteAccess != 0 ? XENHSA_ALLOC_EXECUTABLE : 0u;
        alloc_flags |= flags.ui32.Uncached != 0 ? XENHSA_ALLOC_UNCACHED : 0u;
        alloc_flags |= flags.ui32.CoarseGrain != 0 ? XENHSA_ALLOC_COARSE_GRAIN : 0u;
        alloc_flags |= flags.ui32.ReadOnly != 0 ? XENHSA_ALLOC_READ_ONLY : 0u;
        auto allocated = client_.alloc_at(va, bytes, node, alloc_flags);
        if (allocated) {
            a.alloc = allocated.value().handle;
        } else {
            made = allocated.error();
        }
    }
    if (!made) {
        if (release_backend(a)) {
            a.chunks.clear();
            (void)window.release(va, bytes);
        }
        return made.error();
    }
    allocs_.emplace(va, std::move(a));
    return va;
}

bool Memory::release_backend(Allocation& a) noexcept {
    bool ok = true;
    auto step = [&](Result<void> r) {
        if (!r) {
            // Once the session ended every release fails alike; its end was said once.
            if (!client_.broken()) {
                log().error("releasing guest memory at {:#x}: {}", a.va, r.error().message());
            }
            ok = false;
        }
    };
    for (auto& [va, sub] : a.scratch) {
        if (sub.gpu_mapped) {
            step(client_.unmap_from_gpu(sub.alloc));
        }
        step(client_.free(sub.alloc));
    }
    a.scratch.clear();
    if (a.gpu_mask != 0) {
        step(client_.unmap_from_gpu(a.pin != 0 ? a.pin : a.alloc));
        a.gpu_mask = 0;
        a.mapped_nodes.clear();
    }
    if (a.pin != 0) {
        step(client_.unpin(a.pin));
        a.pin = 0;
    }
    for (auto it = a.maps.rbegin(); it != a.maps.rend(); ++it) {
        step(client_.unmap(*it));
    }
    a.maps.clear();
    // Lent pages a live queue holds stay lent and mapped until it goes (drop).
    if (a.holds == 0 && !release_lent(a)) {
        ok = false;
    }
    if (a.alloc != 0) {
        step(client_.free(a.alloc));
        a.alloc = 0;
    }
    return ok;
}

// The backend released (or deferred) everything: give the pages and the VA back, unless
// a queue still holds them (then release_held does it).
void Memory::drop(std::map<uint64_t, Allocation>::iterator it) noexcept {
    Allocation& a = it->second;
    if (a.holds != 0) {
        a.freed = true;
        return;
    }
    bool pages_back = release_lent(a);
    for (GuestBuffer& chunk : a.chunks) {
        if (!chunk.release()) {
            pages_back = false;  // the backend still maps them: left to the hypervisor
            chunk.reset();
        }
    }
    if (pages_back) {
        (void)client_.window().release(a.va, a.size);
    }
    allocs_.erase(it);
}

Result<void> Memory::free(uint64_t va) {
    auto it = allocs_.find(va);
    // A registered user range goes with its deregistration, never freed by its GPU VA.
    if (it == allocs_.end() || it->second.freed || it->second.user_start != 0) {
        return errc(std::errc::invalid_argument);
    }
    if (!release_backend(it->second)) {
        // The backend is broken or gone: nothing here is reused.
        it->second.chunks.clear();
        it->second.freed = true;
        it->second.holds = std::max(it->second.holds, 1u);
        return std::error_code(Errc::backend_broken);
    }
    drop(it);
    return boost::outcome_v2::success();
}

Result<void> Memory::map_handle(Allocation& a, Handle handle, uint64_t mask) {
    if (a.gpu_mask != 0 && (mask & ~a.gpu_mask) == 0) {
        return boost::outcome_v2::success();  // already reachable from those nodes
    }
    // The backend maps a handle once (BAD_STATE when mapped): more nodes take an unmap
    // first, and a remap that fails gives the old nodes back.
    const uint64_t old_mask = a.gpu_mask;
    if (old_mask != 0) {
        if (auto r = client_.unmap_from_gpu(handle); !r) {
            return r;
        }
        a.gpu_mask = 0;
    }
    const uint32_t flags = a.flags.ui32.ReadOnly != 0 ? XENHSA_GPU_MAP_READ_ONLY : 0u;
    auto gpu_va = client_.map_to_gpu(handle, mask, flags);
    if (!gpu_va) {
        if (old_mask != 0 && client_.map_to_gpu(handle, old_mask, flags)) {
            a.gpu_mask = old_mask;
        } else {
            a.mapped_nodes.clear();
        }
        return gpu_va.error();
    }
    a.gpu_mask = mask;
    a.mapped_nodes.clear();
    for (uint32_t n = 0; n < 64; ++n) {
        if ((mask >> n) & 1u) {
            a.mapped_nodes.push_back(n);
        }
    }
    return boost::outcome_v2::success();
}

Result<uint64_t> Memory::map_to_gpu(uint64_t address, uint64_t size,
                                    std::span<const uint32_t> nodes) {
    const auto [a, va] = locate(address);
    if (a == nullptr) {
        return errc(std::errc::invalid_argument);
    }
    auto mask = mask_of(nodes);
    if (!mask) {
        return mask.error();
    }
    if (a->kind != Kind::scratch) {
        if (auto r = map_handle(*a, a->pin != 0 ? a->pin : a->alloc, mask.value()); !r) {
            return r.error();
        }
        a->user_gpu_maps += a->user_start != 0 ? 1 : 0;
        return va;  // a user range's: its VA in the window, as the thunk's userptr GPU VA
    }
    // A scratch sub-range becomes device memory of its own.
    const uint64_t bytes = round_up(size);
    if (va % kPage != 0 || bytes == 0 || va - a->va > a->size - bytes ||
        a->scratch.count(va) != 0) {
        return errc(std::errc::invalid_argument);
    }
    auto allocated = client_.alloc_at(va, bytes, a->node, XENHSA_ALLOC_DEVICE_LOCAL);
    if (!allocated) {
        return allocated.error();
    }
    const Handle handle = allocated.value().handle;
    if (auto gpu_va = client_.map_to_gpu(handle, mask.value(), 0); !gpu_va) {
        (void)client_.free(handle);
        return gpu_va.error();
    }
    a->scratch.emplace(va, ScratchMap{bytes, handle});
    return va;
}

Result<void> Memory::unmap_from_gpu(uint64_t address) {
    const auto [a, va] = locate(address);
    if (a == nullptr) {
        return errc(std::errc::invalid_argument);
    }
    if (a->user_start != 0 && a->user_gpu_maps > 1) {
        --a->user_gpu_maps;  // another lock of the range still maps it
        return boost::outcome_v2::success();
    }
    if (a->kind == Kind::scratch) {
        auto it = a->scratch.find(va);
        if (it == a->scratch.end()) {
            return errc(std::errc::invalid_argument);
        }
        // The record goes only once the backend let go of both (release_backend retries).
        ScratchMap& sub = it->second;
        if (sub.gpu_mapped) {
            if (auto r = client_.unmap_from_gpu(sub.alloc); !r) {
                return r;
            }
            sub.gpu_mapped = false;
        }
        if (auto r = client_.free(sub.alloc); !r) {
            return r;
        }
        a->scratch.erase(it);
        return boost::outcome_v2::success();
    }
    if (a->gpu_mask == 0) {
        return boost::outcome_v2::success();  // as the thunk: unmapping unmapped memory is fine
    }
    if (auto r = client_.unmap_from_gpu(a->pin != 0 ? a->pin : a->alloc); !r) {
        return r;
    }
    a->gpu_mask = 0;
    a->user_gpu_maps = 0;
    a->mapped_nodes.clear();
    return boost::outcome_v2::success();
}

Result<HsaPointerInfo> Memory::pointer_info(uint64_t address) {
    Allocation* a = locate(address).a;
    if (a == nullptr) {
        return errc(std::errc::invalid_argument);
    }
    HsaPointerInfo info{};
    info.Type = a->registrations != 0 && a->kind == Kind::system ? HSA_POINTER_REGISTERED_USER
                                                                 : HSA_POINTER_ALLOCATED;
    info.Node = a->node;
    info.MemFlags = a->flags;
    const bool user = a->user_start != 0;
    const uint64_t cpu = user ? a->user_addr : a->va;
    info.CPUAddress = reinterpret_cast<void*>(static_cast<uintptr_t>(cpu));
    info.GPUAddress = user ? a->va + (a->user_addr - a->user_start) : a->va;
    info.SizeInBytes = user ? a->user_size : a->size;
    info.NMappedNodes = static_cast<HSAuint32>(a->mapped_nodes.size());
    info.MappedNodes = a->mapped_nodes.empty() ? nullptr : a->mapped_nodes.data();
    info.NRegisteredNodes = info.NMappedNodes;
    info.RegisteredNodes = info.MappedNodes;
    info.UserData = a->user_data;
    return info;
}

Result<void> Memory::set_user_data(uint64_t va, void* data) {
    Allocation* a = locate(va).a;
    if (a == nullptr) {
        return errc(std::errc::invalid_argument);
    }
    a->user_data = data;
    return boost::outcome_v2::success();
}

bool Memory::gpu_mapped(uint64_t va, uint64_t len, uint32_t node) const noexcept {
    auto it = allocs_.upper_bound(va);
    if (it == allocs_.begin() || node >= 64) {
        return false;
    }
    --it;
    const Allocation& a = it->second;
    return !a.freed && va - a.va < a.size && len <= a.size - (va - a.va) &&
           ((a.gpu_mask >> node) & 1u) != 0;
}

void Memory::hold(uint64_t va) noexcept {
    if (Allocation* a = find(va)) {
        ++a->holds;
    }
}

void Memory::release_held(uint64_t va) noexcept {
    auto it = allocs_.upper_bound(va);
    if (it == allocs_.begin()) {
        return;
    }
    --it;
    Allocation& a = it->second;
    if (va - a.va >= a.size || a.holds == 0) {
        return;
    }
    if (--a.holds == 0 && a.freed) {
        drop(it);
    }
}

}  // namespace xenhsa::frontend::hsakmt
