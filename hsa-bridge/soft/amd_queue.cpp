#include "amd_queue.hpp"

#include <hsa/amd_hsa_queue.h>
#include <xenhsa/proto/queue.h>

#include <cstddef>
#include <optional>

namespace xenhsa::hsa::soft {

namespace {

constexpr uint64_t kOffsetField = offsetof(amd_queue_t, read_dispatch_id_field_base_byte_offset) -
                                  offsetof(amd_queue_t, read_dispatch_id);
constexpr uint64_t kInactiveSignal = offsetof(amd_queue_t, queue_inactive_signal);
constexpr uint64_t kProperties = offsetof(amd_queue_t, queue_properties);
constexpr uint32_t kProfiling = AMD_QUEUE_PROPERTIES_ENABLE_PROFILING;
static_assert(kOffsetField == XENHSA_AMD_QUEUE_OFFSET_FIELD_AFTER_RPTR &&
              kInactiveSignal == XENHSA_AMD_QUEUE_INACTIVE_SIGNAL_OFFSET);

// The T at `field` of the amd_queue_t whose read_dispatch_id is at `rptr`.
template <class T>
std::optional<T> field(const AddressSpace& space, Va rptr, uint64_t field_offset) {
    const auto view = space.view();
    // An empty slice (a fault) refuses the load.
    const auto offset =
        view.slice<Access::read>(rptr + kOffsetField, sizeof(uint32_t))->load<uint32_t>(0);
    if (!offset || *offset % alignof(uint64_t) != 0 || *offset > rptr) {
        return std::nullopt;
    }
    return view.slice<Access::read>(rptr - *offset + field_offset, sizeof(T))->template load<T>(0);
}

}  // namespace

uint64_t inactive_signal(const AddressSpace& space, Va rptr) {
    return field<uint64_t>(space, rptr, kInactiveSignal).value_or(0);
}

bool profiling_enabled(const AddressSpace& space, Va rptr) {
    return (field<uint32_t>(space, rptr, kProperties).value_or(0) & kProfiling) != 0;
}

}  // namespace xenhsa::hsa::soft
