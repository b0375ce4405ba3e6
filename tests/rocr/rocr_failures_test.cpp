// ROCm programs in a guest when things fail: a GPU fault, a stopped queue, a lost link,
// a request answered too late, a program killed: each ends as on a GPU, never hangs, and
// the backend keeps nothing of it.
#include "rocr_fixture.hpp"

namespace xenhsa::testing::scenarios {
namespace {

using namespace std::chrono_literals;

// A GPU page fault sets the guest's memory events; ROCr's VM-fault handler, woken through
// the guest libhsakmt, reports it and aborts the program, as it does on a real GPU.
TEST_F(Rocr, GpuFaultEndsTheProgramAsOnAGpu) {
    const Guest g = run_in_guest({XENHSA_ROCR_CHECK_BINARY, "--fault"});
    EXPECT_TRUE(check_held(g.run, "vector-add"));
    EXPECT_NE(g.run.out.find("info dispatching-fault"), std::string::npos) << g.run.out;
    EXPECT_TRUE(WIFEXITED(g.run.status) && WEXITSTATUS(g.run.status) == 128 + SIGABRT)
        << "exit status " << g.run.status << "\n"
        << g.run.out;
    EXPECT_EQ(g.run.out.find("check fault-reported FAIL"), std::string::npos) << g.run.out;
    ASSERT_NE(g.domid, 0u);
    EXPECT_TRUE(released_within(g.domid));
}

// A queue the software GPU stops (an unknown code object, a malformed dispatch, a packet
// type it does not run) is reported as a GPU's command processor reports it: the error
// code in the queue's inactive signal, which ROCr turns into the queue's error callback.
TEST_F(Rocr, AStoppedQueueReachesRocrAsTheErrorAGpuRaises) {
    for (const char* cause : {"code", "dimensions", "packet"}) {
        const Guest g = run_in_guest({XENHSA_ROCR_CHECK_BINARY, "--queue-error", cause});
        EXPECT_TRUE(scenario_passed(g.run)) << cause << "\n" << g.run.out;
        EXPECT_TRUE(check_held(g.run, "queue-error-reported")) << cause << "\n" << g.run.out;
        EXPECT_TRUE(check_held(g.run, "queue-error-within-1s")) << cause << "\n" << g.run.out;
        ASSERT_NE(g.domid, 0u);
        EXPECT_TRUE(released_within(g.domid));
    }
}

// Without a callback, ROCr's default handler says why and aborts, as on a GPU.
TEST_F(Rocr, AStoppedQueueWithoutACallbackAbortsWithROCrsMessage) {
    const std::string command =
        std::string("exec ") + XENHSA_ROCR_CHECK_BINARY + " --queue-error-abort code 2>&1";
    const Guest g = run_in_guest({"/bin/sh", "-c", command});
    EXPECT_NE(g.run.out.find("info dispatching-queue-error"), std::string::npos) << g.run.out;
    EXPECT_TRUE(WIFEXITED(g.run.status) && WEXITSTATUS(g.run.status) == 128 + SIGABRT)
        << "exit status " << g.run.status << "\n"
        << g.run.out;
    EXPECT_NE(g.run.out.find("inactivated due to async error"), std::string::npos) << g.run.out;
    EXPECT_NE(g.run.out.find("HSA_STATUS_ERROR_INVALID_CODE_OBJECT"), std::string::npos)
        << g.run.out;
    EXPECT_EQ(g.run.out.find("check queue-error-aborted FAIL"), std::string::npos) << g.run.out;
    ASSERT_NE(g.domid, 0u);
    EXPECT_TRUE(released_within(g.domid));
}

// The link broken while the program waits (its worker killed, its device unplugged by
// the toolstack): the guest library reports it as a GPU reset, and ROCr's VM-fault handler
// aborts the program with its message within a second, instead of its waits waking
// forever.
class RocrLostLink : public Rocr, public ::testing::WithParamInterface<std::string> {};

TEST_P(RocrLostLink, EndsTheProgramAsAGpuResetWithinASecond) {
    CapturedProcess program(
        run_args({"/bin/sh", "-c",
                  std::string("exec ") + XENHSA_ROCR_CHECK_BINARY + " --wait-ms 60000 2>&1"}));
    ASSERT_TRUE(program.wait_for_line("info long-wait-start", kScenarioPatience))
        << program.output();
    const uint32_t domid = last_domid();
    const auto dev = device(domid);
    ASSERT_TRUE(dev && dev->contains("worker_pid")) << status_text();
    const auto broken = std::chrono::steady_clock::now();
    std::unique_ptr<CapturedProcess> unplug;
    if (GetParam() == "worker-killed") {
        ASSERT_EQ(::kill(dev->at("worker_pid").get<pid_t>(), SIGKILL), 0);
    } else {
        unplug = std::make_unique<CapturedProcess>(
            std::vector<std::string>{XENHSA_CTL_BINARY, "--sim-dir", sim().dir().string(), "unplug",
                                     "--domid", std::to_string(domid), "--timeout", "20"});
    }
    const auto ended = program.wait(kPatience);
    const auto took = std::chrono::steady_clock::now() - broken;
    ASSERT_TRUE(ended) << program.output();
    // In a PV dom0 the program's system memory is the backend's lent pages, which an
    // unplug takes back: a thread may die of SIGBUS on them before ROCr's handler speaks.
    const bool lent_memory_revoked =
        pv_dom0() && GetParam() == "unplugged" && program.output().find("BUS") != std::string::npos;
    if (!lent_memory_revoked) {
        EXPECT_TRUE(WIFEXITED(*ended) && WEXITSTATUS(*ended) == 128 + SIGABRT)
            << "exit status " << *ended << "\n"
            << program.output();
        EXPECT_NE(program.output().find("Reason: Generic hang recovery"), std::string::npos)
            << program.output();
        EXPECT_NE(program.output().find("the link to the backend broke"), std::string::npos)
            << program.output();
    }
    EXPECT_LT(took, 1s) << std::chrono::duration<double>(took).count() << " s\n"
                        << program.output();
    if (unplug) {
        (void)unplug->wait(kPatience);
    }
}

INSTANTIATE_TEST_SUITE_P(Rocr, RocrLostLink, ::testing::Values("worker-killed", "unplugged"),
                         [](const auto& p) {
                             std::string name = p.param;
                             name.erase(std::remove(name.begin(), name.end(), '-'), name.end());
                             return name;
                         });

#ifdef XENHSA_ROCR_TEST_HOOKS
// A state-changing request the backend answers too late (its worker held in the KFD's
// queue creation, as by a hung driver): the guest library ends the session at its
// request timeout instead of waiting, and the process learns of it as of a GPU reset:
// ROCr's VM-fault handler reports the hang and aborts it, within a second of the timeout;
// the backend tears down the session and the queue its late answer made.
TEST_F(Rocr, AStateChangingRequestThatTimesOutEndsTheProgramAsAGpuReset) {
    expect_timed_out_request_aborts(
        {"/bin/sh", "-c", std::string("exec ") + XENHSA_ROCR_CHECK_BINARY + " 2>&1"});
}
#endif

// A ROCm process SIGKILLed in a domain that lives on (its device's grant driver clears
// the ring's fe_alive and kicks: gntalloc's unmap notification) is reclaimed by the
// backend within a second, without any other process's help, and the next program on
// that device starts at once.
TEST_F(Rocr, AKilledProcessInALivingDomainIsReclaimedWithinASecond) {
    // A first program keeps the domain alive on device 0.
    auto holder =
        std::make_unique<CapturedProcess>(run_args({XENHSA_ROCR_CHECK_BINARY, "--repeat", "0"}));
    ASSERT_TRUE(holder->wait_for_line("info repeating", kScenarioPatience)) << holder->output();
    const uint32_t domid = last_domid();
    const std::string dir = sim().dir().string();
    const std::string dom = std::to_string(domid);
    ASSERT_TRUE(ctl({"plug", "--domid", dom, "--devid", "1"}).ok()) << status_text();
    const auto device1 = [&] { return device(domid, 1); };
    const std::vector<std::string> on_device1{
        XENHSA_RUN_BINARY,        "--sim-dir", dir,    "--domid", dom, "--devid", "1", "--",
        XENHSA_ROCR_CHECK_BINARY, "--wait-ms", "60000"};
    CapturedProcess doomed(on_device1);
    const auto pid_line = doomed.wait_for_line("info pid=", kScenarioPatience);
    ASSERT_TRUE(pid_line) << doomed.output();
    ASSERT_TRUE(doomed.wait_for_line("info long-wait-start", kScenarioPatience)) << doomed.output();
    const auto before = device1();
    ASSERT_TRUE(before && before->is_object() && before->value("handles", 0) > 0) << status_text();

    ASSERT_EQ(::kill(std::stoi(*word_value(*pid_line, "pid")), SIGKILL), 0);
    const auto killed = std::chrono::steady_clock::now();
    bool reclaimed = false;
    while (!reclaimed && std::chrono::steady_clock::now() - killed < 5s) {
        const auto d = device1();
        reclaimed = d && d->is_object() && d->value("handles", 1) == 0 &&
                    d->value("mapped_pages", 1) == 0 && d->value("pinned_pages", 1) == 0;
        if (!reclaimed) {
            std::this_thread::sleep_for(20ms);
        }
    }
    const auto took = std::chrono::steady_clock::now() - killed;
    EXPECT_TRUE(reclaimed) << status_text();
    EXPECT_LT(took, 1s) << std::chrono::duration<double>(took).count() << " s";
    (void)doomed.wait(kPatience);

    // The domain lives on (its other program computes), and the next program on device 1
    // starts at once.
    std::vector<std::string> again = on_device1;
    again.resize(again.size() - 2);  // no wait this time
    const Output next = run(again, kScenarioPatience);
    EXPECT_TRUE(scenario_passed(next)) << next.out;
    holder->signal(SIGTERM);
    (void)holder->wait(kPatience);
}

TEST_F(Rocr, ProgramKilledMidDispatchLeavesNothingAndOthersGoOn) {
    auto other = start_guest({"vecadd", "--repeat", "0"});
    const auto other_line = other->wait_for_line("info repeating", kScenarioPatience);
    ASSERT_TRUE(other_line) << other->output();
    const auto alive = domid_in(*other_line);
    ASSERT_TRUE(alive);

    CapturedProcess doomed(run_args({XENHSA_ROCR_CHECK_BINARY, "--repeat", "0"}));
    const auto pid_line = doomed.wait_for_line("info pid=", kScenarioPatience);
    ASSERT_TRUE(pid_line) << doomed.output();
    ASSERT_TRUE(doomed.wait_for_line("info repeating", kScenarioPatience)) << doomed.output();
    const uint32_t dead = last_domid();
    ASSERT_NE(dead, 0u);
    const auto before = device(dead);
    ASSERT_TRUE(before && before->is_object()) << status_text();

    const pid_t program = std::stoi(*word_value(*pid_line, "pid"));
    ASSERT_EQ(::kill(program, SIGKILL), 0);
    const auto ended = doomed.wait(kPatience);
    ASSERT_TRUE(ended && WIFEXITED(*ended) && WEXITSTATUS(*ended) == 128 + SIGKILL)
        << "xenhsa-run should report the program's SIGKILL: " << doomed.output();
    EXPECT_TRUE(released_within(dead, 5s));

    other->signal(SIGTERM);
    const Output other_run = finish_guest(*other);
    EXPECT_TRUE(scenario_passed(other_run));
    EXPECT_TRUE(check_held(other_run, "result"));

    const Guest after = run_in_guest({XENHSA_ROCR_CHECK_BINARY});
    EXPECT_TRUE(scenario_passed(after.run)) << "a new ROCm guest after the killed one";
}

}  // namespace
}  // namespace xenhsa::testing::scenarios
