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
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

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

// A child that only waits to be killed (it dies with the test), standing for a process the
// store names; -1 when fork failed.
pid_t idle_child() {
    const pid_t pid = ::fork();
    if (pid == 0) {
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        for (;;) {
            ::pause();
        }
    }
    return pid;
}

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

TEST_F(SupervisorRestart, OfTwoStoredWorkersForOneDeviceOneIsAdoptedAndTheOtherKilled) {
    auto guest = start_guest({"map", "--pages", "8", "--hold"});
    ASSERT_TRUE(guest->wait_for_line("info holding", kScenarioPatience)) << guest->output();
    const auto domid = domid_in(guest->output());
    ASSERT_TRUE(domid);
    const auto worker = static_cast<pid_t>(reported(*domid, "worker_pid"));
    ASSERT_GT(worker, 0);
    ASSERT_TRUE(eventually([&] { return manager_->kept().size() == 1; }));
    const std::string stored = manager_->kept().front();
    const std::string device_prefix = stored.substr(0, stored.rfind('-') + 1);

    crash_backend();
    // A second process stored for the same device, with a channel of its own.
    int pair[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
    const xenhsa::xen::sim::UniqueFd ours(pair[0]);
    const pid_t impostor = idle_child();
    ASSERT_GT(impostor, 0);
    manager_->keep(device_prefix + std::to_string(impostor), xenhsa::xen::sim::UniqueFd(pair[1]));
    start_backend();

    // Exactly one of the two is killed, and the other serves the device.
    std::optional<int> worker_end;
    std::optional<int> impostor_end;
    const auto one_ended = [&] {
        int status = 0;
        if (!worker_end && ::waitpid(worker, &status, WNOHANG) == worker) {
            worker_end = status;
        }
        if (!impostor_end && ::waitpid(impostor, &status, WNOHANG) == impostor) {
            impostor_end = status;
        }
        return worker_end || impostor_end;
    };
    ASSERT_TRUE(eventually(one_ended)) << backend_log();
    std::this_thread::sleep_for(200ms);
    (void)one_ended();
    ASSERT_NE(worker_end.has_value(), impostor_end.has_value()) << backend_log();
    const int killed_status = worker_end ? *worker_end : *impostor_end;
    const pid_t killed = worker_end ? worker : impostor;
    const pid_t adopted = worker_end ? impostor : worker;
    EXPECT_TRUE(WIFSIGNALED(killed_status) && WTERMSIG(killed_status) == SIGKILL);
    EXPECT_EQ(reported(*domid, "worker_pid"), static_cast<uint64_t>(adopted)) << status_text();
    EXPECT_NE(backend_log().find("worker " + std::to_string(killed) +
                                 " of the previous run is a second worker"),
              std::string::npos)
        << backend_log();
    const auto kept = manager_->kept();
    EXPECT_EQ(kept, std::vector<std::string>{device_prefix + std::to_string(adopted)})
        << "the killed one's channel left the store";

    if (!impostor_end) {
        ::kill(impostor, SIGKILL);
        ::waitpid(impostor, nullptr, 0);
    }
    guest->signal(SIGTERM);
    const Output run = finish_guest(*guest);
    EXPECT_TRUE(run.status >= 0 && WIFEXITED(run.status)) << run.out;
    EXPECT_TRUE(released_within(*domid));
}

TEST_F(SupervisorRestart, AStoredPidNowNamingAnotherProcessIsLeftAlone) {
    ASSERT_TRUE(eventually([&] { return status().has_value(); }));
    crash_backend();
    // A worker that ended while the supervisor was down, its pid since taken by another
    // process: its channel's other end is closed.
    int pair[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
    ::close(pair[0]);
    const pid_t other = idle_child();
    ASSERT_GT(other, 0);
    const std::string name = "worker-4242-0-" + std::to_string(other);
    manager_->keep(name, xenhsa::xen::sim::UniqueFd(pair[1]));
    start_backend();

    EXPECT_TRUE(eventually([&] { return manager_->kept().empty(); }))
        << "the dead worker's channel leaves the store";
    EXPECT_EQ(reported(4242, "worker_pid"), 0u) << status_text();
    std::this_thread::sleep_for(200ms);
    EXPECT_TRUE(running(other)) << "the process now holding the pid is not signalled";
    ::kill(other, SIGKILL);
    ::waitpid(other, nullptr, 0);
}

}  // namespace
