// Supervisor restart under live guests (the reliability tier): the backend runs under a
// stand-in for systemd's notify socket and file-descriptor store (ServiceManager). Its
// supervisor is SIGKILLed while guests hold MAPs, PINs, LENDs, events and a busy queue,
// then started again as systemd does after Restart=on-failure, with the fds it kept. The
// workers never saw their supervisor go (the store held its end of their channels), so
// they served their guests throughout; the new supervisor adopts them. The guests' own
// checks of their buffers and of every dispatch's result hold across the restart.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <service_manager.hpp>
#include <string>
#include <thread>
#include <vector>

#include "scenario_fixture.hpp"

namespace {

using namespace std::chrono_literals;
using namespace xenhsa::testing;
using namespace xenhsa::testing::scenarios;

class SupervisorRestart : public ScenarioTest {
protected:
    void SetUp() override {
        // Orphaned workers become this process's children, so that it reaps them.
        ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
        ScenarioTest::SetUp();
    }
    void TearDown() override {
        ScenarioTest::TearDown();
        while (::waitpid(-1, nullptr, WNOHANG) > 0) {
        }
        ::prctl(PR_SET_CHILD_SUBREAPER, 0);
    }

    pid_t launch_backend(const std::vector<std::string>& command) override {
        if (!manager_) {
            manager_ = std::make_unique<ServiceManager>(sim().dir() / "notify.sock");
        }
        return manager_->start(command, log_path());
    }

    // What the backend reports of `domid`: field `key` (0 when absent).
    uint64_t reported(uint32_t domid, const char* key) {
        const auto d = device(domid);
        return d && d->is_object() ? d->value(key, uint64_t{0}) : 0;
    }

    std::unique_ptr<ServiceManager> manager_;
};

bool running(pid_t pid) { return ::kill(pid, 0) == 0 && !wait_for_exit(pid, 0ms); }

TEST_F(SupervisorRestart, GuestsKeepBeingServedByTheirWorkersAcrossASupervisorCrash) {
    auto churning = start_guest({"churn", "--seed", "7"});
    auto computing = start_guest({"vecadd", "--repeat", "0", "--elements", "65536"});
    const auto churn_line = churning->wait_for_line("info churning", kScenarioPatience);
    const auto compute_line = computing->wait_for_line("info repeating", kScenarioPatience);
    ASSERT_TRUE(churn_line) << churning->output();
    ASSERT_TRUE(compute_line) << computing->output();
    const auto a = domid_in(*churn_line);
    const auto b = domid_in(*compute_line);
    ASSERT_TRUE(a && b);
    const auto worker_a = static_cast<pid_t>(reported(*a, "worker_pid"));
    const auto worker_b = static_cast<pid_t>(reported(*b, "worker_pid"));
    ASSERT_GT(worker_a, 0) << status_text();
    ASSERT_GT(worker_b, 0) << status_text();
    EXPECT_GT(reported(*a, "pinned_pages"), 0u) << status_text();
    EXPECT_EQ(reported(*b, "queues"), 1u) << status_text();
    ASSERT_TRUE(eventually([&] { return manager_->kept().size() == 2; }))
        << "the supervisor keeps each worker's channel in the store";

    crash_backend();
    // Meanwhile the workers serve their guests on, unsupervised.
    std::this_thread::sleep_for(500ms);
    EXPECT_TRUE(running(worker_a) && running(worker_b)) << "the workers outlive the crash";
    EXPECT_TRUE(running(churning->pid()) && running(computing->pid()))
        << churning->output() << computing->output();

    start_backend();
    // The new supervisor adopted both workers, with their guests' objects.
    EXPECT_EQ(reported(*a, "worker_pid"), static_cast<uint64_t>(worker_a)) << status_text();
    EXPECT_EQ(reported(*b, "worker_pid"), static_cast<uint64_t>(worker_b)) << status_text();
    EXPECT_GT(reported(*a, "pinned_pages"), 0u) << status_text();
    EXPECT_EQ(reported(*b, "queues"), 1u) << status_text();
    const auto log = backend_log();
    EXPECT_NE(log.find("adopted worker " + std::to_string(worker_a)), std::string::npos) << log;

    // More rounds under the new supervisor, an operator request through an adopted
    // worker, then each guest stops and checks everything it did.
    std::this_thread::sleep_for(500ms);
    const auto revoke = control({{"op", "revoke"}, {"domid", *a}, {"handle", 1}});
    EXPECT_TRUE(revoke.is_object() && revoke.value("ok", false) == false)
        << "an unknown handle is refused by the adopted worker: " << revoke.dump();
    churning->signal(SIGTERM);
    computing->signal(SIGTERM);
    const Output churned = finish_guest(*churning);
    const Output computed = finish_guest(*computing);
    EXPECT_TRUE(scenario_passed(churned));
    EXPECT_TRUE(check_held(churned, "churn"));
    EXPECT_TRUE(scenario_passed(computed));
    EXPECT_TRUE(check_held(computed, "result"));
    EXPECT_TRUE(released_within(*a));
    EXPECT_TRUE(released_within(*b));

    // The restarted supervisor serves new guests too, and nothing is left.
    const Output fresh = run_guest({"selftest"});
    EXPECT_TRUE(scenario_passed(fresh));
    std::string why;
    EXPECT_TRUE(eventually([&] { return nothing_held(why); })) << why;
}

TEST_F(SupervisorRestart, AWorkerThatEndedWhileTheSupervisorWasDownIsNotAdopted) {
    auto guest = start_guest({"map", "--pages", "8", "--hold"});
    const auto line = guest->wait_for_line("info holding", kScenarioPatience);
    ASSERT_TRUE(line) << guest->output();
    const auto domid = domid_in(guest->output());
    ASSERT_TRUE(domid);
    const auto worker = static_cast<pid_t>(reported(*domid, "worker_pid"));
    ASSERT_GT(worker, 0);
    ASSERT_TRUE(eventually([&] { return manager_->kept().size() == 1; }));

    crash_backend();
    ASSERT_EQ(::kill(worker, SIGKILL), 0);
    EXPECT_TRUE(eventually([&] { return ::waitpid(worker, nullptr, WNOHANG) == worker; }));
    start_backend();
    const std::string dead = "-" + std::to_string(worker);
    EXPECT_TRUE(eventually([&] {
        const auto kept = manager_->kept();
        return std::none_of(kept.begin(), kept.end(),
                            [&](const std::string& name) { return name.ends_with(dead); });
    })) << "the new supervisor drops the dead worker's channel from the store";
    // The guest's device gets a fresh worker once the guest reconnects; this one sees
    // its backend gone and ends with an error.
    guest->signal(SIGTERM);
    const Output run = finish_guest(*guest);
    EXPECT_TRUE(run.status >= 0 && WIFEXITED(run.status)) << run.out;
    EXPECT_TRUE(released_within(*domid));
}

}  // namespace
