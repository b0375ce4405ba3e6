// Vocabulary of the KFD seam: addresses, ids, and errors as values.
#ifndef XENHSA_HSA_TYPES_HPP
#define XENHSA_HSA_TYPES_HPP

#include <boost/outcome/result.hpp>
#include <cstdint>
#include <system_error>

namespace xenhsa::hsa {

// A virtual address in the backend worker. The worker mirrors guest VAs, so this is also
// the guest's VA and the GPU VA. Only the backend, after checking a guest value against
// that guest's ranges, turns one into a Va.
using Va = uint64_t;

// Device-private ids. They are never host pointers (HSA_QUEUEID and HsaEvent* stay inside
// the libhsakmt adapter) and never reach a guest: the guest sees GpuContext handles.
using QueueId = uint64_t;
using EventId = uint64_t;

// errno values in std::generic_category(). The meanings every KfdDevice keeps:
//   EINVAL  bad size, flag, node or alignment       EBUSY   in use (the kernel's rule)
//   EFAULT  an address outside what the GPU may use   ENOMEM  out of device resources
//   ENOENT  no such object or index                  ENODEV  no device (no /dev/kfd)
//   ETIMEDOUT  a wait timed out                      EIO     the device failed
template <class T>
using Result = boost::outcome_v2::result<T, std::error_code>;

inline std::error_code errc(std::errc e) noexcept { return std::make_error_code(e); }

}  // namespace xenhsa::hsa

#endif
