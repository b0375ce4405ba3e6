// The max_handles quota counts every kind of handle a guest holds: its MAPs and LENDs
// (MapRevoke) and its GPU objects (GpuContext). Each command that makes a handle asks
// here, after its other checks (§3.4).
#ifndef XENHSA_BACKEND_CORE_HANDLE_QUOTA_HPP
#define XENHSA_BACKEND_CORE_HANDLE_QUOTA_HPP

#include <cstdint>
#include <xenhsa/backend/core/guest_terms.hpp>
#include <xenhsa/backend/core/map_revoke.hpp>
#include <xenhsa/hsa/gpu_context.hpp>

namespace xenhsa::backend::core {

class HandleQuota {
public:
    HandleQuota(const GuestTerms& terms, const MapRevoke& maps, const hsa::GpuContext* gpu) noexcept
        : terms_(terms), maps_(maps), gpu_(gpu) {}

    [[nodiscard]] uint64_t total() const noexcept {
        return maps_.handles() + (gpu_ != nullptr ? gpu_->stats().handles : 0);
    }
    [[nodiscard]] bool full() const noexcept { return total() >= terms_.quotas.max_handles; }

private:
    const GuestTerms& terms_;
    const MapRevoke& maps_;
    const hsa::GpuContext* gpu_;
};

}  // namespace xenhsa::backend::core

#endif
