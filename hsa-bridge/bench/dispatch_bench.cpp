// xenhsa-bench-dispatch: throughput and submit-to-signal latency of tiny dispatches
// (fill 64 bytes) on the software GPU agent.
//
// Paths measured in one run:
//   in_process      the agent in this process, fed directly (in_process_path.hpp)
//   guest_boundary  TODO(issue #5, item 7): guest library -> request ring -> backend
//                   worker -> agent, once the backend worker exists. Add a DispatchPath
//                   for it next to InProcessPath and append it to `paths` below; the
//                   ratio line then prints by itself.
//
// Output: one `path=... dispatch_per_s=... latency_us_p50=...` line per path, and,
// when both paths ran, `dispatch_ratio=<guest_boundary dispatch_per_s / in_process
// dispatch_per_s>` (the share of the in-process throughput left through the boundary).
#include "dispatch_path.hpp"
#include "in_process_path.hpp"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <memory>
#include <vector>

int main(int argc, char **argv)
{
    using namespace xenhsa;
    bench::BenchConfig config;
    hsa::SoftAgentOptions agent;
    CLI::App app{"Tiny-dispatch throughput and latency on the software GPU agent"};
    app.add_option("--latency-iterations", config.latency_iterations,
                   "single dispatches timed for latency");
    app.add_option("--dispatches", config.throughput_dispatches,
                   "dispatches submitted for throughput");
    app.add_option("--batch", config.batch, "dispatches per completion wait (throughput)");
    app.add_option("--workers", agent.worker_threads, "agent worker threads");
    CLI11_PARSE(app, argc, argv);

    try {
        std::vector<std::unique_ptr<bench::DispatchPath>> paths;
        paths.push_back(std::make_unique<bench::InProcessPath>(agent));
        // TODO(issue #5, item 7): paths.push_back(guest-boundary path) when the backend
        // worker can serve a guest in-process (xenhsa-sim); measure it in this same run.

        std::vector<bench::PathResult> results;
        for (auto &path : paths) {
            results.push_back(bench::measure(*path, config));
            bench::print(results.back());
        }
        const bench::PathResult *in_process = nullptr;
        const bench::PathResult *guest = nullptr;
        for (const auto &r : results) {
            if (r.path == "in_process") {
                in_process = &r;
            } else if (r.path == "guest_boundary") {
                guest = &r;
            }
        }
        if (in_process != nullptr && guest != nullptr && in_process->dispatches_per_s > 0) {
            std::printf("dispatch_ratio=%.3f\n",
                        guest->dispatches_per_s / in_process->dispatches_per_s);
        }
    } catch (const std::exception &e) {
        std::fprintf(stderr, "xenhsa-bench-dispatch: %s\n", e.what());
        return 1;
    }
    return 0;
}
