// The GPU scenarios of xenhsa-guest (software AQL agent) against a real xenhsa-sim and a
// real `xenhsa-backend --gpu soft`: each one passes alone, and with several guests at once
// a guest that dies with its queue busy or one whose kernel faults touches no one else.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <child_process.hpp>
#include <csignal>
#include <string>
#include <vector>

#include "scenario_fixture.hpp"

namespace {

using namespace std::chrono_literals;
using namespace xenhsa::testing;
using namespace xenhsa::testing::scenarios;

struct GpuCase {
    std::string name;
    std::vector<std::string> args;
    std::vector<std::string> must_hold;
};

void PrintTo(const GpuCase& c, std::ostream* os) { *os << c.name; }

const std::vector<GpuCase>& gpu_cases() {
    static const std::vector<GpuCase> cases{
        {"vecadd", {"vecadd"}, {"queue-create", "dispatch-vector_add", "result", "queue-destroy"}},
        {"vecadd_repeat", {"vecadd", "--repeat", "3"}, {"result"}},
        {"saxpy", {"saxpy"}, {"dispatch-saxpy", "result"}},
        {"fill_checksum", {"fill-checksum"}, {"fill-result", "checksum-result"}},
        {"barrier_chain",
         {"barrier-chain"},
         {"barrier-and-0", "barrier-or", "all-links-signalled", "chain-result"}},
        {"fault",
         {"fault"},
         {"gpu-fault-notified", "gpu-fault-address", "client-knows-faulted",
          "error-event-signalled", "queue-destroy", "backend-alive"}},
        {"sdma_hang",
         {"sdma-hang"},
         {"gpu-hang-notified", "gpu-hang-flag", "client-knows-faulted", "queue-destroy",
          "backend-alive"}},
    };
    return cases;
}

class GpuScenario : public ScenarioTest, public ::testing::WithParamInterface<GpuCase> {};

TEST_P(GpuScenario, Passes) {
    const GpuCase& c = GetParam();
    expect_passed_and_released(run_guest(c.args), c.must_hold);
}

INSTANTIATE_TEST_SUITE_P(Guest, GpuScenario, ::testing::ValuesIn(gpu_cases()),
                         [](const ::testing::TestParamInfo<GpuCase>& param) {
                             return param.param.name;
                         });

// A guest computing in a loop until SIGTERM (`vecadd --repeat 0`, several packets in flight
// per round); its domid once the first round is done.
std::optional<uint32_t> wait_until_repeating(CapturedProcess& guest) {
    const auto line = guest.wait_for_line("info repeating", kScenarioPatience);
    return line ? domid_in(*line) : std::nullopt;
}

uint64_t count(const nlohmann::json& device, const char* key) {
    return device.is_object() && device[key].is_number_unsigned() ? device[key].get<uint64_t>() : 0;
}

using MultiGuest = ScenarioTest;

TEST_F(MultiGuest, GuestKilledWithItsQueueBusyLeavesNothingAndOthersGoOn) {
    auto doomed = start_guest({"vecadd", "--repeat", "0", "--elements", "262144"});
    const auto dead = wait_until_repeating(*doomed);
    ASSERT_TRUE(dead) << doomed->output();
    const auto before = device(*dead);
    ASSERT_TRUE(before && before->is_object()) << status_text();
    EXPECT_EQ(count(*before, "queues"), 1u) << before->dump();
    // Its GPU memory: MAPped guest pages, or lent ones where grants cannot be pinned.
    EXPECT_GT(count(*before, "mapped_pages") + count(*before, "lent_pages"), 0u) << before->dump();
    EXPECT_GT(count(*before, "pinned_pages"), 0u) << before->dump();
    EXPECT_GT(count(*before, "handles"), 0u) << before->dump();

    auto other = start_guest({"vecadd", "--repeat", "0"});
    const auto alive = wait_until_repeating(*other);
    ASSERT_TRUE(alive) << other->output();

    doomed->signal(SIGKILL);
    const auto killed = doomed->wait(kPatience);
    ASSERT_TRUE(killed && WIFSIGNALED(*killed) && WTERMSIG(*killed) == SIGKILL)
        << describe_status(killed) << "\n"
        << doomed->output();
    // The bound (script/run-demo checks the same for a killed guest's MAPs).
    EXPECT_TRUE(released_within(*dead, 5s));

    // The other guest computed through it, with right results.
    const auto still = device(*alive);
    ASSERT_TRUE(still && still->is_object()) << status_text();
    EXPECT_EQ(count(*still, "queues"), 1u) << still->dump();
    other->signal(SIGTERM);
    const Output other_run = finish_guest(*other);
    EXPECT_TRUE(scenario_passed(other_run));
    EXPECT_TRUE(check_held(other_run, "result"));

    const Output after = run_guest({"vecadd"});
    EXPECT_TRUE(scenario_passed(after)) << "a new guest after the killed one";
}

TEST_F(MultiGuest, FaultInOneGuestWhileAnotherComputes) {
    auto computing = start_guest({"vecadd", "--repeat", "0", "--elements", "65536"});
    const auto busy = wait_until_repeating(*computing);
    ASSERT_TRUE(busy) << computing->output();

    const Output faulted = run_guest({"fault"});
    EXPECT_TRUE(scenario_passed(faulted));
    EXPECT_TRUE(check_held(faulted, "gpu-fault-notified"));
    EXPECT_TRUE(check_held(faulted, "error-event-signalled"));
    EXPECT_TRUE(check_held(faulted, "queue-destroy"));
    const auto faulted_domid = domid_in(faulted.out);
    ASSERT_TRUE(faulted_domid) << faulted.out;
    EXPECT_TRUE(released_within(*faulted_domid));

    // The computing guest did not notice: still running, its queue still there.
    EXPECT_FALSE(computing->wait_for_line("summary", 0ms)) << computing->output();
    const auto d = device(*busy);
    ASSERT_TRUE(d && d->is_object()) << status_text();
    EXPECT_EQ(count(*d, "queues"), 1u) << d->dump();

    computing->signal(SIGTERM);
    const Output computed = finish_guest(*computing);
    EXPECT_TRUE(scenario_passed(computed));
    EXPECT_TRUE(check_held(computed, "result"));

    const Output after = run_guest({"vecadd"});
    EXPECT_TRUE(scenario_passed(after)) << "a third guest after the fault";
}

}  // namespace
