// A confined worker under the load of a heavy, well-behaved guest (`xenhsa-guest load`):
// big fills on eight queues (the agent's pool), 32 pending event waits (a thread each),
// SDMA copies, a fault, and queues destroyed with work running. Its filter must never
// kill it, and every one of its threads (dozens by then, each started after confinement)
// must be as confined as its main thread.
#include <gtest/gtest.h>

#include <string>
#include <thread_confinement.hpp>
#include <vector>

#include "scenario_fixture.hpp"

namespace {

using namespace std::chrono_literals;
using namespace xenhsa::testing;
using namespace xenhsa::testing::scenarios;

using ConfinedWorker = ScenarioTest;

TEST_F(ConfinedWorker, HeavyWellBehavedGuestIsServedToItsEndWithEveryThreadConfined) {
    auto guest = start_guest({"load", "--pause-ms", "3000"});
    const auto loaded = guest->wait_for_line("info loaded", kScenarioPatience);
    ASSERT_TRUE(loaded) << guest->output();
    const auto domid = domid_in(*loaded);
    ASSERT_TRUE(domid) << *loaded;
    const auto entry = device(*domid);
    ASSERT_TRUE(entry && entry->is_object()) << status_text();
    const auto worker = static_cast<pid_t>(entry->value("worker_pid", 0));
    ASSERT_GT(worker, 0) << entry->dump();

    // Eight queue threads, 32 waiting threads, two SDMA engines and the pool: all of them
    // started after the worker confined itself.
    EXPECT_TRUE(every_thread_confined(worker, 8 + 32 + 2 + 1));

    const Output run = finish_guest(*guest);
    expect_passed_and_released(run, {"round", "sdma-result", "gpu-fault-notified", "waits-ended",
                                     "queue-destroy", "handles-released", "backend-alive"});
    const auto after = status();
    ASSERT_TRUE(after) << status_text();
    EXPECT_EQ(after->value("confinement_violations", uint64_t{99}), 0u) << after->dump();
    EXPECT_EQ(backend_log().find("confinement violation"), std::string::npos) << backend_log();
}

}  // namespace
