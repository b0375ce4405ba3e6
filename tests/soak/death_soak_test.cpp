// The death soak (reliability tier, item 2). Guests doing mixed work (`xenhsa-guest churn`:
// MAP+PIN batches, LENDs, event waits, vector_add packets in flight) are SIGKILLed at a
// random moment, from the handshake on; in the second test their workers are. After each
// kill: the backend releases everything of the guest (status counters 0, dom0 maps no
// grant page and shares no page in the embedded hypervisor), its log has no sanitizer
// report, and the supervisor lives on; a guest whose worker was killed ends with an error,
// never a crash or a hang. At the end the supervisor holds no more fds, threads or
// mappings than after the first kill, and stops cleanly (LSan).
//
// XENHSA_SOAK_ITERATIONS: kills per test (default 25, so CI kills 50); script/soak
// --iterations 1000 runs the long version. XENHSA_SOAK_SEED: the seed (default: the clock;
// printed, so that a failure can be replayed).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <child_process.hpp>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <env_knob.hpp>
#include <iostream>
#include <random>
#include <string>
#include <thread>
#include <vector>
#include <xenhsa/xen/sim/client.hpp>

#include "leak_checks.hpp"
#include "scenario_fixture.hpp"

namespace {

using namespace std::chrono_literals;
using namespace xenhsa::testing;
using namespace xenhsa::testing::scenarios;

class DeathSoak : public ScenarioTest {
protected:
    void SetUp() override {
        ScenarioTest::SetUp();
        iterations_ = env_number("XENHSA_SOAK_ITERATIONS", 25);
        seed_ = env_number("XENHSA_SOAK_SEED", static_cast<uint64_t>(std::random_device{}()));
        rng_.seed(seed_);
        std::cout << "soak seed " << seed_ << " (XENHSA_SOAK_SEED), " << iterations_ << " kills\n";
    }

    std::unique_ptr<CapturedProcess> start_churn() {
        return start_guest({"--timeout-ms", "5000", "churn", "--seed",
                            std::to_string(static_cast<uint32_t>(rng_()))});
    }

    // What a toolstack does when a VM is killed (xl destroy): its domain goes too. A guest
    // killed before it attached to the domain it created leaves that domain alive, and the
    // backend rightly goes on waiting for its frontend (a worker and its channel).
    void destroy_domain_of(pid_t guest) {
        const std::string name = "guest-" + std::to_string(guest);
        if (auto domains = xenhsa::xen::sim::list_domains(sim().dir())) {
            for (const auto& d : domains.value()) {
                if (d.name == name && d.alive) {
                    (void)xenhsa::xen::sim::destroy_domain(sim().dir(), d.domid);
                }
            }
        }
    }

    std::chrono::milliseconds random_delay(uint32_t max_ms) {
        return std::chrono::milliseconds(rng_() % (max_ms + 1));
    }

    // After one kill: everything released, no report, the supervisor alive. The first
    // problem, or empty.
    std::string after_kill(std::size_t log_from) {
        std::string why;
        if (!eventually([&] { return nothing_held(why); }, 10s)) {
            return "something is left: " + why;
        }
        if (const auto report = sanitizer_report(backend_log().substr(log_from))) {
            return "a sanitizer report (" + *report + ")";
        }
        if (wait_for_exit(backend_pid(), 0ms)) {
            return "the supervisor ended";
        }
        return {};
    }

    // The supervisor's resources once the first kill settled, then checked at the end.
    void settle_baseline(uint64_t i) {
        if (i == 0) {
            base_ = resources_of(backend_pid());
        }
    }

    // The last worker may still be ending (its channel is one of the supervisor's fds).
    void expect_no_growth() {
        std::optional<std::string> growth;
        EXPECT_TRUE(
            eventually([&] { return !(growth = grew(base_, resources_of(backend_pid()))); }, 10s))
            << "the supervisor grew over the soak: " << growth.value_or("");
    }

