// The thunk's host-wide profiling table: hsaKmtOpenKFD maps /dev/shm/hsakmt_shared_mem and
// the semaphore /dev/shm/sem.hsakmt_semaphore, shared by every process on the host that
// opens the KFD, and keeps an fd of the table. In a backend's workers that would be a
// channel between guests (a worker that holds the semaphore stalls every other worker's
// open). Right after the open, while the worker is still its own (it has read nothing of
// its guest's), both mappings become private copies and the fd becomes /dev/null: the
// worker keeps no handle on them. xenhsa forwards no profiling, so nothing else changes.
#ifndef XENHSA_HSA_HSAKMT_PRIVATE_COUNTERS_HPP
#define XENHSA_HSA_HSAKMT_PRIVATE_COUNTERS_HPP

#include <string>

namespace xenhsa::hsa::kmt {

// Empty on success, else what could not be done (the device must not serve then).
std::string keep_thunk_counters_private();

}  // namespace xenhsa::hsa::kmt

#endif
