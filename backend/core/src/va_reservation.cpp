#include <sys/mman.h>
#include <xenhsa/proto/common.h>
#include <xenhsa/proto/hello.h>

#include <cerrno>
#include <utility>
#include <xenhsa/backend/core/fatal.hpp>
#include <xenhsa/backend/core/va_reservation.hpp>
#include <xenhsa/xen/reservation.hpp>

namespace xenhsa::backend::core {
namespace {

constexpr int kReserveFlags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
constexpr uint64_t kCandidateAlign = 1ull << 30;
// Bounds the search for a free candidate; past it the kernel chooses.
constexpr unsigned kMaxCandidates = 4096;

// Never below the floor: guest memory must not sit where a NULL-plus-offset dereference
// in the worker lands.
bool range_ok(uint64_t base, uint64_t size) noexcept {
    return base >= XENHSA_VA_WINDOW_FLOOR && xenhsa_va_range_ok(base, size) != 0;
}

// MAP_FIXED_NOREPLACE: fails with EEXIST instead of replacing anything. A kernel older
// than 4.17 treats the flag as a hint and may map elsewhere: that counts as EEXIST too.
int try_reserve(uint64_t base, uint64_t size) noexcept {
    void* want = reinterpret_cast<void*>(base);
    void* got = ::mmap(want, size, PROT_NONE, kReserveFlags | MAP_FIXED_NOREPLACE, -1, 0);
    if (got == MAP_FAILED) {
        return errno;
    }
    if (got != want) {
        ::munmap(got, size);
        return EEXIST;
    }
    return 0;
}

}  // namespace

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

VaReservation::~VaReservation() { reset(); }

std::byte* VaReservation::data() const noexcept { return reinterpret_cast<std::byte*>(base_); }

Result<VaReservation> VaReservation::at(uint64_t base, uint64_t size) noexcept {
    if (!range_ok(base, size)) {
        return errc(std::errc::invalid_argument);
    }
    const int err = try_reserve(base, size);
    if (err != 0) {
        return errno_code(err == EEXIST ? EEXIST : ENOMEM);
    }
    return VaReservation(base, size);
}

Result<VaReservation> VaReservation::anywhere(uint64_t size, uint64_t hint) noexcept {
    if (size == 0 || !xenhsa_page_aligned(size) || size > XENHSA_VA_LIMIT) {
        return errc(std::errc::invalid_argument);
    }
    const uint64_t stride = (size + kCandidateAlign - 1) & ~(kCandidateAlign - 1);
    uint64_t candidate = (hint + kCandidateAlign - 1) & ~(kCandidateAlign - 1);
    if (candidate < XENHSA_VA_WINDOW_FLOOR) {
        candidate = XENHSA_VA_WINDOW_FLOOR;
    }
    for (unsigned i = 0; i < kMaxCandidates && range_ok(candidate, size); ++i) {
        const int err = try_reserve(candidate, size);
        if (err == 0) {
            return VaReservation(candidate, size);
        }
        if (err != EEXIST) {
            break;
        }
        candidate += stride;
    }
    // The kernel's own choice is free by construction; keep it only below the VA limit.
    void* got = ::mmap(nullptr, size, PROT_NONE, kReserveFlags, -1, 0);
    if (got == MAP_FAILED) {
        return errc(std::errc::not_enough_memory);
    }
    const auto base = reinterpret_cast<uint64_t>(got);
    if (!range_ok(base, size)) {
        ::munmap(got, size);
        return errc(std::errc::not_enough_memory);
    }
    return VaReservation(base, size);
}

void VaReservation::rereserve(uint64_t va, uint64_t size) const noexcept {
    if (!contains(va, size)) {
        fatal("re-reserve outside the guest's reservation");
    }
    // Correct only because the range lies inside this reservation (checked above).
    xen::rereserve(reinterpret_cast<std::byte*>(va), size);
}

void VaReservation::reset() noexcept {
    if (size_ != 0) {
        if (::munmap(reinterpret_cast<void*>(base_), size_) != 0) {
            fatal("cannot release a VA reservation", errno);
        }
    }
    base_ = 0;
    size_ = 0;
}

}  // namespace xenhsa::backend::core
