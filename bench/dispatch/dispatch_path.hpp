// One way to get a tiny kernel dispatch to the GPU agent and learn that it completed.
// The benchmark measures every path the same way and compares them.
#ifndef XENHSA_BENCH_DISPATCH_PATH_HPP
#define XENHSA_BENCH_DISPATCH_PATH_HPP

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace xenhsa::bench {

class DispatchPath {
public:
    virtual ~DispatchPath() = default;
    [[nodiscard]] virtual std::string_view name() const = 0;
    // Around each measured round: a path may keep a polling thread only while measured.
    virtual void start_round() {}
    virtual void end_round() {}
    // One dispatch (fill 64 bytes), then wait for its completion signal.
    virtual void dispatch_and_wait() = 0;
    // `count` dispatches on one counted completion signal, then wait for all of them.
    virtual void dispatch_batch_and_wait(uint32_t count) = 0;
};

struct PathResult {
    std::string path;
    double dispatches_per_s = 0;
    double latency_us_p50 = 0;
    double latency_us_p99 = 0;
    double latency_us_mean = 0;
};

struct BenchConfig {
    uint32_t latency_iterations = 2000;
    uint32_t throughput_dispatches = 50000;
    uint32_t batch = 64;
    uint32_t warmup = 100;
};

// Submit-to-signal latency of single dispatches, and throughput of batches.
PathResult measure(DispatchPath& path, const BenchConfig& config);
// The round with the median throughput (its latencies with it).
PathResult median(std::vector<PathResult> rounds);
// key=value lines, one per measurement.
void print(const PathResult& result);

}  // namespace xenhsa::bench

#endif
