// The negotiated VA window on the guest side: a PROT_NONE reservation of the same range
// the backend holds (HELLO, protocol 5.1), and the allocator that places buffers in it.
#ifndef XENHSA_FRONTEND_VA_WINDOW_HPP
#define XENHSA_FRONTEND_VA_WINDOW_HPP

#include <cstdint>
#include <map>
#include <xenhsa/frontend/result.hpp>

namespace xenhsa::frontend {

// An address range reserved PROT_NONE (no access, no memory); unmapped when destroyed.
// Buffers are later placed inside it with MAP_FIXED (the seam's `at` addresses).
class VaReservation {
public:
    VaReservation() noexcept = default;
    // Anywhere the kernel chooses.
    static Result<VaReservation> reserve(uint64_t size);
    // Exactly [base, base + size), never replacing a mapping (MAP_FIXED_NOREPLACE):
    // EEXIST when any of it is taken, EINVAL for an unaligned or out-of-range request.
    static Result<VaReservation> reserve_at(uint64_t base, uint64_t size);

    VaReservation(VaReservation&& other) noexcept;
    VaReservation& operator=(VaReservation&& other) noexcept;
    VaReservation(const VaReservation&) = delete;
    VaReservation& operator=(const VaReservation&) = delete;
    ~VaReservation() { reset(); }

    [[nodiscard]] uint64_t base() const noexcept { return base_; }
    [[nodiscard]] uint64_t size() const noexcept { return size_; }
    explicit operator bool() const noexcept { return size_ != 0; }
    [[nodiscard]] bool contains(uint64_t va, uint64_t len) const noexcept {
        return size_ != 0 && va >= base_ && len <= size_ && va - base_ <= size_ - len;
    }
    void reset() noexcept;

private:
    VaReservation(uint64_t base, uint64_t size) noexcept : base_(base), size_(size) {}
    uint64_t base_ = 0;
    uint64_t size_ = 0;
};

// Page-granular first-fit allocator over [base, base + size). Bookkeeping only: it
// touches no memory. Not thread-safe.
class VaAllocator {
public:
    VaAllocator() noexcept = default;
    VaAllocator(uint64_t base, uint64_t size);

    // `bytes` rounded up to pages, placed at a multiple of `align` (a power of two,
    // at least a page). ENOMEM when no free range fits, EINVAL for a bad size/alignment.
    Result<uint64_t> allocate(uint64_t bytes, uint64_t align = 4096);
    // Marks exactly [va, va + bytes) used (an address the backend chose): EINVAL when it
    // is unaligned or outside the window, EADDRINUSE when any of it is in use.
    Result<void> claim(uint64_t va, uint64_t bytes);
    // Returns a range given out by allocate() or claim(). EINVAL for a range that is not
    // wholly in use (double free, outside the window).
    Result<void> release(uint64_t va, uint64_t bytes);

    [[nodiscard]] uint64_t base() const noexcept { return base_; }
    [[nodiscard]] uint64_t size() const noexcept { return size_; }
    [[nodiscard]] uint64_t free_bytes() const noexcept { return free_bytes_; }
    [[nodiscard]] std::size_t free_ranges() const noexcept { return free_.size(); }

private:
    static uint64_t round_up(uint64_t bytes) noexcept;
    uint64_t base_ = 0;
    uint64_t size_ = 0;
    uint64_t free_bytes_ = 0;
    std::map<uint64_t, uint64_t> free_;  // start -> length, disjoint, never adjacent
};

}  // namespace xenhsa::frontend

#endif
