#include <sys/mman.h>
#include <xenhsa/proto/common.h>

#include <cerrno>
#include <iterator>
#include <limits>
#include <utility>
#include <xenhsa/frontend/va_window.hpp>

namespace xenhsa::frontend {

namespace {

constexpr int kReserveFlags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;

}  // namespace

Result<VaReservation> VaReservation::reserve(uint64_t size) {
    if (size == 0 || !xenhsa_page_aligned(size) || size >= XENHSA_VA_LIMIT) {
        return errno_code(EINVAL);
    }
    void* p = mmap(nullptr, size, PROT_NONE, kReserveFlags, -1, 0);
    if (p == MAP_FAILED) {
        return errno_code(errno);
    }
    return VaReservation(reinterpret_cast<uintptr_t>(p), size);
}

Result<VaReservation> VaReservation::reserve_at(uint64_t base, uint64_t size) {
    if (!xenhsa_va_range_ok(base, size)) {
        return errno_code(EINVAL);
    }
    void* want = reinterpret_cast<void*>(static_cast<uintptr_t>(base));
    void* p = mmap(want, size, PROT_NONE, kReserveFlags | MAP_FIXED_NOREPLACE, -1, 0);
    if (p == MAP_FAILED) {
        return errno_code(errno == EEXIST ? EEXIST : errno);
    }
    if (p != want) {  // kernels before 4.17 treat the flag as a mere hint
        munmap(p, size);
        return errno_code(EEXIST);
    }
    return VaReservation(base, size);
}

VaReservation::VaReservation(VaReservation&& other) noexcept
    : base_(std::exchange(other.base_, 0)), size_(std::exchange(other.size_, 0)) {}

VaReservation& VaReservation::operator=(VaReservation&& other) noexcept {
    if (this != &other) {
        reset();
        base_ = std::exchange(other.base_, 0);
        size_ = std::exchange(other.size_, 0);
    }
    return *this;
}

void VaReservation::reset() noexcept {
    if (size_ != 0) {
        munmap(reinterpret_cast<void*>(static_cast<uintptr_t>(base_)), size_);
    }
    base_ = 0;
    size_ = 0;
}

VaAllocator::VaAllocator(uint64_t base, uint64_t size)
    : base_(base), size_(size & ~uint64_t{XENHSA_PAGE_SIZE - 1}), free_bytes_(size_) {
    if (size_ != 0) {
        free_.emplace(base_, size_);
    }
}

uint64_t VaAllocator::round_up(uint64_t bytes) noexcept {
    return (bytes + XENHSA_PAGE_SIZE - 1) & ~uint64_t{XENHSA_PAGE_SIZE - 1};
}

Result<uint64_t> VaAllocator::allocate(uint64_t bytes, uint64_t align) {
    if (bytes == 0 || bytes > size_ || align < XENHSA_PAGE_SIZE || (align & (align - 1)) != 0) {
        return errno_code(EINVAL);
    }
    const uint64_t len = round_up(bytes);
    for (auto it = free_.begin(); it != free_.end(); ++it) {
        const uint64_t start = it->first;
        const uint64_t end = start + it->second;
        const uint64_t at = (start + align - 1) & ~(align - 1);
        if (at < start || at > end || end - at < len) {
            continue;
        }
        auto claimed = claim(at, len);
        if (!claimed) {
            return claimed.error();
        }
        return at;
    }
    return errno_code(ENOMEM);
}

Result<void> VaAllocator::claim(uint64_t va, uint64_t bytes) {
    const uint64_t len = round_up(bytes);
    if (bytes == 0 || !xenhsa_page_aligned(va) || len < bytes || va < base_ || len > size_ ||
        va - base_ > size_ - len) {
        return errno_code(EINVAL);
    }
    // The free range that starts at or before va must cover all of [va, va + len).
    auto it = free_.upper_bound(va);
    if (it == free_.begin()) {
        return errno_code(EADDRINUSE);
    }
    --it;
    const uint64_t start = it->first;
    const uint64_t end = start + it->second;
    if (va + len > end) {
        return errno_code(EADDRINUSE);
    }
    free_.erase(it);
    if (va > start) {
        free_.emplace(start, va - start);
    }
    if (va + len < end) {
        free_.emplace(va + len, end - (va + len));
    }
    free_bytes_ -= len;
    return boost::outcome_v2::success();
}

Result<void> VaAllocator::release(uint64_t va, uint64_t bytes) {
    const uint64_t len = round_up(bytes);
    if (bytes == 0 || !xenhsa_page_aligned(va) || len < bytes || va < base_ || len > size_ ||
        va - base_ > size_ - len) {
        return errno_code(EINVAL);
    }
    // No free range may overlap [va, va + len).
    auto next = free_.lower_bound(va);
    if (next != free_.end() && next->first < va + len) {
        return errno_code(EINVAL);
    }
    if (next != free_.begin()) {
        auto prev = std::prev(next);
        if (prev->first + prev->second > va) {
            return errno_code(EINVAL);
        }
    }
    uint64_t start = va;
    uint64_t length = len;
    if (next != free_.end() && next->first == va + len) {
        length += next->second;
        next = free_.erase(next);
    }
    if (next != free_.begin()) {
        auto prev = std::prev(next);
        if (prev->first + prev->second == va) {
            start = prev->first;
            length += prev->second;
            free_.erase(prev);
        }
    }
    free_.emplace(start, length);
    free_bytes_ += len;
    return boost::outcome_v2::success();
}

}  // namespace xenhsa::frontend
