// The fault sweep (reliability tier, item 1): each product scenario runs once with a trace
// of its worker's seam calls, then once per chosen call with that call failing (hypervisor
// seam: grants, events, xenstore; KFD seam: the software agent behind the fault
// decorators); two scenarios do the same with the supervisor's calls. After every run: the
// guest ended with its result or an error (never a crash or a hang), the backend released
// the guest, the embedded hypervisor holds no grant mapping or share of the backend's, no
// sanitizer report, no worker died but at a documented fail-stop, and the supervisor lives
// on. At the end the supervisor holds no more fds, threads or mappings than after the
// fault-free run, and stops cleanly (LSan).
//
// XENHSA_FAULT_SWEEP=all fails every call of the trace (script/fault-sweep),
// =first-and-last each site's first calls and its last (sweep_plan.hpp); the default (CI,
// which runs every scenario in one process) fails every (site, errno) pair once, in the
// first scenario that reaches it (the guest-killing scenarios count apart).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "leak_checks.hpp"
#include "scenario_fixture.hpp"
#include "sweep_plan.hpp"

namespace {

using namespace std::chrono_literals;
using namespace xenhsa::testing;
using namespace xenhsa::testing::scenarios;
using namespace xenhsa::testing::faults;
namespace fs = std::filesystem;

enum class Drive : uint8_t { to_end, kill_when_repeating, revoke_when_waiting };

struct SweepCase {
    std::string name;
    std::vector<std::string> scenario;
    Drive drive = Drive::to_end;
    // Whose calls fail: the guest's worker, or the supervisor.
    std::string role = "worker";
};

// The supervisor's documented fail-stop: without its xenstore connection it sees no device
// and ends (exit 1; systemd restarts it), so its watch pump's call is not swept.
const std::set<std::string> kSupervisorFailStops{"store.next_event"};

void PrintTo(const SweepCase& c, std::ostream* os) { *os << c.name; }

// A lost answer shows as the guest's timeout, an error like any other: keep it short.
const std::vector<std::string> kGuestOptions{"--timeout-ms", "4000"};

const std::vector<SweepCase>& sweep_cases() {
    static const std::vector<SweepCase> cases{
        {"selftest", {"selftest"}, Drive::to_end},
        {"map_unmap", {"map", "--pages", "64"}, Drive::to_end},
        {"lend", {"lend"}, Drive::to_end},
        {"operator_revoke", {"revoke", "--wait-ms", "20000"}, Drive::revoke_when_waiting},
        {"gpu_vecadd", {"vecadd"}, Drive::to_end},
        {"guest_death",
         {"vecadd", "--repeat", "0", "--elements", "4096"},
         Drive::kill_when_repeating},
        // MAP+PIN, LEND, events with waits, dispatches: what the others do not reach.
        {"churn", {"churn", "--rounds", "2"}, Drive::to_end},
        // The sequence fuzzer's typed calls: ALLOC and FREE, queue create/destroy, and
        // hostile handles among them.
        {"sequence", {"sequence", "--seed", "5", "--calls", "40"}, Drive::to_end},
        {"supervisor_selftest", {"selftest"}, Drive::to_end, "supervisor"},
        {"supervisor_guest_death",
         {"vecadd", "--repeat", "0", "--elements", "4096"},
         Drive::kill_when_repeating,
         "supervisor"},
    };
    return cases;
}

// How one guest run ended.
enum class Ending : uint8_t { passed, error, killed, broken };
constexpr const char* kEndingNames[] = {"passed", "error", "killed", "broken"};

std::string read_file(const fs::path& path) {
    std::ifstream in(path);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

class FaultSweep : public ScenarioTest, public ::testing::WithParamInterface<SweepCase> {
protected:
    bool arm(const std::string& plan) {
        const auto answer = control({{"op", "fault-plan"}, {GetParam().role, plan}});
        return answer.is_object() && answer.value("ok", false);
    }

    // Runs the case's scenario once; how it ended.
    Ending drive(const SweepCase& c, std::string& output) {
        std::vector<std::string> args = kGuestOptions;
        args.insert(args.end(), c.scenario.begin(), c.scenario.end());
        auto guest = start_guest(args);
        bool killed = false;
        if (c.drive == Drive::kill_when_repeating) {
            if (guest->wait_for_line("info repeating", 20s)) {
                guest->signal(SIGKILL);
                killed = true;
            }
        } else if (c.drive == Drive::revoke_when_waiting) {
            if (const auto line = guest->wait_for_line("info waiting-for-revoke", 20s)) {
                if (const auto domid = domid_in(*line)) {
                    (void)control({{"op", "revoke"}, {"domid", *domid}});
                }
            }
        }
        const Output run = finish_guest(*guest);
        output = run.out;
        if (run.status < 0) {
            return Ending::broken;  // a hang
        }
        if (killed && WIFSIGNALED(run.status) && WTERMSIG(run.status) == SIGKILL) {
            return Ending::killed;
        }
        if (WIFEXITED(run.status)) {
            return WEXITSTATUS(run.status) == 0 ? Ending::passed : Ending::error;
        }
        return Ending::broken;
    }
};

// A worker died by a signal: allowed only as the fail-stop of a release that cannot
// proceed (GpuContext's "failed on a release path ... aborting").
bool undocumented_death(std::string_view log) {
    const bool died = log.find("died (signal") != std::string_view::npos;
    const bool fail_stop = log.find("failed on a release path") != std::string_view::npos;
    return died && !fail_stop;
}

TEST_P(FaultSweep, EveryChosenSeamCallFailsOnce) {
    const SweepCase& c = GetParam();
    const fs::path trace_path = sim().dir() / (c.role + ".trace");
    ASSERT_TRUE(arm("trace=" + trace_path.string()));
    std::string output;
    ASSERT_EQ(drive(c, output),
              c.drive == Drive::kill_when_repeating ? Ending::killed : Ending::passed)
        << output;
    // Armed until the guest is released: the release's calls are swept too.
    std::string why;
    ASSERT_TRUE(eventually([&] { return nothing_held(why); }, 10s)) << why;
    ASSERT_TRUE(arm(""));
    const auto trace = parse_trace(read_file(trace_path));
    ASSERT_TRUE(trace && !trace->empty()) << read_file(trace_path);

    const char* mode = std::getenv("XENHSA_FAULT_SWEEP");
    const std::string_view chosen = mode != nullptr ? mode : "";
    const Coverage coverage = chosen == "all"              ? Coverage::every_call
                              : chosen == "first-and-last" ? Coverage::first_and_last
                                                           : Coverage::new_pairs;
    // Over the scenarios this process runs, in order; a guest killed mid-compute is a
    // release path of its own, so those scenarios cover their pairs apart.
    static CoveredPairs covered;
    const std::string scope = c.role + (c.drive == Drive::kill_when_repeating ? ":killed:" : ":");
    auto plan = plan_faults(*trace, coverage, &covered, scope);
    const auto excluded = std::erase_if(plan, [&](const PlannedFault& f) {
        return c.role == "supervisor" && kSupervisorFailStops.contains(f.site);
    });
    const Resources base = resources_of(backend_pid());

    std::map<Ending, uint64_t> endings;
    uint64_t not_reached = 0;
    uint64_t fail_stops = 0;
    int failures = 0;
    for (const PlannedFault& fault : plan) {
        const std::size_t log_from = backend_log().size();
        const auto started = std::chrono::steady_clock::now();
        ASSERT_TRUE(arm(fault.spec())) << fault.spec();
        const Ending ending = drive(c, output);
        ++endings[ending];
        const auto driven = std::chrono::steady_clock::now();
        const bool held = eventually([&] { return nothing_held(why); }, 10s);
        ASSERT_TRUE(arm(""));
        std::cout << "  " << fault.spec() << ": " << kEndingNames[static_cast<int>(ending)] << " "
                  << std::chrono::duration_cast<std::chrono::milliseconds>(driven - started).count()
                  << " ms, released after "
                  << std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::steady_clock::now() - driven)
                         .count()
                  << " ms\n";
        const std::string log = backend_log().substr(log_from);
        not_reached += log.find("injected fault") == std::string::npos ? 1 : 0;
        fail_stops += log.find("failed on a release path") != std::string::npos ? 1 : 0;
        const auto report = sanitizer_report(log);
        const auto backend_ended = wait_for_exit(backend_pid(), 0ms);

        std::string problem;
        if (ending == Ending::broken) {
            problem = "the guest crashed or hung";
        } else if (!held) {
            problem = "something is left: " + why;
        } else if (report) {
            problem = "a sanitizer report (" + *report + ")";
        } else if (undocumented_death(log)) {
            problem = "a worker died, not at a documented fail-stop";
        } else if (backend_ended) {
            problem = "the supervisor ended";
        }
        if (!problem.empty()) {
            ADD_FAILURE() << c.name << " with " << fault.spec() << " ("
                          << std::strerror(fault.error) << "): " << problem << "\n--- guest ---\n"
                          << output << "--- backend ---\n"
                          << log;
            if (++failures == 3 || backend_ended) {
                break;
            }
        }
    }

    // The last worker may still be ending (its channel is one of the supervisor's fds).
    std::optional<std::string> growth;
    EXPECT_TRUE(
        eventually([&] { return !(growth = grew(base, resources_of(backend_pid()))); }, 10s))
        << "the supervisor grew: " << growth.value_or("");

    std::set<std::string> sites;
    for (const auto& call : *trace) {
        sites.insert(call.site);
    }
    // One line per case for docs/operations.md (script/fault-sweep collects them).
    std::cout << "fault-sweep " << c.name << ": calls=" << trace->size()
              << " sites=" << sites.size() << " pairs=" << site_errno_pairs(*trace).size()
              << " runs=" << plan.size() << " passed=" << endings[Ending::passed]
              << " error=" << endings[Ending::error] << " killed=" << endings[Ending::killed]
              << " fail-stop=" << fail_stops << " not-reached=" << not_reached
              << " excluded=" << excluded << " mode="
              << (coverage == Coverage::every_call       ? "all"
                  : coverage == Coverage::first_and_last ? "first-and-last"
                                                         : "new-pairs")
              << "\n";
}

INSTANTIATE_TEST_SUITE_P(Seams, FaultSweep, ::testing::ValuesIn(sweep_cases()),
                         [](const ::testing::TestParamInfo<SweepCase>& param) {
                             return param.param.name;
                         });

}  // namespace
