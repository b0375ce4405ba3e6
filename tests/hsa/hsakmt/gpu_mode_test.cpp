#include <gtest/gtest.h>

#include <xenhsa/hsa/gpu_mode.hpp>

namespace xenhsa::hsa {
namespace {

TEST(GpuMode, ParsesTheThreeModes) {
    EXPECT_EQ(parse_gpu_mode("auto").value(), GpuMode::auto_);
    EXPECT_EQ(parse_gpu_mode("kfd").value(), GpuMode::kfd);
    EXPECT_EQ(parse_gpu_mode("soft").value(), GpuMode::soft);
    for (GpuMode mode : {GpuMode::auto_, GpuMode::kfd, GpuMode::soft}) {
        EXPECT_EQ(parse_gpu_mode(gpu_mode_name(mode)).value(), mode);
    }
}

TEST(GpuMode, RefusesEverythingElse) {
    for (const char* text : {"", "KFD", "Soft", "auto ", " kfd", "hsakmt", "software"}) {
        auto r = parse_gpu_mode(text);
        ASSERT_FALSE(r) << text;
        EXPECT_EQ(r.error(), std::errc::invalid_argument);
    }
    EXPECT_FALSE(parse_gpu_mode(std::string_view("kfd\0", 4)));
}

TEST(GpuMode, AutoPicksKfdOnlyWhenItOpens) {
    EXPECT_EQ(resolve_gpu_mode(GpuMode::auto_, true), GpuMode::kfd);
    EXPECT_EQ(resolve_gpu_mode(GpuMode::auto_, false), GpuMode::soft);
    // An explicit choice stands: kfd without /dev/kfd is the caller's error to report.
    EXPECT_EQ(resolve_gpu_mode(GpuMode::kfd, false), GpuMode::kfd);
    EXPECT_EQ(resolve_gpu_mode(GpuMode::kfd, true), GpuMode::kfd);
    EXPECT_EQ(resolve_gpu_mode(GpuMode::soft, true), GpuMode::soft);
    EXPECT_EQ(resolve_gpu_mode(GpuMode::soft, false), GpuMode::soft);
}

}  // namespace
}  // namespace xenhsa::hsa
