// HSAKMT_STATUS -> errno, in one place. Built with or without libhsakmt: the values are
// the thunk's ABI (hsakmttypes.h), checked against the header when it is there.
#include <cerrno>
#include <xenhsa/hsa/hsakmt_device.hpp>

#if XENHSA_HAVE_HSAKMT
#include <xenhsa/hsa/hsakmt_include.h>
#endif

namespace xenhsa::hsa {

namespace {

constexpr int kSuccess = 0;
constexpr int kError = 1;
constexpr int kDriverMismatch = 2;
constexpr int kInvalidParameter = 3;
constexpr int kInvalidHandle = 4;
constexpr int kInvalidNodeUnit = 5;
constexpr int kNoMemory = 6;
constexpr int kBufferTooSmall = 7;
constexpr int kNotImplemented = 10;
constexpr int kNotSupported = 11;
constexpr int kUnavailable = 12;
constexpr int kOutOfResources = 13;
constexpr int kKernelIoChannelNotOpened = 20;
constexpr int kKernelCommunicationError = 21;
constexpr int kKernelAlreadyOpened = 22;
constexpr int kHsammuUnavailable = 23;
constexpr int kWaitFailure = 30;
constexpr int kWaitTimeout = 31;
constexpr int kMemoryAlreadyRegistered = 35;
constexpr int kMemoryNotRegistered = 36;
constexpr int kMemoryAlignment = 37;

#if XENHSA_HAVE_HSAKMT
static_assert(
    kSuccess == static_cast<int>(HSAKMT_STATUS_SUCCESS) &&
        kError == static_cast<int>(HSAKMT_STATUS_ERROR) &&
        kDriverMismatch == static_cast<int>(HSAKMT_STATUS_DRIVER_MISMATCH) &&
        kInvalidParameter == static_cast<int>(HSAKMT_STATUS_INVALID_PARAMETER) &&
        kInvalidHandle == static_cast<int>(HSAKMT_STATUS_INVALID_HANDLE) &&
        kInvalidNodeUnit == static_cast<int>(HSAKMT_STATUS_INVALID_NODE_UNIT) &&
        kNoMemory == static_cast<int>(HSAKMT_STATUS_NO_MEMORY) &&
        kBufferTooSmall == static_cast<int>(HSAKMT_STATUS_BUFFER_TOO_SMALL) &&
        kNotImplemented == static_cast<int>(HSAKMT_STATUS_NOT_IMPLEMENTED) &&
        kNotSupported == static_cast<int>(HSAKMT_STATUS_NOT_SUPPORTED) &&
        kUnavailable == static_cast<int>(HSAKMT_STATUS_UNAVAILABLE) &&
        kOutOfResources == static_cast<int>(HSAKMT_STATUS_OUT_OF_RESOURCES) &&
        kKernelIoChannelNotOpened == static_cast<int>(HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED) &&
        kKernelCommunicationError == static_cast<int>(HSAKMT_STATUS_KERNEL_COMMUNICATION_ERROR) &&
        kKernelAlreadyOpened == static_cast<int>(HSAKMT_STATUS_KERNEL_ALREADY_OPENED) &&
        kHsammuUnavailable == static_cast<int>(HSAKMT_STATUS_HSAMMU_UNAVAILABLE) &&
        kWaitFailure == static_cast<int>(HSAKMT_STATUS_WAIT_FAILURE) &&
        kWaitTimeout == static_cast<int>(HSAKMT_STATUS_WAIT_TIMEOUT) &&
        kMemoryAlreadyRegistered == static_cast<int>(HSAKMT_STATUS_MEMORY_ALREADY_REGISTERED) &&
        kMemoryNotRegistered == static_cast<int>(HSAKMT_STATUS_MEMORY_NOT_REGISTERED) &&
        kMemoryAlignment == static_cast<int>(HSAKMT_STATUS_MEMORY_ALIGNMENT),
    "HSAKMT_STATUS values changed");
#endif

int status_errno(int status) noexcept {
    switch (status) {
        case kError:
            return EIO;
        case kDriverMismatch:
            return ENODEV;  // the thunk cannot use this kernel's KFD
        case kInvalidParameter:
            return EINVAL;
        case kInvalidHandle:
            return ENOENT;
        case kInvalidNodeUnit:
            return EINVAL;
        case kNoMemory:
            return ENOMEM;
        case kBufferTooSmall:
            return EINVAL;
        case kNotImplemented:
            return EOPNOTSUPP;
        case kNotSupported:
            return EOPNOTSUPP;
        case kUnavailable:
            return EBUSY;
        case kOutOfResources:
            return ENOMEM;
        case kKernelIoChannelNotOpened:
            return ENODEV;
        case kKernelCommunicationError:
            return EIO;
        case kKernelAlreadyOpened:
            return EBUSY;
        case kHsammuUnavailable:
            return ENODEV;
        case kWaitFailure:
            return EIO;
        case kWaitTimeout:
            return ETIMEDOUT;
        case kMemoryAlreadyRegistered:
            return EBUSY;
        case kMemoryNotRegistered:
            return ENOENT;
        case kMemoryAlignment:
            return EINVAL;
        default:
            return EIO;
    }
}

}  // namespace

std::error_code hsakmt_status_error(int status) noexcept {
    if (status == kSuccess) {
        return {};
    }
    return {status_errno(status), std::generic_category()};
}

std::error_code hsakmt_error(int status, int saved_errno) noexcept {
    if (status == kError) {
        switch (saved_errno) {
            case EBUSY:
            case EFAULT:
            case ENOMEM:
            case EINVAL:
            case ENOENT:
            case EPERM:
            case EACCES:
            case EAGAIN:
                return {saved_errno, std::generic_category()};
            default:
                break;
        }
    }
    return hsakmt_status_error(status);
}

}  // namespace xenhsa::hsa
