// The sequence fuzzer (reliability tier, item 6), syzkaller-style: seeded programs of
// typed guest calls (`xenhsa-guest sequence`: MAP, PIN, MAP_TO_GPU, ALLOC, LEND, events,
// queues and dispatches on the resources earlier calls made, one call in five hostile)
// against the embedded hypervisor and a real backend. The guest checks each answer; after
// each program the backend must hold nothing of it, its log must have no sanitizer report
// and the supervisor must live on; at the end it holds no more fds, threads or mappings.
//
// CI runs programs 1..20 (300 calls each). XENHSA_SEQUENCE_SECONDS=N runs programs from
// XENHSA_SEQUENCE_FIRST_SEED on until N seconds passed (script/fuzz's `sequence` target);
// XENHSA_SEQUENCE_CALLS sets their length. A failing program is replayed with
// `xenhsa-guest --sim-dir DIR sequence --seed S --calls N --trace`.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <env_knob.hpp>
#include <iostream>
#include <string>

#include "leak_checks.hpp"
#include "scenario_fixture.hpp"

namespace {

using namespace std::chrono_literals;
using namespace xenhsa::testing;
using namespace xenhsa::testing::scenarios;

using SequenceFuzz = ScenarioTest;

TEST_F(SequenceFuzz, ProgramsOfTypedCallsLeaveNothing) {
    const uint64_t seconds = env_number("XENHSA_SEQUENCE_SECONDS", 0);
    const uint64_t first = env_number("XENHSA_SEQUENCE_FIRST_SEED", 1);
    const uint64_t calls = env_number("XENHSA_SEQUENCE_CALLS", 300);
    const uint64_t programs = seconds == 0 ? 20 : UINT64_MAX;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    Resources base;
    uint64_t ran = 0;
    for (uint64_t seed = first; ran < programs; ++seed, ++ran) {
        if (seconds != 0 && std::chrono::steady_clock::now() >= deadline) {
            break;
        }
        const std::size_t log_from = backend_log().size();
        const Output run = run_guest({"--timeout-ms", "5000", "sequence", "--seed",
                                      std::to_string(seed), "--calls", std::to_string(calls)});
        std::string why;
        std::string problem;
        if (!scenario_passed(run)) {
            problem = "the program failed its checks";
        } else if (!eventually([&] { return nothing_held(why); }, 10s)) {
            problem = "something is left: " + why;
        } else if (const auto report = sanitizer_report(backend_log().substr(log_from))) {
            problem = "a sanitizer report (" + *report + ")";
        } else if (wait_for_exit(backend_pid(), 0ms)) {
            problem = "the supervisor ended";
        }
        ASSERT_TRUE(problem.empty())
            << "program " << seed << " (" << calls << " calls): " << problem << "\n--- guest ---\n"
            << run.out << "--- backend ---\n"
            << backend_log().substr(log_from);
        if (ran == 0) {
            base = resources_of(backend_pid());
        }
    }
    std::optional<std::string> growth;
    EXPECT_TRUE(
        eventually([&] { return !(growth = grew(base, resources_of(backend_pid()))); }, 10s))
        << "the supervisor grew: " << growth.value_or("");
    std::cout << "sequence: programs=" << ran << " calls=" << ran * calls << " first-seed=" << first
              << " findings=0\n";
}

}  // namespace