    uint64_t iterations_ = 0;
    uint64_t seed_ = 0;
    std::mt19937_64 rng_;
    Resources base_;
};

TEST_F(DeathSoak, GuestsKilledAtRandomMomentsLeaveNothing) {
    uint64_t during_work = 0;
    for (uint64_t i = 0; i < iterations_; ++i) {
        const std::size_t log_from = backend_log().size();
        auto guest = start_churn();
        const auto delay = random_delay(1500);
        const auto started = std::chrono::steady_clock::now();
        // Killed at `delay` after its start, whatever it is doing then.
        const auto churning = guest->wait_for_line("info churning", delay);
        if (auto rest = delay - std::chrono::duration_cast<std::chrono::milliseconds>(
                                    std::chrono::steady_clock::now() - started);
            rest > 0ms) {
            std::this_thread::sleep_for(rest);
        }
        during_work += churning ? 1 : 0;
        ASSERT_FALSE(wait_for_exit(guest->pid(), 0ms))
            << "kill " << i << ": the guest ended by itself:\n"
            << guest->output();
        const pid_t pid = guest->pid();
        guest->signal(SIGKILL);
        (void)guest->wait(kPatience);
        destroy_domain_of(pid);
        const std::string problem = after_kill(log_from);
        ASSERT_TRUE(problem.empty()) << "kill " << i << " (seed " << seed_ << ", after "
                                     << delay.count() << " ms): " << problem << "\n--- guest ---\n"
                                     << guest->output() << "--- backend ---\n"
                                     << backend_log().substr(log_from);
        settle_baseline(i);
    }
    expect_no_growth();
    std::cout << "soak guests: kills=" << iterations_ << " during-work=" << during_work
              << " during-setup=" << iterations_ - during_work << " leaks=0\n";
}

// The worker pid the backend reports for `domid`, or -1.
pid_t worker_of(const nlohmann::json& status, uint32_t domid) {
    if (status.is_object() && status.contains("domains") && status["domains"].is_array()) {
        for (const auto& d : status["domains"]) {
            if (d.is_object() && d.value("domid", int64_t{-1}) == int64_t{domid}) {
                return static_cast<pid_t>(d.value("worker_pid", int64_t{-1}));
            }
        }
    }
    return -1;
}

TEST_F(DeathSoak, WorkersKilledAtRandomMomentsLeaveNothing) {
    for (uint64_t i = 0; i < iterations_; ++i) {
        const std::size_t log_from = backend_log().size();
        auto guest = start_churn();
        const auto line = guest->wait_for_line("info churning", kPatience);
        ASSERT_TRUE(line) << "kill " << i << ": the guest never churned:\n" << guest->output();
        const auto domid = domid_in(*line);
        ASSERT_TRUE(domid);
        std::this_thread::sleep_for(random_delay(500));
        const pid_t worker = worker_of(control({{"op", "status"}}), *domid);
        ASSERT_GT(worker, 0) << status_text();
        ASSERT_EQ(::kill(worker, SIGKILL), 0);
        // The guest sees its backend go and ends with an error.
        const pid_t pid = guest->pid();
        const Output run = finish_guest(*guest);
        destroy_domain_of(pid);
        std::string problem;
        if (run.status < 0) {
            problem = "the guest hung after its worker died";
        } else if (!WIFEXITED(run.status) || WEXITSTATUS(run.status) != 1) {
            problem = "the guest " + describe_status(run.status) + " (expected exit 1)";
        } else {
            problem = after_kill(log_from);
        }
        ASSERT_TRUE(problem.empty())
            << "kill " << i << " (seed " << seed_ << "): " << problem << "\n--- guest ---\n"
            << run.out << "--- backend ---\n"
            << backend_log().substr(log_from);
        settle_baseline(i);
    }
    expect_no_growth();
    std::cout << "soak workers: kills=" << iterations_ << " leaks=0\n";
}

}  // namespace
