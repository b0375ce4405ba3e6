// What the command processor reads of a queue laid out as ROCr's amd_queue_t, found from
// the queue's read pointer (read_dispatch_id): read_dispatch_id_field_base_byte_offset,
// right after it, gives its offset in the amd_queue_t (proto/queue.h). The guest writes
// all of it at any time: each read is one load of guest memory the GPU may read, and
// nothing (0, false) when there is none to read.
#ifndef XENHSA_HSA_SOFT_AMD_QUEUE_HPP
#define XENHSA_HSA_SOFT_AMD_QUEUE_HPP

#include <cstdint>

#include "address_space.hpp"

namespace xenhsa::hsa::soft {

// queue_inactive_signal: where a stopped queue's error code goes (queue_errors.hpp).
uint64_t inactive_signal(const AddressSpace& space, Va rptr);
// queue_properties' ENABLE_PROFILING (hsa_amd_profiling_set_profiler_enabled): the
// command processor then writes start_ts and end_ts of each packet's completion signal.
bool profiling_enabled(const AddressSpace& space, Va rptr);

}  // namespace xenhsa::hsa::soft

#endif
