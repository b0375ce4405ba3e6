#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <xenhsa/backend/service/cpu_groups.hpp>

namespace xenhsa::backend::service {
namespace {

TEST(CpuCgroupOf, UnifiedHostUsesItsOnlyLine) {
    const auto cg = cpu_cgroup_of("0::/system.slice/xenhsa-backend.service\n");
    ASSERT_TRUE(cg);
    EXPECT_TRUE(cg->unified);
    EXPECT_EQ(cg->path, "/system.slice/xenhsa-backend.service");
}

TEST(CpuCgroupOf, HybridHostKeepsCpuInVersionOne) {
    const auto cg =
        cpu_cgroup_of("9:name=systemd:/\n4:memory:/m\n2:cpu,cpuacct:/x/y\n0::/unified-path\n");
    ASSERT_TRUE(cg);
    EXPECT_FALSE(cg->unified);
    EXPECT_EQ(cg->path, "/x/y");
}

TEST(CpuCgroupOf, ControllerNamesMatchWhole) {
    // cpuacct and cpuset alone are not the cpu controller.
    const auto cg = cpu_cgroup_of("3:cpuset:/a\n2:cpuacct:/b\n");
    EXPECT_FALSE(cg);
}

TEST(CpuCgroupOf, MalformedLinesAreSkipped) {
    EXPECT_FALSE(cpu_cgroup_of(""));
    EXPECT_FALSE(cpu_cgroup_of("garbage\n1:cpu\n1:cpu:relative\n"));
    const auto cg = cpu_cgroup_of("garbage\n1:cpu:/ok");
    ASSERT_TRUE(cg);
    EXPECT_EQ(cg->path, "/ok");
}

TEST(CpuGroups, DisabledGroupsRefuseToPlaceAndSayWhy) {
    const CpuGroups none;
    EXPECT_FALSE(none.enabled());
    EXPECT_FALSE(none.why_disabled().empty());
    EXPECT_FALSE(none.place(1));
    // Where no cgroup hierarchy is mounted, opening says so instead of failing later.
    const CpuGroups missing = CpuGroups::open("/nonexistent-cgroup-root");
    EXPECT_FALSE(missing.enabled());
    EXPECT_FALSE(missing.why_disabled().empty());
}

TEST(CpuGroups, AWorkerFindsTheSupervisorsGroupsByTheirDirectory) {
    EXPECT_FALSE(CpuGroups::at("/nonexistent-cgroup-dir").enabled());
    const auto dir =
        std::filesystem::temp_directory_path() / ("cpu-groups-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const CpuGroups groups = CpuGroups::at(dir);
    EXPECT_TRUE(groups.enabled()) << groups.why_disabled();
    EXPECT_EQ(groups.dir(), dir);
    EXPECT_EQ(groups.group_of(42), dir / "xenhsa-worker-42");
    // Not a cgroup (no cpu.shares or cpu.weight to write): placing fails and leaves no group.
    EXPECT_FALSE(groups.place(42));
    EXPECT_FALSE(std::filesystem::exists(groups.group_of(42)));
    std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace xenhsa::backend::service
