// How a guest process claims one of its domain's xenhsa devices (device_claim.hpp): the
// lowest free one, each by one process only, given back when the process dies.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <xenhsa/frontend/device_claim.hpp>
#include <xenhsa/frontend/toolstack.hpp>
#include <xenhsa/xen/sim/store_tree.hpp>

#include "../backend/service/tree_store.hpp"

namespace xenhsa::frontend {
namespace {

constexpr xen::DomId kGuest = 5;

class DeviceClaimTest : public ::testing::Test {
protected:
    void SetUp() override {
        char pattern[] = "/tmp/xenhsa-claim-XXXXXX";
        ASSERT_NE(::mkdtemp(pattern), nullptr);
        dir_ = pattern;
        options_.lock_dir = dir_ / "locks";
        ASSERT_TRUE(tree_.introduce_domain(kGuest));  // as a toolstack: its home is its own
    }
    void TearDown() override { std::filesystem::remove_all(dir_); }

    void plug(uint32_t devid) { ASSERT_TRUE(add_device(dom0_, 0, kGuest, devid)); }
    ClaimResult claim(std::optional<uint32_t> devid = std::nullopt) {
        ClaimOptions o = options_;
        o.devid = devid;
        return claim_device(guest_, kGuest, o);
    }

    xen::sim::StoreTree tree_;
    test::TreeStore dom0_{tree_, 0};
    test::TreeStore guest_{tree_, kGuest};
    std::filesystem::path dir_;
    ClaimOptions options_;
};

TEST_F(DeviceClaimTest, TheLowestFreeDeviceIsClaimedAndEachByOneClaimOnly) {
    plug(1);
    plug(0);
    auto first = claim();
    ASSERT_TRUE(first.has_value()) << first.error().text;
    EXPECT_EQ(first.value().devid(), 0u);
    auto second = claim();
    ASSERT_TRUE(second.has_value()) << second.error().text;
    EXPECT_EQ(second.value().devid(), 1u);

    auto third = claim();
    ASSERT_FALSE(third.has_value());
    EXPECT_EQ(third.error().code, std::errc::device_or_resource_busy);
    EXPECT_NE(third.error().text.find("all 2 xenhsa devices of domain 5"), std::string::npos)
        << third.error().text;
    EXPECT_NE(third.error().text.find("xenhsa-ctl plug --domid 5 --devid 2 --devices N"),
              std::string::npos)
        << third.error().text;

    first.value().release();
    auto again = claim();
    ASSERT_TRUE(again.has_value()) << again.error().text;
    EXPECT_EQ(again.value().devid(), 0u);
}

TEST_F(DeviceClaimTest, ADeviceAskedForByNumberIsThatOneAndABusyOneNamesItsHolder) {
    plug(0);
    plug(3);
    auto three = claim(3);
    ASSERT_TRUE(three.has_value()) << three.error().text;
    EXPECT_EQ(three.value().devid(), 3u);
    auto busy = claim(3);
    ASSERT_FALSE(busy.has_value());
    EXPECT_EQ(busy.error().code, std::errc::device_or_resource_busy);
    EXPECT_NE(busy.error().text.find("device/xenhsa/3 is in use by another process (pid " +
                                     std::to_string(::getpid()) + ")"),
              std::string::npos)
        << busy.error().text;
    auto missing = claim(2);
    ASSERT_FALSE(missing.has_value());
    EXPECT_EQ(missing.error().code, std::errc::no_such_device);
}

TEST_F(DeviceClaimTest, WithoutAPluggedDeviceTheErrorSaysHowToPlugOne) {
    // A directory without its backend key is not plugged (yet).
    ASSERT_TRUE(dom0_.write(xen::kNoTx, "/local/domain/5/device/xenhsa/0/state", "1"));
    auto none = claim();
    ASSERT_FALSE(none.has_value());
    EXPECT_EQ(none.error().code, std::errc::no_such_device);
    EXPECT_NE(none.error().text.find("xenhsa-ctl plug --domid 5"), std::string::npos)
        << none.error().text;
}

TEST_F(DeviceClaimTest, AClaimEndsWithItsProcessEvenWhenItIsKilled) {
    plug(0);
    plug(1);
    int ready[2];
    ASSERT_EQ(::pipe(ready), 0);
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        auto mine = claim();
        const char ok = mine.has_value() && mine.value().devid() == 0 ? 'y' : 'n';
        (void)!::write(ready[1], &ok, 1);
        ::alarm(30);  // never outlives a failed test
        ::pause();
        ::_exit(0);
    }
    struct Reaper {
        pid_t pid;
        ~Reaper() {
            if (pid > 0) {
                ::kill(pid, SIGKILL);
                ::waitpid(pid, nullptr, 0);
            }
        }
    } reaper{child};
    ::close(ready[1]);
    char ok = 0;
    ASSERT_EQ(::read(ready[0], &ok, 1), 1);
    ::close(ready[0]);
    EXPECT_EQ(ok, 'y');
    auto other = claim();
    ASSERT_TRUE(other.has_value()) << other.error().text;
    EXPECT_EQ(other.value().devid(), 1u);  // device 0 is the child's

    ASSERT_EQ(::kill(child, SIGKILL), 0);
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    reaper.pid = 0;
    auto freed = claim();
    ASSERT_TRUE(freed.has_value()) << freed.error().text;
    EXPECT_EQ(freed.value().devid(), 0u);
}

TEST_F(DeviceClaimTest, AProgramItExecsDoesNotInheritTheClaim) {
    plug(0);
    auto mine = claim();
    ASSERT_TRUE(mine.has_value()) << mine.error().text;
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        // The claim's descriptor is close-on-exec: the shell sees no lock file open.
        ::execl("/bin/sh", "sh", "-c", "ls -l /proc/self/fd | grep -q '\\.lock$' && exit 1; exit 0",
                static_cast<char*>(nullptr));
        ::_exit(127);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

}  // namespace
}  // namespace xenhsa::frontend
