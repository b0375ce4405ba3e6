#include "dispatch_path.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <numeric>

namespace xenhsa::bench {

namespace {

using Clock = std::chrono::steady_clock;

double micros(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

double percentile(std::vector<double> sorted, double p) {
    if (sorted.empty()) {
        return 0;
    }
    const auto index = static_cast<size_t>(p * static_cast<double>(sorted.size() - 1));
    return sorted[index];
}

}  // namespace

PathResult measure(DispatchPath& path, const BenchConfig& config) {
    PathResult result;
    result.path = std::string(path.name());
    path.start_round();
    for (uint32_t i = 0; i < config.warmup; ++i) {
        path.dispatch_and_wait();
    }

    std::vector<double> latencies;
    latencies.reserve(config.latency_iterations);
    for (uint32_t i = 0; i < config.latency_iterations; ++i) {
        const auto start = Clock::now();
        path.dispatch_and_wait();
        latencies.push_back(micros(Clock::now() - start));
    }
    std::sort(latencies.begin(), latencies.end());
    result.latency_us_p50 = percentile(latencies, 0.50);
    result.latency_us_p99 = percentile(latencies, 0.99);
    if (!latencies.empty()) {
        result.latency_us_mean = std::accumulate(latencies.begin(), latencies.end(), 0.0) /
                                 static_cast<double>(latencies.size());
    }

    const uint32_t batch = std::max<uint32_t>(config.batch, 1);
    const uint32_t batches = std::max<uint32_t>(config.throughput_dispatches / batch, 1);
    const auto start = Clock::now();
    for (uint32_t i = 0; i < batches; ++i) {
        path.dispatch_batch_and_wait(batch);
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    result.dispatches_per_s = static_cast<double>(batches) * batch / seconds;
    path.end_round();
    return result;
}

PathResult median(std::vector<PathResult> rounds) {
    if (rounds.empty()) {
        return {};
    }
    std::sort(rounds.begin(), rounds.end(), [](const PathResult& x, const PathResult& y) {
        return x.dispatches_per_s < y.dispatches_per_s;
    });
    return rounds[rounds.size() / 2];
}

void print(const PathResult& r) {
    std::printf(
        "path=%s dispatch_per_s=%.0f latency_us_p50=%.1f latency_us_p99=%.1f "
        "latency_us_mean=%.1f\n",
        r.path.c_str(), r.dispatches_per_s, r.latency_us_p50, r.latency_us_p99, r.latency_us_mean);
}

}  // namespace xenhsa::bench
