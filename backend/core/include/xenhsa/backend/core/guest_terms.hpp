// What a connected guest may do: the features HELLO granted, the quotas in force (the
// operator may lower them at run time) and the ring's size. One per guest, owned by
// GuestRequests; the command classes read it.
#ifndef XENHSA_BACKEND_CORE_GUEST_TERMS_HPP
#define XENHSA_BACKEND_CORE_GUEST_TERMS_HPP

#include <xenhsa/proto/ring.h>

#include <algorithm>
#include <cstdint>
#include <xenhsa/backend/core/quotas.hpp>
#include <xenhsa/hsa/gpu_context.hpp>

namespace xenhsa::backend::core {

struct GuestTerms {
    Quotas quotas;
    uint64_t features = 0;  // 0 until HELLO connects
    uint32_t ring_slots = XENHSA_RING_SLOTS(0);

    [[nodiscard]] bool granted(uint64_t feature) const noexcept {
        return (features & feature) == feature;
    }
    // Requests held at once (pending EVENT_WAITs); one slot always stays free.
    [[nodiscard]] uint32_t max_in_flight() const noexcept {
        return std::min(quotas.max_in_flight, ring_slots - 1);
    }
};

// GpuContext's limits for a guest with these quotas (the worker builds the GpuContext).
hsa::GpuLimits gpu_limits(const Quotas& quotas, uint32_t ring_slots) noexcept;

}  // namespace xenhsa::backend::core

#endif
