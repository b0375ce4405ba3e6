// The kernarg layouts agree between C (the guest library) and C++ (the agent), and a
// kernarg built in C drives the agent's kernel.
#include "soft_fixture.hpp"

extern "C" {
size_t xenhsa_c_kernarg_size(int kernel);
size_t xenhsa_c_saxpy_a_offset(void);
void xenhsa_c_make_fill(void* out, uint64_t dst, uint64_t count, uint32_t value);
}

namespace xenhsa::hsa::soft_test {
namespace {

class BuiltinKernelsTest : public SoftAgentTest {};

TEST_F(BuiltinKernelsTest, CAndCxxLayoutsAgreeWithTheAgent) {
    for (int k = 0; k < XENHSA_KERNEL_COUNT_; ++k) {
        auto info = device().kernel(static_cast<uint32_t>(k));
        ASSERT_TRUE(info);
        EXPECT_EQ(xenhsa_c_kernarg_size(k), info.value().kernarg_size) << k;
    }
    EXPECT_EQ(xenhsa_c_saxpy_a_offset(), offsetof(xenhsa_kernarg_saxpy, a));
}

TEST_F(BuiltinKernelsTest, KernargBuiltInCDrivesFill) {
    GpuBuffer data(device(), kPage), args(device(), kPage);
    SignalPage signals(device());
    AqlTestQueue queue(device());
    xenhsa_c_make_fill(args.at<void>(), data.va(), 10, 0xfeed);
    queue.submit(dispatch_packet(kernel_object(XENHSA_KERNEL_NAME_FILL), args.va(), grid_1d(16, 8),
                                 signals.init(0, 1)));
    ASSERT_TRUE(signals.wait_eq(0, 0));
    for (int i = 0; i < 10; ++i) {
        EXPECT_EQ(data.at<uint32_t>()[i], 0xfeedu);
    }
    EXPECT_EQ(data.at<uint32_t>()[10], 0u);
}

TEST_F(BuiltinKernelsTest, ChecksumOfMultipleWorkgroupsAddsUp) {
    constexpr uint32_t words = 5000;
    GpuBuffer data(device(), words * 4), args(device(), kPage), result(device(), kPage);
    uint64_t expected = 0;
    for (uint32_t i = 0; i < words; ++i) {
        data.at<uint32_t>()[i] = 0xffff0000u + i;  // large words: the sum needs 64 bits
        expected += 0xffff0000ull + i;
    }
    SignalPage signals(device());
    AqlTestQueue queue(device());
    const Va kernarg =
        put_kernarg(args, 0, xenhsa_kernarg_checksum{data.va(), words, result.va(8)});
    queue.submit(dispatch_packet(kernel_object("checksum"), kernarg, grid_1d(words, 100),
                                 signals.init(0, 1)));
    ASSERT_TRUE(signals.wait_eq(0, 0));
    EXPECT_EQ(*result.at<uint64_t>(8), expected);
}

TEST_F(BuiltinKernelsTest, OobReadWithinBoundsJustCopies) {
    GpuBuffer src(device(), kPage), dst(device(), kPage), args(device(), kPage);
    src.at<uint32_t>()[7] = 1234;
    SignalPage signals(device());
    AqlTestQueue queue(device());
    const Va kernarg = put_kernarg(args, 0, xenhsa_kernarg_oob_read{src.va(), 7, dst.va()});
    queue.submit(
        dispatch_packet(kernel_object("oob_read"), kernarg, grid_1d(64, 64), signals.init(0, 1)));
    ASSERT_TRUE(signals.wait_eq(0, 0));
    EXPECT_EQ(*dst.at<uint32_t>(), 1234u);
    EXPECT_TRUE(log().faults().empty());
}

}  // namespace
}  // namespace xenhsa::hsa::soft_test
