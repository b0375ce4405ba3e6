// `xenhsa-guest reconnect`: the device goes through Closing/Closed and back to
// Initialising, with new pages and a new port each time; optionally each round first
// waits for the backend to die (be_alive drops to 0 when its worker is killed).
#include <fmt/core.h>

#include <xenhsa/frontend/errors.hpp>

#include "harness.hpp"
#include "scenarios.hpp"

namespace xenhsa::frontend::cli {

namespace {

void small_session(Report& report, Harness& h, uint32_t round) {
    Client& client = h.client();
    report.check(fmt::format("round-{}-query", round), client.query_version());
    auto buffer = client.allocate(2);
    if (!report.check(fmt::format("round-{}-allocate", round), buffer)) {
        return;
    }
    auto map = client.map(buffer.value());
    if (report.check(fmt::format("round-{}-map", round), map)) {
        report.check(fmt::format("round-{}-unmap", round), client.unmap(map.value()));
    }
}

}  // namespace

int run_reconnect(const GlobalOptions& options, const ReconnectOptions& reconnect) {
    Report report("reconnect");
    Harness h(options, report);
    if (!h.open()) {
        return report.finish();
    }
    for (uint32_t round = 0; round < reconnect.rounds; ++round) {
        small_session(report, h, round);
        if (reconnect.wait_for_backend_death) {
            report.info(fmt::format("round-{} waiting for the backend to go away", round));
            Result<void> alive = boost::outcome_v2::success();
            const auto deadline = std::chrono::steady_clock::now() + h.timeout();
            while (alive && std::chrono::steady_clock::now() < deadline) {
                alive = h.client().pump(std::chrono::milliseconds(100));
            }
            report.check(fmt::format("round-{}-backend-gone", round),
                         !alive && alive.error() == Errc::backend_gone,
                         alive ? "still alive" : describe(alive.error()));
        }
        if (!h.reconnect()) {
            return report.finish();
        }
    }
    small_session(report, h, reconnect.rounds);
    report.check("close", h.device().close());
    return report.finish();
}

}  // namespace xenhsa::frontend::cli
