// Touching memory that may have been taken away: a lent page the backend revoked is gone
// on xenhsa-sim (the next access gets SIGBUS). probe() touches it under a signal handler
// and reports the fault as an error instead of crashing.
#ifndef XENHSA_FRONTEND_PROBE_HPP
#define XENHSA_FRONTEND_PROBE_HPP

#include <cstddef>
#include <xenhsa/frontend/result.hpp>

namespace xenhsa::frontend {

enum class ProbeAccess { read, write };

// Touches the byte at `addr` (a write probe does an atomic add of zero, so the value is
// kept). Errc::revoked_access on SIGBUS, Errc::access_fault on SIGSEGV. Thread-safe; the
// handlers are installed once per process and pass every fault outside a probe on to the
// handler that was installed before (or the default action).
Result<void> probe(const void* addr, ProbeAccess access = ProbeAccess::read) noexcept;

// probe() on every page of [addr, addr + len) (one byte per 4 KiB page, plus the last).
Result<void> probe_range(const void* addr, std::size_t len,
                         ProbeAccess access = ProbeAccess::read) noexcept;

// Copies `len` bytes from memory that may be revoked, page by page under probe's
// protection; the same errors, with `dst` then partly written.
Result<void> probed_copy(void* dst, const void* src, std::size_t len) noexcept;

}  // namespace xenhsa::frontend

#endif
