// The libhsakmt adapter: a KfdDevice over the host's ROCt thunk and /dev/kfd
// (target xenhsa::hsa_kfd). Without libhsakmt at build time (XENHSA_WITH_HSAKMT=OFF) the
// factory always fails with ENODEV and only the status mapping is built.
#ifndef XENHSA_HSA_HSAKMT_DEVICE_HPP
#define XENHSA_HSA_HSAKMT_DEVICE_HPP

#include <memory>
#include <string>
#include <system_error>
#include <xenhsa/hsa/kfd_device.hpp>

namespace xenhsa::hsa {

// Opens /dev/kfd through libhsakmt and switches XNACK off. One device per process (the
// KFD context is per process: one worker, one guest); a second open while the first
// lives fails with EBUSY. When there is no /dev/kfd it fails with ENODEV and `message`
// (if given) starts with "no /dev/kfd: "; every failure fills `message` with the reason.
Result<std::unique_ptr<KfdDevice>> open_hsakmt_device(std::string* message = nullptr);

// The one mapping of HSAKMT_STATUS values (passed as int, so that callers need not
// include <hsakmt.h>) to errno values in std::generic_category(). SUCCESS gives an empty
// error_code; values the thunk does not define give EIO.
[[nodiscard]] std::error_code hsakmt_status_error(int status) noexcept;

// Like hsakmt_status_error, but for HSAKMT_STATUS_ERROR (the thunk's answer to any failed
// ioctl) it keeps the kernel's errno when it is one the seam gives a meaning to (EBUSY for
// memory a live queue uses, EFAULT, ENOMEM, EINVAL, ENOENT, EPERM, EACCES, EAGAIN).
// `saved_errno` is errno right after the call (cleared before it).
[[nodiscard]] std::error_code hsakmt_error(int status, int saved_errno) noexcept;

}  // namespace xenhsa::hsa

#endif
