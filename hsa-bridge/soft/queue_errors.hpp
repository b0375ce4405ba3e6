// What a command processor does when it stops an AQL queue on an error: it stores the
// error's code in the queue's inactive signal (amd_queue_t.queue_inactive_signal, found
// from the queue's read pointer: read_dispatch_id_field_base_byte_offset follows
// read_dispatch_id and gives its offset in the amd_queue_t) and sets the signal's event.
// ROCr waits on that signal for every queue it creates, its own blit queues included
// (AqlQueue::DynamicScratchHandler): it maps the code to an hsa_status_t, suspends the
// queue and calls the queue's error callback, whose default prints "Queue at ...
// inactivated due to async error" and aborts. Page faults are not reported here: they
// raise the memory event (ROCr's VM-fault handler), as on a GPU without XNACK.
#ifndef XENHSA_HSA_SOFT_QUEUE_ERRORS_HPP
#define XENHSA_HSA_SOFT_QUEUE_ERRORS_HPP

#include <cstdint>
#include <optional>

#include "address_space.hpp"
#include "events.hpp"
#include "signals.hpp"

namespace xenhsa::hsa::soft {

// The codes, as ROCr 5.2.3's DynamicScratchHandler<true> reads them.
enum class QueueError : uint32_t {
    none = 0,
    invalid_dimensions = 2,           // HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS
    invalid_group_memory = 4,         // HSA_STATUS_ERROR_INVALID_ALLOCATION
    invalid_code = 8,                 // HSA_STATUS_ERROR_INVALID_CODE_OBJECT
    invalid_packet_format = 32,       // HSA_STATUS_ERROR_INVALID_PACKET_FORMAT
    workgroup_too_large = 64,         // HSA_STATUS_ERROR_INVALID_ARGUMENT
    unsupported_vendor_packet = 256,  // HSA_STATUS_ERROR_INVALID_PACKET_FORMAT
    device_failure = 0x80000000u,     // HSA_STATUS_ERROR_EXCEPTION
};

// Stores `error` in the inactive signal of the amd_queue_t whose read_dispatch_id is at
// `rptr` and sets its event. Nothing when there is no such signal (a queue not laid out
// as an amd_queue_t, or a handle of 0); the address of a fault writing the signal.
std::optional<Va> raise_queue_error(const AddressSpace& space, EventTable& events, SignalHub& hub,
                                    Va rptr, QueueError error);

}  // namespace xenhsa::hsa::soft

#endif
