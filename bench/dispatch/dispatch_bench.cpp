// xenhsa-bench-dispatch: throughput and submit-to-signal latency of tiny dispatches
// (fill 64 bytes) on the software GPU agent, through two paths measured in one run:
//   in_process      the agent in this process, fed directly (in_process_path.hpp)
//   guest_boundary  a guest (this process, attached to a domain of the embedded
//                   hypervisor) -> its AQL ring in guest memory + doorbell -> a backend
//                   worker process -> the agent (guest_boundary_path.hpp)
// Both agents run with the same number of workgroup workers (the backend's default).
//
// The paths take turns for --rounds rounds. Output: one `path=... dispatch_per_s=...
// latency_us_p50=...` line per path (its median round), `latency_ratio=` (guest p50 over
// in-process p50) and, last,
// `dispatch_ratio=<guest_boundary dispatch_per_s / in_process dispatch_per_s>`: the share
// of the in-process throughput left through the guest boundary.
#include "dispatch_path.hpp"
#include "embedded_services.hpp"
#include "guest_boundary_path.hpp"
#include "in_process_path.hpp"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <memory>
#include <string>
#include <vector>

int main(int argc, char **argv)
{
    using namespace xenhsa;
    bench::BenchConfig config;
    std::string bin_dir = bench::own_bin_dir().string();
    CLI::App app{"Tiny-dispatch throughput and latency: a guest through the backend vs the "
                 "software GPU agent in-process"};
    app.add_option("--latency-iterations", config.latency_iterations,
                   "single dispatches timed for latency")
        ->capture_default_str();
    app.add_option("--dispatches", config.throughput_dispatches,
                   "dispatches submitted for throughput")
        ->capture_default_str();
    app.add_option("--batch", config.batch, "dispatches per completion wait (throughput)")
        ->capture_default_str();
    uint32_t rounds = 5;
    app.add_option("--rounds", rounds, "alternating rounds per path (median reported)")
        ->check(CLI::Range(1u, 1000u))
        ->capture_default_str();
    std::string only;
    app.add_option("--only", only, "measure one path (for profiling): no ratio lines")
        ->check(CLI::IsMember({"in_process", "guest_boundary"}));
    app.add_option("--bin-dir", bin_dir, "where xenhsa-sim and xenhsa-backend are")
        ->capture_default_str();
    CLI11_PARSE(app, argc, argv);

    try {
        // Both paths live side by side and take turns, so that load on the machine falls
        // on both alike; each path's median round is reported.
        std::vector<std::unique_ptr<bench::DispatchPath>> paths;
        if (only.empty() || only == "in_process") {
            paths.push_back(std::make_unique<bench::InProcessPath>(hsa::SoftAgentOptions{}));
        }
        if (only.empty() || only == "guest_boundary") {
            paths.push_back(std::make_unique<bench::GuestBoundaryPath>(bin_dir));
        }
        std::vector<std::vector<bench::PathResult>> rounds_of(paths.size());
        for (uint32_t round = 0; round < rounds; ++round) {
            for (std::size_t p = 0; p < paths.size(); ++p) {
                rounds_of[p].push_back(bench::measure(*paths[p], config));
            }
        }
        std::vector<bench::PathResult> results;
        for (auto &r : rounds_of) {
            results.push_back(bench::median(std::move(r)));
            bench::print(results.back());
        }
        if (results.size() != 2) {
            return 0;  // one path only (--only): no ratios
        }
        const bench::PathResult &a = results[0];
        const bench::PathResult &b = results[1];
        std::printf("rounds=%u dispatches_per_round=%u batch=%u\n", rounds,
                    config.throughput_dispatches, config.batch);
        std::printf("latency_ratio=%.3f\n",
                    a.latency_us_p50 > 0 ? b.latency_us_p50 / a.latency_us_p50 : 0.0);
        std::printf("dispatch_ratio=%.3f\n",
                    a.dispatches_per_s > 0 ? b.dispatches_per_s / a.dispatches_per_s : 0.0);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "xenhsa-bench-dispatch: %s\n", e.what());
        return 1;
    }
    return 0;
}
