// Opening the adapter where there is no /dev/kfd (CI machines, this build host).
#include <gtest/gtest.h>
#include <unistd.h>

#include <xenhsa/hsa/hsakmt_device.hpp>

namespace xenhsa::hsa {
namespace {

bool have_kfd() { return access("/dev/kfd", F_OK) == 0; }

TEST(HsakmtOpen, WithoutDevKfdFailsWithEnodevAndSaysWhy) {
    if (have_kfd()) {
        GTEST_SKIP() << "this host has /dev/kfd";
    }
    std::string message;
    auto device = open_hsakmt_device(&message);
    ASSERT_FALSE(device);
    EXPECT_EQ(device.error(), std::errc::no_such_device);
    EXPECT_EQ(device.error().category(), std::generic_category());
    EXPECT_EQ(message.rfind("no /dev/kfd: ", 0), 0u) << message;
}

TEST(HsakmtOpen, FailingTwiceGivesTheSameAnswer) {
    if (have_kfd()) {
        GTEST_SKIP() << "this host has /dev/kfd";
    }
    // A failed open leaves nothing behind (no "already open" on the next try).
    for (int i = 0; i < 2; ++i) {
        auto device = open_hsakmt_device();
        ASSERT_FALSE(device);
        EXPECT_EQ(device.error(), std::errc::no_such_device) << i;
    }
}

}  // namespace
}  // namespace xenhsa::hsa
