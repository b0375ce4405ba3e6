#include <xenhsa/backend/core/guest_terms.hpp>

namespace xenhsa::backend::core {

hsa::GpuLimits gpu_limits(const Quotas& quotas, uint32_t ring_slots) noexcept {
    hsa::GpuLimits limits;
    limits.max_handles = quotas.max_handles;
    limits.max_pinned_pages = quotas.max_pinned_pages;
    limits.max_alloc_bytes = quotas.max_alloc_bytes;
    limits.max_queues = quotas.max_queues;
    limits.max_events = quotas.max_events;
    limits.max_waits = std::min(quotas.max_in_flight, ring_slots - 1);
    return limits;
}

}  // namespace xenhsa::backend::core
