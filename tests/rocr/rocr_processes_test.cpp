// Several ROCm processes of one guest: two programs at once, each in a GPU address space
// of its own; a forked child; a close while another thread waits.
#include "rocr_fixture.hpp"

namespace xenhsa::testing::scenarios {
namespace {

using namespace std::chrono_literals;

// Two ROCm programs at once in one guest, with no configuration: each `xenhsa-run` in the
// domain claims a device of its own, so each runs over a worker and a GPU address space of
// its own. Both ask for the same VA window (as the real thunk's fixed aperture hints give
// every process the same GPU addresses), fill buffers at the same VAs with different values
// on the GPU, wait for each other, and each reads back its own.
TEST_F(Rocr, TwoProgramsInOneGuestRunAtOnceEachInAGpuAddressSpaceOfItsOwn) {
    run_options_ = {"--devices", "3"};
    // A first program computes on (and keeps the domain alive: on the simulator a domain
    // ends with its last process).
    CapturedProcess holder(run_args({XENHSA_ROCR_CHECK_BINARY, "--repeat", "0"}));
    ASSERT_TRUE(holder.wait_for_line("info repeating", kScenarioPatience)) << holder.output();
    const uint32_t domid = last_domid();
    ASSERT_NE(domid, 0u);
    const std::filesystem::path meet = sim().dir() / "isolation";
    std::filesystem::create_directories(meet);
    const auto in_domain = [&](const char* value) {
        return std::vector<std::string>{XENHSA_RUN_BINARY,
                                        "--sim-dir",
                                        sim().dir().string(),
                                        "--domid",
                                        std::to_string(domid),
                                        "--window-base",
                                        "0x200000000000",
                                        "--",
                                        XENHSA_ROCR_CHECK_BINARY,
                                        "--isolation",
                                        value,
                                        meet.string()};
    };
    CapturedProcess one(in_domain("0x11111111"));
    CapturedProcess two(in_domain("0x22222222"));
    const auto one_status = one.wait(kScenarioPatience);
    const auto two_status = two.wait(kScenarioPatience);
    EXPECT_TRUE(one_status && WIFEXITED(*one_status) && WEXITSTATUS(*one_status) == 0)
        << one.output();
    EXPECT_TRUE(two_status && WIFEXITED(*two_status) && WEXITSTATUS(*two_status) == 0)
        << two.output();
    for (const CapturedProcess* p : {&one, &two}) {
        EXPECT_NE(p->output().find("check isolation-own-data ok"), std::string::npos)
            << p->output();
    }
    // The system buffer at the same VA in both: what each read back there on the GPU was
    // its own. (Device memory lands where ROCr's allocation order puts it, which its
    // threads vary.)
    static const std::regex va_line(R"(info isolation device-va=(\S+) system-va=(\S+))");
    std::smatch m1;
    std::smatch m2;
    ASSERT_TRUE(std::regex_search(one.output(), m1, va_line)) << one.output();
    ASSERT_TRUE(std::regex_search(two.output(), m2, va_line)) << two.output();
    EXPECT_EQ(m1[2].str(), m2[2].str());
    // Devices 1 and 2 were each connected once and closed again with nothing left, while
    // the first program held device 0 and computed on.
    for (const uint32_t devid : {1u, 2u}) {
        const auto d = device(domid, devid);
        ASSERT_TRUE(d && d->is_object()) << status_text();
        EXPECT_EQ(d->value("state", ""), "Closed") << "device " << devid << ": " << status_text();
        EXPECT_EQ(d->value("handles", 1), 0) << status_text();
    }
    const auto d0 = device(domid, 0);
    ASSERT_TRUE(d0 && d0->is_object()) << status_text();
    EXPECT_EQ(d0->value("state", ""), "Connected") << status_text();
    holder.signal(SIGTERM);
    (void)holder.wait(kPatience);
    EXPECT_EQ(holder.output().find("FAIL"), std::string::npos) << holder.output();
}

// A child forked from a ROCm process holds copies of its parent's ring, grants and event
// channel: as with the real thunk, its libhsakmt calls answer KERNEL_IO_CHANNEL_NOT_OPENED,
// its hsaKmtCloseKFD touches nothing of the parent's, and the parent computes on.
TEST_F(Rocr, AForkedChildGetsNoChannelAndLeavesItsParentAlone) {
    const Guest g = run_in_guest({XENHSA_ROCR_CHECK_BINARY, "--fork"});
    EXPECT_TRUE(scenario_passed(g.run)) << g.run.out;
    EXPECT_TRUE(check_held(g.run, "fork-child")) << g.run.out;
    EXPECT_TRUE(check_held(g.run, "fork-parent-goes-on")) << g.run.out;
    ASSERT_NE(g.domid, 0u);
    EXPECT_TRUE(released_within(g.domid));
}

// Where its domain has a device free, the child's own hsaKmtOpenKFD opens anew, as with
// the real thunk: it claims that device (never its parent's), works, and closes it.
TEST_F(Rocr, AForkedChildOpensAnewOnADeviceOfItsOwn) {
    run_options_ = {"--devices", "2"};
    const Guest g = run_in_guest({XENHSA_ROCR_CHECK_BINARY, "--fork-opens"});
    EXPECT_TRUE(scenario_passed(g.run)) << g.run.out;
    EXPECT_TRUE(check_held(g.run, "fork-child")) << g.run.out;
    EXPECT_NE(g.run.out.find("info fork-child get-version=20 open=0 get-version-after=0 close=0"),
              std::string::npos)
        << g.run.out;
    EXPECT_TRUE(check_held(g.run, "fork-parent-goes-on")) << g.run.out;
    ASSERT_NE(g.domid, 0u);
    EXPECT_TRUE(released_within(g.domid));
}

// The last hsaKmtCloseKFD while another thread waits (libhsakmt alone, without ROCr, whose
// threads would use the memory the close gives back): the wait ends with an error at once
// and the closed session is never touched (a sanitized library would report it).
TEST_F(Rocr, ClosingWhileAnotherThreadWaitsEndsTheWaitSafely) {
    const Guest g = run_in_guest({XENHSA_ROCR_CHECK_BINARY, "--close-under-wait"});
    EXPECT_TRUE(scenario_passed(g.run)) << g.run.out;
    EXPECT_TRUE(check_held(g.run, "close-under-wait")) << g.run.out;
    ASSERT_NE(g.domid, 0u);
    EXPECT_TRUE(released_within(g.domid));
}

}  // namespace
}  // namespace xenhsa::testing::scenarios
