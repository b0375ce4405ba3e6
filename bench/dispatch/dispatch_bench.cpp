// xenhsa-bench-dispatch: throughput and submit-to-signal latency of tiny dispatches
// (fill 64 bytes) on the software GPU agent, through two paths measured in one run:
//   in_process      the agent in this process, fed directly (in_process_path.hpp)
//   guest_boundary  a guest (this process, attached to a domain of the embedded
//                   hypervisor) -> its AQL ring in guest memory + doorbell -> a backend
//                   worker process -> the agent (guest_boundary_path.hpp)
// Both agents run with the same number of workgroup workers (the backend's default).
//
// Beside them, in the same rounds, the physical baseline the in-process path is held to
// (packet_loop_path.hpp: a bare polling packet loop between two threads), printed as
// `baseline=packet_loop ...`, and `path=in_process_polling`: the in-process path with a
// producer that polls the signal as the baseline's does. `in_process_vs_packet_loop=` is
// its dispatch_per_s over the baseline's, `in_process_latency_vs_packet_loop=` its p50
// over the baseline's. Then the built-in fill's bandwidth against memset
// (fill_bandwidth.hpp): `fill_gb_s=... memset_gb_s=...` and `fill_vs_memset=`.
//
// The paths take turns for --rounds rounds. Output: one `path=... dispatch_per_s=...
// latency_us_p50=...` line per path (its median round), `latency_ratio=` (guest p50 over
// in-process p50) and, last,
// `dispatch_ratio=<guest_boundary dispatch_per_s / in_process dispatch_per_s>`: the share
// of the in-process throughput left through the guest boundary.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "dispatch_path.hpp"
#include "embedded_services.hpp"
#include "fill_bandwidth.hpp"
#include "guest_boundary_path.hpp"
#include "in_process_path.hpp"
#include "packet_loop_path.hpp"

int main(int argc, char** argv) {
    using namespace xenhsa;
    bench::BenchConfig config;
    std::string bin_dir = bench::own_bin_dir().string();
    CLI::App app{
        "Tiny-dispatch throughput and latency: a guest through the backend vs the "
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
    uint64_t fill_mib = 64;
    app.add_option("--fill-mib", fill_mib, "buffer of the fill bandwidth test (0: skip it)")
        ->check(CLI::Range(uint64_t{0}, uint64_t{8192}))
        ->capture_default_str();
    app.add_option("--bin-dir", bin_dir, "where xenhsa-sim and xenhsa-backend are")
        ->capture_default_str();
    CLI11_PARSE(app, argc, argv);

    try {
        // Both paths live side by side and take turns, so that load on the machine falls
        // on both alike; each path's median round is reported.
        std::vector<std::unique_ptr<bench::DispatchPath>> paths;
        const bool in_process = only.empty() || only == "in_process";
        if (in_process) {
            paths.push_back(std::make_unique<bench::InProcessPath>(hsa::SoftAgentOptions{}));
        }
        if (only.empty() || only == "guest_boundary") {
            paths.push_back(std::make_unique<bench::GuestBoundaryPath>(bin_dir));
        }
        if (in_process) {
            // Last two: the in-process path waiting as the baseline's producer does, and the
            // baseline.
            paths.push_back(std::make_unique<bench::InProcessPath>(
                hsa::SoftAgentOptions{}, bench::InProcessPath::Wait::poll));
            paths.push_back(std::make_unique<bench::PacketLoopPath>());
        }
        std::vector<std::vector<bench::PathResult>> rounds_of(paths.size());
        for (uint32_t round = 0; round < rounds; ++round) {
            for (std::size_t p = 0; p < paths.size(); ++p) {
                rounds_of[p].push_back(bench::measure(*paths[p], config));
            }
        }
        std::vector<bench::PathResult> results;
        for (auto& r : rounds_of) {
            results.push_back(bench::median(std::move(r)));
        }
        if (in_process) {
            const bench::PathResult loop = results.back();
            results.pop_back();
            const bench::PathResult own = results.back();  // in_process_polling
            results.pop_back();
            for (const auto& r : results) {
                bench::print(r);
            }
            bench::print(own);
            std::printf(
                "baseline=packet_loop dispatch_per_s=%.0f latency_us_p50=%.2f "
                "latency_us_p99=%.2f latency_us_mean=%.2f\n",
                loop.dispatches_per_s, loop.latency_us_p50, loop.latency_us_p99,
                loop.latency_us_mean);
            std::printf(
                "in_process_vs_packet_loop=%.3f\n",
                loop.dispatches_per_s > 0 ? own.dispatches_per_s / loop.dispatches_per_s : 0.0);
            std::printf("in_process_latency_vs_packet_loop=%.3f\n",
                        loop.latency_us_p50 > 0 ? own.latency_us_p50 / loop.latency_us_p50 : 0.0);
            // Every other path against the same baseline, so no figure stands without one.
            for (const auto& r : results) {
                std::printf(
                    "path_%s_vs_packet_loop=%.3f\n", r.path.c_str(),
                    loop.dispatches_per_s > 0 ? r.dispatches_per_s / loop.dispatches_per_s : 0.0);
            }
            if (fill_mib != 0) {
                const auto fill = bench::measure_fill_bandwidth(hsa::SoftAgentOptions{},
                                                                fill_mib << 20, 2 * rounds + 1);
                std::printf("fill_bytes=%llu fill_gb_s=%.2f memset_gb_s=%.2f\n",
                            static_cast<unsigned long long>(fill.bytes), fill.fill_gb_s,
                            fill.memset_gb_s);
                std::printf("fill_vs_memset=%.3f\n",
                            fill.memset_gb_s > 0 ? fill.fill_gb_s / fill.memset_gb_s : 0.0);
            }
        } else {
            for (const auto& r : results) {
                bench::print(r);
            }
        }
        if (results.size() != 2) {
            return 0;  // one path only (--only): no guest ratios
        }
        const bench::PathResult& a = results[0];
        const bench::PathResult& b = results[1];
        std::printf("rounds=%u dispatches_per_round=%u batch=%u\n", rounds,
                    config.throughput_dispatches, config.batch);
        std::printf("latency_ratio=%.3f\n",
                    a.latency_us_p50 > 0 ? b.latency_us_p50 / a.latency_us_p50 : 0.0);
        std::printf("dispatch_ratio=%.3f\n",
                    a.dispatches_per_s > 0 ? b.dispatches_per_s / a.dispatches_per_s : 0.0);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "xenhsa-bench-dispatch: %s\n", e.what());
        return 1;
    }
    return 0;
}
