// A PROT_NONE reservation of [base, base + size) in this process. It is only ever made
// with MAP_FIXED_NOREPLACE (or by the kernel's own choice), so it never replaces memory
// that is not reserved for this guest; inside it, and only there, the backend may use
// MAP_FIXED (grant maps at `.at`, device allocations, re-reserving). Unmapped when
// destroyed.
#ifndef XENHSA_BACKEND_CORE_VA_RESERVATION_HPP
#define XENHSA_BACKEND_CORE_VA_RESERVATION_HPP

#include <cstddef>
#include <cstdint>
#include <xenhsa/backend/core/result.hpp>

namespace xenhsa::backend::core {

class VaReservation {
public:
    VaReservation() noexcept = default;
    VaReservation(VaReservation&& other) noexcept;
    VaReservation& operator=(VaReservation&& other) noexcept;
    VaReservation(const VaReservation&) = delete;
    VaReservation& operator=(const VaReservation&) = delete;
    ~VaReservation();

    // Exactly [base, base + size): EEXIST when anything is mapped in the range, EINVAL for
    // a range that is empty, unaligned, below XENHSA_VA_WINDOW_FLOOR or not below
    // XENHSA_VA_LIMIT, ENOMEM when the kernel refuses.
    static Result<VaReservation> at(uint64_t base, uint64_t size) noexcept;
    // Somewhere free: 1 GiB-aligned candidates from `hint` (at least the floor) upwards,
    // each tried with MAP_FIXED_NOREPLACE; if none is free below XENHSA_VA_LIMIT, the
    // kernel's choice if it lies between the floor and the limit. ENOMEM when there is no
    // free range of `size` bytes.
    static Result<VaReservation> anywhere(uint64_t size, uint64_t hint) noexcept;

    [[nodiscard]] uint64_t base() const noexcept { return base_; }
    [[nodiscard]] uint64_t size() const noexcept { return size_; }
    [[nodiscard]] uint64_t end() const noexcept { return base_ + size_; }
    [[nodiscard]] std::byte* data() const noexcept;
    explicit operator bool() const noexcept { return size_ != 0; }
    [[nodiscard]] bool contains(uint64_t va, uint64_t size) const noexcept {
        return size_ != 0 && va >= base_ && size <= size_ && va - base_ <= size_ - size;
    }

    // Puts PROT_NONE back over [va, va + size), which must lie inside this reservation;
    // whatever was mapped there is gone afterwards. Never fails: a failure is a bug
    // (logged, abort).
    void rereserve(uint64_t va, uint64_t size) const noexcept;

    void reset() noexcept;

private:
    VaReservation(uint64_t base, uint64_t size) noexcept : base_(base), size_(size) {}

    uint64_t base_ = 0;
    uint64_t size_ = 0;
};

}  // namespace xenhsa::backend::core

#endif
