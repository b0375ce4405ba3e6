// Every memory and hostile scenario of xenhsa-guest against a real xenhsa-sim and a real
// xenhsa-backend: it exits 0 with every check held (and the checks that show it did its
// job among them), the backend keeps nothing for the guest once it is gone, and a
// `selftest` guest still passes afterwards (a hostile guest may be cut off, the backend
// must keep serving).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "scenario_fixture.hpp"

namespace {

using namespace xenhsa::testing;
using namespace xenhsa::testing::scenarios;

struct MemoryCase {
    std::string name;               // the test's name suffix
    std::vector<std::string> args;  // the subcommand and its options
    std::vector<std::string> must_hold;
    bool operator_revokes = false;  // `revoke`: xenhsa-ctl revokes once the guest waits
};

void PrintTo(const MemoryCase& c, std::ostream* os) { *os << c.name; }

const std::vector<MemoryCase>& memory_cases() {
    static const std::vector<MemoryCase> cases{
        {"selftest", {"selftest"}, {"query-version", "map", "pin", "unpin", "close"}},
        {"map_64_pages",
         {"map", "--pages", "64"},
         {"map", "end-access-refused-while-mapped", "pattern-intact", "end-access-after-unmap"}},
        {"lend", {"lend"}, {"lend", "mapped-at-lent-va", "zeroed", "pattern-readback"}},
        {"revoke",
         {"revoke", "--wait-ms", "60000"},
         {"revoked-notified", "revoked-record", "probe-faults", "map-over-revoked-range",
          "ack-unmap"},
         true},
        {"stress",
         {"stress"},
         {"map-unmap-loop", "pipelined-full-ring", "event-wait-cancelled", "window-returned"}},
        {"reconnect", {"reconnect"}, {"reconnect", "round-0-map", "round-2-map", "close"}},
        // Ring-level violation: the backend cuts this guest off on purpose.
        {"hostile_overflow", {"hostile", "--mode", "overflow"}, {"backend-disconnects"}},
        {"hostile_garbage",
         {"hostile", "--mode", "garbage"},
         {"garbage-answered", "session-survives", "backend-alive"}},
        {"hostile_forged_handle",
         {"hostile", "--mode", "forged-handle"},
         {"forged-handle-UNMAP", "map-handle-as-UNPIN", "stale-handle-unmap", "session-survives"}},
        {"hostile_bad_grefs",
         {"hostile", "--mode", "bad-grefs"},
         {"map-ungranted-refs", "map-one-bad-ref", "map-after-failures",
          "map-read-only-grant-writable", "indirect-dirty-tail", "session-survives"}},
        {"hostile_va_outside",
         {"hostile", "--mode", "va-outside"},
         {"map-below-window", "map-straddling-window-end", "map-overlapping", "session-survives"}},
        {"hostile_doorbell_garbage",
         {"hostile", "--mode", "doorbell-garbage"},
         {"doorbells-scribbled", "session-survives", "backend-alive"}},
        {"hostile_hello_again",
         {"hostile", "--mode", "hello-again"},
         {"hello-after-connected-0", "hello-after-connected-2", "session-survives"}},
        {"hostile_event_flood",
         {"hostile", "--mode", "event-flood"},
         {"kicks-sent", "session-survives", "backend-alive"}},
        {"hostile_doorbell_flood",
         {"hostile", "--mode", "doorbell-flood"},
         {"queue-create", "kicks-sent", "queue-destroy", "session-survives", "backend-alive"}},
        {"hostile_notify_scribble",
         {"hostile", "--mode", "notify-scribble"},
         {"session-survives", "backend-alive"}},
    };
    return cases;
}

class MemoryScenario : public ScenarioTest, public ::testing::WithParamInterface<MemoryCase> {};

TEST_P(MemoryScenario, PassesAndTheBackendKeepsServing) {
    const MemoryCase& c = GetParam();
    auto guest = start_guest(c.args);
    ASSERT_GT(guest->pid(), 0);
    if (c.operator_revokes) {
        const auto waiting = guest->wait_for_line("info waiting-for-revoke", kScenarioPatience);
        ASSERT_TRUE(waiting) << "the guest never waited for the revoke:\n" << guest->output();
        const auto domid = domid_in(*waiting);
        ASSERT_TRUE(domid) << *waiting;
        const Output revoked = ctl({"revoke", "--domid", std::to_string(*domid)});
        EXPECT_TRUE(revoked.ok()) << "xenhsa-ctl revoke: " << revoked.out;
    }
    expect_passed_and_released(finish_guest(*guest), c.must_hold);

    const Output after = run_guest({"selftest"});
    EXPECT_TRUE(scenario_passed(after)) << "the backend stopped serving after " << c.name;
}

INSTANTIATE_TEST_SUITE_P(Guest, MemoryScenario, ::testing::ValuesIn(memory_cases()),
                         [](const ::testing::TestParamInfo<MemoryCase>& param) {
                             return param.param.name;
                         });

}  // namespace
