// A guest's negotiated VA window: a PROT_NONE reservation in the worker, and the
// sub-ranges that MAPs, LENDs and ALLOCs occupy inside it. Every guest address the
// backend maps, shares or allocates at lies in it, at the same VA as in the guest.
#ifndef XENHSA_BACKEND_CORE_VA_WINDOW_HPP
#define XENHSA_BACKEND_CORE_VA_WINDOW_HPP

#include <cstdint>
#include <optional>
#include <xenhsa/backend/core/range_map.hpp>
#include <xenhsa/backend/core/va_reservation.hpp>
#include <xenhsa/hsa/gpu_context.hpp>

namespace xenhsa::backend::core {

// Also where GpuContext hands back an ALLOC's range once its device memory is gone.
class VaWindow final : public hsa::FreedAllocs {
public:
    VaWindow() noexcept = default;
    explicit VaWindow(VaReservation reservation) noexcept : reservation_(std::move(reservation)) {}

    [[nodiscard]] bool valid() const noexcept { return static_cast<bool>(reservation_); }
    [[nodiscard]] uint64_t base() const noexcept { return reservation_.base(); }
    [[nodiscard]] uint64_t size() const noexcept { return reservation_.size(); }
    [[nodiscard]] bool contains(uint64_t va, uint64_t size) const noexcept {
        return reservation_.contains(va, size);
    }

    // The address check of a new object at [va, va + size): XENHSA_STATUS_OK,
    // BAD_ADDRESS (outside the window, or overlapping an object) or REVOKED (overlapping
    // a revoked LEND the guest has not acknowledged yet).
    [[nodiscard]] uint32_t placement_status(uint64_t va, uint64_t size) const noexcept;

    // Marks [va, va + size) taken; false if it overlaps or lies outside the window.
    bool claim(uint64_t va, uint64_t size, RangeKind kind);
    // Frees the sub-range that starts at `va` and puts PROT_NONE back over it. Never
    // fails, never allocates.
    void release(uint64_t va, uint64_t size) noexcept;
    void alloc_freed(uint64_t va, uint64_t size) noexcept override { release(va, size); }
    // Every range of `kind` (the ALLOCs', after GpuContext::teardown).
    void release_all(RangeKind kind) noexcept;
    void rereserve(uint64_t va, uint64_t size) const noexcept { reservation_.rereserve(va, size); }
    void set_kind(uint64_t va, RangeKind kind) noexcept { ranges_.set_kind(va, kind); }

    // A free page-aligned range of `size` bytes (ALLOC with va == 0).
    [[nodiscard]] std::optional<uint64_t> find_free(uint64_t size) const noexcept {
        return ranges_.find_free(base(), reservation_.end(), size);
    }
    [[nodiscard]] const RangeMap& ranges() const noexcept { return ranges_; }

private:
    VaReservation reservation_;
    RangeMap ranges_;
};

}  // namespace xenhsa::backend::core

#endif
