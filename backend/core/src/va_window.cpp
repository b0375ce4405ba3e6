#include <xenhsa/proto/status.h>

#include <xenhsa/backend/core/va_window.hpp>

namespace xenhsa::backend::core {

uint32_t VaWindow::placement_status(uint64_t va, uint64_t size) const noexcept {
    const RangeMap::Overlap overlap = ranges_.overlap(va, size);
    if (overlap == RangeMap::Overlap::revoked_lend) {
        return XENHSA_STATUS_REVOKED;
    }
    if (!contains(va, size) || overlap != RangeMap::Overlap::none) {
        return XENHSA_STATUS_BAD_ADDRESS;
    }
    return XENHSA_STATUS_OK;
}

bool VaWindow::claim(uint64_t va, uint64_t size, RangeKind kind) {
    return contains(va, size) && ranges_.claim(va, size, kind);
}

void VaWindow::release(uint64_t va, uint64_t size) noexcept {
    ranges_.release(va);
    reservation_.rereserve(va, size);
}

void VaWindow::release_all(RangeKind kind) noexcept {
    ranges_.release_all(kind, [this](const Range& r) { reservation_.rereserve(r.va, r.size); });
}

}  // namespace xenhsa::backend::core
