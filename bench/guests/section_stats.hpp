// Small helpers the sections share: medians, ratios, timing.
#ifndef XENHSA_BENCH_GUESTS_SECTION_STATS_HPP
#define XENHSA_BENCH_GUESTS_SECTION_STATS_HPP

#include <algorithm>
#include <chrono>
#include <vector>

namespace xenhsa::bench {

using Clock = std::chrono::steady_clock;

inline double micros(Clock::duration d) {
    return std::chrono::duration<double, std::micro>(d).count();
}

inline double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

inline double median_of(std::vector<double> v) {
    if (v.empty()) {
        return 0;
    }
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

// a / b, 0 when b is not positive.
inline double ratio(double a, double b) { return b > 0 ? a / b : 0.0; }

}  // namespace xenhsa::bench

#endif
