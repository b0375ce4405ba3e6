#include "queue_errors.hpp"

#include "amd_queue.hpp"

namespace xenhsa::hsa::soft {

std::optional<Va> raise_queue_error(const AddressSpace& space, EventTable& events, SignalHub& hub,
                                    Va rptr, QueueError error) {
    const uint64_t signal = inactive_signal(space, rptr);
    if (signal == 0 || error == QueueError::none) {
        return std::nullopt;
    }
    return write_signal(space, events, hub, signal, SignalWrite::store,
                        static_cast<int64_t>(error));
}

}  // namespace xenhsa::hsa::soft
