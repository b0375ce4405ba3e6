#include <xenhsa/proto/status.h>

#include <cerrno>
#include <xenhsa/backend/core/seam_status.hpp>

namespace xenhsa::backend::core {

uint32_t seam_status(Seam seam, std::error_code error) noexcept {
    const bool is_errno =
        error.category() == std::generic_category() || error.category() == std::system_category();
    const int e = is_errno ? error.value() : -1;
    switch (seam) {
        case Seam::grant_map:
            return e == ENOMEM || e == ENOSPC ? XENHSA_STATUS_NO_MEMORY
                                              : XENHSA_STATUS_GRANT_FAILED;
        case Seam::grant_share:
            return XENHSA_STATUS_NO_MEMORY;
        case Seam::va_window:
            return e == EEXIST ? XENHSA_STATUS_BAD_ADDRESS : XENHSA_STATUS_NO_MEMORY;
        case Seam::gpu:
            switch (e) {
                case EBADF:
                    return XENHSA_STATUS_BAD_HANDLE;
                case EFAULT:
                    return XENHSA_STATUS_BAD_ADDRESS;
                case EINVAL:
                case ENOENT:
                    return XENHSA_STATUS_BAD_ARGUMENT;
                case EBUSY:
                    return XENHSA_STATUS_BAD_STATE;
                case EDQUOT:
                    return XENHSA_STATUS_QUOTA;
                case ENOMEM:
                case ENOSPC:
                    return XENHSA_STATUS_NO_MEMORY;
                case ENODEV:
                case EOPNOTSUPP:
                    return XENHSA_STATUS_UNSUPPORTED;
                case ETIMEDOUT:
                    return XENHSA_STATUS_TIMEOUT;
                default:
                    return XENHSA_STATUS_DEVICE;
            }
    }
    return XENHSA_STATUS_DEVICE;
}

}  // namespace xenhsa::backend::core
