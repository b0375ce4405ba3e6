// The one place where an error from a seam becomes a protocol status
// (docs/protocol.md §3.4 step 8, §8). Seam errors are errno values in
// std::generic_category(); anything else counts as a device failure.
#ifndef XENHSA_BACKEND_CORE_SEAM_STATUS_HPP
#define XENHSA_BACKEND_CORE_SEAM_STATUS_HPP

#include <cstdint>
#include <system_error>

namespace xenhsa::backend::core {

enum class Seam : uint8_t {
    grant_map,    // GrantMapper::map (MAP's data and indirect pages)
    grant_share,  // GrantSharer::share (LEND)
    va_window,    // reserving a window or a range in it
    gpu,          // GpuContext / KfdDevice
};

// grant_map:   ENOMEM, ENOSPC -> NO_MEMORY (maptrack, memory); anything else -> GRANT_FAILED
// grant_share: everything -> NO_MEMORY (the backend cannot allocate or share the pages)
// va_window:   EEXIST -> BAD_ADDRESS; anything else -> NO_MEMORY
// gpu:         EBADF -> BAD_HANDLE, EFAULT -> BAD_ADDRESS, EINVAL, ENOENT -> BAD_ARGUMENT,
//              EBUSY -> BAD_STATE, EDQUOT -> QUOTA, ENOMEM, ENOSPC -> NO_MEMORY,
//              ENODEV, EOPNOTSUPP -> UNSUPPORTED, ETIMEDOUT -> TIMEOUT, anything else -> DEVICE
uint32_t seam_status(Seam seam, std::error_code error) noexcept;

}  // namespace xenhsa::backend::core

#endif
