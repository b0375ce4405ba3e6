// A process's own memory that hsaKmtRegisterMemory moves onto pages granted to (or lent by)
// the backend, and back. Only private mappings move: their pages belong to this process
// alone, so replacing them (with the same bytes) changes nothing another mapping sees.
#ifndef XENHSA_FRONTEND_HSAKMT_PRIVATE_PAGES_HPP
#define XENHSA_FRONTEND_HSAKMT_PRIVATE_PAGES_HPP

#include <cstdint>
#include <string>
#include <xenhsa/frontend/result.hpp>

namespace xenhsa::frontend::hsakmt {

struct PrivateRange {
    int prot = 0;  // PROT_* of every page of the range
};

// [start, end) (page-aligned) as /proc/self/maps lists it: one protection, readable, and
// private (anonymous, heap, stack, or a file's private copy). Else an error, and `why`
// says what the range is instead.
Result<PrivateRange> private_range(uint64_t start, uint64_t end, std::string& why);

// memcpy of whole pages around a program's objects, which under AddressSanitizer hold
// redzones: not checked as the program's own accesses are.
void copy_pages(void* to, const void* from, uint64_t len);

// Fresh private anonymous memory holding a copy of [at, at + len): what restore() puts back.
class PageCopy {
public:
    static Result<PageCopy> of(const void* at, uint64_t len);
    // The memory only, for a copy that must not fail later: take() fills it.
    static Result<PageCopy> reserve(uint64_t len);
    // Copies [at, at + len) in (no allocation: may run where the heap is being moved).
    void take(const void* at) noexcept;
    PageCopy(PageCopy&& other) noexcept;
    PageCopy& operator=(PageCopy&&) = delete;
    PageCopy(const PageCopy&) = delete;
    PageCopy& operator=(const PageCopy&) = delete;
    ~PageCopy();

    [[nodiscard]] const void* data() const noexcept { return copy_; }
    // Moves the copy's pages to exactly [at, at + len), replacing whatever is there (a
    // PROT_NONE reservation), with protection `prot`: the range is private anonymous memory
    // again. Nothing can fail between the copy and this move but the kernel's page tables.
    Result<void> restore(void* at, int prot) noexcept;

private:
    PageCopy(void* copy, uint64_t len) noexcept : copy_(copy), len_(len) {}
    void* copy_ = nullptr;
    uint64_t len_ = 0;
};

}  // namespace xenhsa::frontend::hsakmt

#endif
