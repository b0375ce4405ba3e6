// Round-trip latencies and their summary: what every figure of xenhsa-bench-ring is.
#ifndef XENHSA_BENCH_RING_ROUND_TRIP_HPP
#define XENHSA_BENCH_RING_ROUND_TRIP_HPP

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace xenhsa::bench {

struct RoundTrips {
    std::string name;
    double us_p50 = 0;
    double us_p99 = 0;
    double us_mean = 0;
};

// Times `iterations` calls of `once` (after `warmup` untimed ones).
RoundTrips time_round_trips(std::string name, uint32_t iterations, uint32_t warmup,
                            const std::function<void()>& once);

// Summarises samples in nanoseconds.
RoundTrips summarise(std::string name, std::vector<uint64_t> samples_ns);

// The round with the median p50.
RoundTrips median(std::vector<RoundTrips> rounds);

// `name_us_p50=... name_us_p99=... name_us_mean=...`, prefixed by `prefix`.
void print(const char* prefix, const RoundTrips& r);

}  // namespace xenhsa::bench

#endif
