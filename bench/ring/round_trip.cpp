#include "round_trip.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <numeric>

namespace xenhsa::bench {

RoundTrips time_round_trips(std::string name, uint32_t iterations, uint32_t warmup,
                            const std::function<void()>& once) {
    using Clock = std::chrono::steady_clock;
    for (uint32_t i = 0; i < warmup; ++i) {
        once();
    }
    std::vector<uint64_t> samples;
    samples.reserve(iterations);
    for (uint32_t i = 0; i < iterations; ++i) {
        const auto start = Clock::now();
        once();
        samples.push_back(static_cast<uint64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count()));
    }
    return summarise(std::move(name), std::move(samples));
}

RoundTrips summarise(std::string name, std::vector<uint64_t> samples_ns) {
    RoundTrips r;
    r.name = std::move(name);
    if (samples_ns.empty()) {
        return r;
    }
    std::sort(samples_ns.begin(), samples_ns.end());
    const auto at = [&](double q) {
        return static_cast<double>(samples_ns[static_cast<std::size_t>(
                   q * static_cast<double>(samples_ns.size() - 1))]) /
               1000.0;
    };
    r.us_p50 = at(0.50);
    r.us_p99 = at(0.99);
    r.us_mean =
        static_cast<double>(std::accumulate(samples_ns.begin(), samples_ns.end(), uint64_t{0})) /
        static_cast<double>(samples_ns.size()) / 1000.0;
    return r;
}

RoundTrips median(std::vector<RoundTrips> rounds) {
    if (rounds.empty()) {
        return {};
    }
    std::sort(rounds.begin(), rounds.end(),
              [](const RoundTrips& a, const RoundTrips& b) { return a.us_p50 < b.us_p50; });
    return rounds[rounds.size() / 2];
}

void print(const char* prefix, const RoundTrips& r) {
    std::printf("%s%s us_p50=%.2f us_p99=%.2f us_mean=%.2f\n", prefix, r.name.c_str(), r.us_p50,
                r.us_p99, r.us_mean);
}

}  // namespace xenhsa::bench
