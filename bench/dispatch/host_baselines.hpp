// Physical baselines a benchmark measures in its own process, beside its figures: what
// the host's kernel costs for the same kind of work with nothing of xenhsa's in between.
#ifndef XENHSA_BENCH_HOST_BASELINES_HPP
#define XENHSA_BENCH_HOST_BASELINES_HPP

#include <cstdint>
#include <vector>

namespace xenhsa::bench {

struct Percentiles {
    double p50 = 0;
    double p99 = 0;
};

// Of samples in any order.
Percentiles percentiles(std::vector<double> samples);

// A value through two eventfds between two threads and back, in us.
Percentiles eventfd_round_trip_us(uint32_t iterations);
// mmap + mlock + munlock + munmap of one 4 KiB page (what pinning host memory costs the
// host itself), in us.
Percentiles mmap_mlock_munmap_us(uint32_t iterations);

}  // namespace xenhsa::bench

#endif
