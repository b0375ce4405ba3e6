#include "queue_errors.hpp"

#include <hsa/amd_hsa_queue.h>
#include <xenhsa/proto/queue.h>

#include <cstddef>

namespace xenhsa::hsa::soft {

namespace {

constexpr uint64_t kOffsetField = offsetof(amd_queue_t, read_dispatch_id_field_base_byte_offset) -
                                  offsetof(amd_queue_t, read_dispatch_id);
constexpr uint64_t kInactiveSignal = offsetof(amd_queue_t, queue_inactive_signal);
static_assert(kOffsetField == XENHSA_AMD_QUEUE_OFFSET_FIELD_AFTER_RPTR &&
              kInactiveSignal == XENHSA_AMD_QUEUE_INACTIVE_SIGNAL_OFFSET);

// The handle in the inactive signal of the queue whose read_dispatch_id is at `rptr`;
// 0 when there is none to read.
uint64_t inactive_signal_of(const AddressSpace& space, Va rptr) {
    const auto view = space.view();
    // An empty slice (a fault) refuses the load.
    const auto offset =
        view.slice<Access::read>(rptr + kOffsetField, sizeof(uint32_t))->load<uint32_t>(0);
    // The guest wrote the offset: any value names guest memory of its own, checked below.
    if (!offset || *offset % alignof(uint64_t) != 0 || *offset > rptr) {
        return 0;
    }
    const Va base = rptr - *offset;
    return view.slice<Access::read>(base + kInactiveSignal, sizeof(uint64_t))
        ->load<uint64_t>(0)
        .value_or(0);
}

}  // namespace

std::optional<Va> raise_queue_error(const AddressSpace& space, EventTable& events, SignalHub& hub,
                                    Va rptr, QueueError error) {
    const uint64_t signal = inactive_signal_of(space, rptr);
    if (signal == 0 || error == QueueError::none) {
        return std::nullopt;
    }
    return write_signal(space, events, hub, signal, SignalWrite::store,
                        static_cast<int64_t>(error));
}

}  // namespace xenhsa::hsa::soft
