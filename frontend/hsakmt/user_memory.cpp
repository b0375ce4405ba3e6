// hsaKmtRegisterMemory of the process's own memory. A guest cannot grant pages it already
// has from user space (gntalloc hands out new ones), so registration moves the range's
// bytes onto pages granted (or lent) as system memory's, mapped over the range at its own
// VA; the backend maps them at a VA of the window, which the GPU uses (AlternateVAGPU, as
// the thunk's userptr GPU VA). Deregistration moves the bytes back to private anonymous
// memory. Each move copies the bytes and moves the new pages over the range with nothing
// in between, so that this library's own use of the heap, which may lie in the range (the
// first and last pages are shared with the program's other objects), loses nothing; other
// threads must not write the range while it is registered or deregistered, as ROCr's lock
// and unlock of a copy's buffer do. (Lent pages, a PV dom0's backend, are mapped over the
// range with a copy taken before: gntdev's mappings cannot move.)
#include <sys/mman.h>

#include <cstring>
#include <xenhsa/frontend/errors.hpp>

#include "log.hpp"
#include "memory.hpp"
#include "private_pages.hpp"

namespace xenhsa::frontend::hsakmt {

namespace {

constexpr uint64_t kUserPage = XENHSA_PAGE_SIZE;

uint64_t page_down(uint64_t va) { return va & ~(kUserPage - 1); }

std::byte* as_ptr(uint64_t va) { return reinterpret_cast<std::byte*>(static_cast<uintptr_t>(va)); }

}  // namespace

Memory::Located Memory::locate(uint64_t va) noexcept {
    if (Allocation* a = find(va)) {
        return {a, va};
    }
    auto it = user_.upper_bound(va);
    if (it == user_.begin()) {
        return {};
    }
    --it;
    auto found = allocs_.find(it->second);
    if (found == allocs_.end()) {
        return {};
    }
    Allocation& a = found->second;
    if (va - a.user_start >= a.size || a.freed) {
        return {};
    }
    return {&a, a.va + (va - a.user_start)};
}

Result<void> Memory::register_user(uint64_t va, uint64_t size) {
    if (size == 0 || va + size < va) {
        return errc(std::errc::invalid_argument);
    }
    if (Allocation* a = find(va)) {
        if (a->kind != Kind::system || va - a->va + size > a->size) {
            return errc(std::errc::invalid_argument);
        }
        ++a->registrations;  // already granted, MAPped and PINned
        return boost::outcome_v2::success();
    }
    const Located held = locate(va);
    if (held.a != nullptr) {
        if (va - held.a->user_start + size > held.a->size) {
            refused_once("hsaKmtRegisterMemory*",
                         "a range that overlaps a registered range without lying inside it "
                         "cannot be registered: its pages already moved onto shared pages");
            return errc(std::errc::invalid_argument);
        }
        ++held.a->registrations;
        return boost::outcome_v2::success();
    }
    const bool lent = lend_system_;
    auto moved = register_moved(va, size);
    if (!moved && !lent && lend_system_) {
        moved = register_moved(va, size);  // the backend cannot pin granted pages: lent
    }
    return moved;
}

Result<void> Memory::register_moved(uint64_t va, uint64_t size) {
    const uint64_t start = page_down(va);
    const uint64_t end = page_down(va + size + kUserPage - 1);
    const uint64_t bytes = end - start;
    const VaAllocator& window = client_.window();
    const bool overlaps_window = start < window.base() + window.size() && window.base() < end;
    auto next = user_.lower_bound(start);
    const bool overlaps_user = next != user_.end() && next->first < end;
    if (overlaps_window || overlaps_user || bytes > XENHSA_VA_WINDOW_MAX) {
        refused_once("hsaKmtRegisterMemory*",
                     "the range overlaps memory this library placed or registered already");
        return errc(std::errc::invalid_argument);
    }
    std::string why;
    auto range = private_range(start, end, why);
    if (!range) {
        refused_once("hsaKmtRegisterMemory*",
                     "only a process's private memory (malloc, new, a private mmap) can be "
                     "registered in a xenhsa guest, its pages moved onto pages shared with the "
                     "backend: " +
                         why);
        return range.error();
    }
    // The way back first, so that it cannot fail once the pages moved.
    auto copy = PageCopy::reserve(bytes);
    if (!copy) {
        return copy.error();
    }
    auto placed = client_.window().allocate(bytes);
    if (!placed) {
        return errc(std::errc::not_enough_memory);
    }
    Allocation a;
    a.va = placed.value();
    a.size = bytes;
    a.kind = Kind::system;
    a.node = 0;
    a.registrations = 1;
    a.user_start = start;
    a.user_addr = va;
    a.user_size = size;
    a.user_prot = range.value().prot;
    // Granted pages take the range's bytes chunk by chunk as they replace it (fill_system);
    // lent pages (a PV dom0's backend) are mapped with the bytes of a copy taken now.
    const bool lent = lend_system_;
    const std::byte* contents = nullptr;
    if (lent) {
        copy.value().take(as_ptr(start));
        contents = static_cast<const std::byte*>(copy.value().data());
    }
    Result<void> made = fill_system(a, contents);
    if (made && a.user_prot != (PROT_READ | PROT_WRITE) &&
        ::mprotect(as_ptr(start), bytes, a.user_prot) != 0) {
        made = std::error_code(errno, std::generic_category());
    }
    if (!made) {
        const bool lent_pages = !a.lent.empty();  // before the backend takes them back
        const bool released = release_backend(a);
        move_back(a, copy.value(), lent_pages);
        if (released) {
            (void)client_.window().release(a.va, bytes);
        }
        return made.error();
    }
    const uint64_t at = a.va;
    allocs_.emplace(at, std::move(a));
    user_.emplace(start, at);
    return boost::outcome_v2::success();
}

void Memory::move_back(Allocation& a, PageCopy& copy, bool lent) noexcept {
    std::byte* range = as_ptr(a.user_start);
    if (!lent) {
        // The bytes as they are, copied and moved over the range with nothing in between
        // (the heap may lie there), then the granted pages given up without touching it.
        copy.take(range);
        if (auto back = copy.restore(range, a.user_prot); !back) {
            log().error("the registered bytes at {:#x} could not move back: {}", a.user_start,
                        back.error().message());
            unmap_pieces(a);
            return;
        }
        for (GuestBuffer& chunk : a.chunks) {
            chunk.release_replaced();
        }
        a.chunks.clear();
        return;
    }
    // Lent pages go with their LENDs: `copy` holds their bytes already.
    unmap_pieces(a);
    a.lent.clear();
    if (auto back = copy.restore(range, a.user_prot); !back) {
        log().error("the registered bytes at {:#x} could not move back: {}", a.user_start,
                    back.error().message());
    }
}

void Memory::unmap_pieces(Allocation& a) noexcept {
    for (GuestBuffer& chunk : a.chunks) {
        if (!chunk.release()) {
            chunk.reset();  // the backend still maps them: left to the hypervisor
        }
    }
    a.chunks.clear();
    for (LentBuffer& lent : a.lent) {
        lent.mapping.reset();
    }
}

Result<void> Memory::deregister_user(uint64_t va) {
    const Located held = locate(va);
    Allocation* a = held.a;
    if (a == nullptr || a->registrations == 0) {
        return errc(std::errc::invalid_argument);
    }
    if (a->user_start == 0 || a->registrations > 1) {
        --a->registrations;
        return boost::outcome_v2::success();
    }
    return unregister_moved(allocs_.find(a->va));
}

Result<void> Memory::unregister_moved(std::map<uint64_t, Allocation>::iterator it) noexcept {
    Allocation& a = it->second;
    auto copy = PageCopy::reserve(a.size);
    if (!copy) {
        return copy.error();  // still registered: the caller may try again
    }
    const bool lent = !a.lent.empty();
    if (lent) {
        copy.value().take(as_ptr(a.user_start));  // lent pages go with their LENDs
    }
    const bool released = release_backend(a);
    move_back(a, copy.value(), lent);
    user_.erase(a.user_start);
    if (!released) {
        // The backend is broken or gone: the window's VA is not reused.
        a.freed = true;
        a.holds = std::max(a.holds, 1u);
        return std::error_code(Errc::backend_broken);
    }
    (void)client_.window().release(a.va, a.size);
    allocs_.erase(it);
    return boost::outcome_v2::success();
}

}  // namespace xenhsa::frontend::hsakmt
