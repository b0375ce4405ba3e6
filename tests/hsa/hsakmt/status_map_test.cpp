// The one HSAKMT_STATUS -> errno table (values as in hsakmttypes.h).
#include <gtest/gtest.h>

#include <cerrno>
#include <utility>
#include <vector>
#include <xenhsa/hsa/hsakmt_device.hpp>

namespace xenhsa::hsa {
namespace {

TEST(HsakmtStatus, EveryStatusHasItsErrno) {
    const std::vector<std::pair<int, int>> table = {
        {1, EIO},          // ERROR
        {2, ENODEV},       // DRIVER_MISMATCH
        {3, EINVAL},       // INVALID_PARAMETER
        {4, ENOENT},       // INVALID_HANDLE
        {5, EINVAL},       // INVALID_NODE_UNIT
        {6, ENOMEM},       // NO_MEMORY
        {7, EINVAL},       // BUFFER_TOO_SMALL
        {10, EOPNOTSUPP},  // NOT_IMPLEMENTED
        {11, EOPNOTSUPP},  // NOT_SUPPORTED
        {12, EBUSY},       // UNAVAILABLE
        {13, ENOMEM},      // OUT_OF_RESOURCES
        {20, ENODEV},      // KERNEL_IO_CHANNEL_NOT_OPENED: no /dev/kfd
        {21, EIO},         // KERNEL_COMMUNICATION_ERROR
        {22, EBUSY},       // KERNEL_ALREADY_OPENED
        {23, ENODEV},      // HSAMMU_UNAVAILABLE
        {30, EIO},         // WAIT_FAILURE
        {31, ETIMEDOUT},   // WAIT_TIMEOUT
        {35, EBUSY},       // MEMORY_ALREADY_REGISTERED
        {36, ENOENT},      // MEMORY_NOT_REGISTERED
        {37, EINVAL},      // MEMORY_ALIGNMENT
    };
    for (const auto& [status, expected] : table) {
        const std::error_code e = hsakmt_status_error(status);
        EXPECT_EQ(e.value(), expected) << "status " << status;
        EXPECT_EQ(e.category(), std::generic_category()) << "status " << status;
    }
}

TEST(HsakmtStatus, SuccessIsNoError) {
    EXPECT_FALSE(hsakmt_status_error(0));
    EXPECT_FALSE(hsakmt_error(0, EBUSY));
}

TEST(HsakmtStatus, UnknownStatusesAreEio) {
    for (int status : {-1, 8, 9, 14, 19, 24, 29, 32, 34, 38, 1000}) {
        EXPECT_EQ(hsakmt_status_error(status), std::errc::io_error) << status;
    }
}

TEST(HsakmtStatus, APlainErrorKeepsAMeaningfulKernelErrno) {
    // Kernels >= 6.12 refuse to unmap queue memory with EBUSY; the thunk says ERROR.
    EXPECT_EQ(hsakmt_error(1, EBUSY), std::errc::device_or_resource_busy);
    EXPECT_EQ(hsakmt_error(1, EFAULT), std::errc::bad_address);
    EXPECT_EQ(hsakmt_error(1, ENOMEM), std::errc::not_enough_memory);
    // No errno, or one without a meaning at the seam: the status decides.
    EXPECT_EQ(hsakmt_error(1, 0), std::errc::io_error);
    EXPECT_EQ(hsakmt_error(1, EXDEV), std::errc::io_error);
    // Only a plain ERROR is refined.
    EXPECT_EQ(hsakmt_error(3, EBUSY), std::errc::invalid_argument);
    EXPECT_EQ(hsakmt_error(31, EINTR), std::errc::timed_out);
}

}  // namespace
}  // namespace xenhsa::hsa
