// Section `aggregate`: tiny-dispatch throughput of several guests at once, each its own
// domain, device, worker and AQL queue, each driven by its own thread of this process,
// against the minimal packet loop (bench/dispatch/packet_loop_path.hpp) in the same rounds.
#ifndef XENHSA_BENCH_GUESTS_AGGREGATE_HPP
#define XENHSA_BENCH_GUESTS_AGGREGATE_HPP

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <vector>

namespace xenhsa::bench {

struct AggregateOptions {
    std::vector<uint32_t> guests{1, 4, 16};
    uint32_t rounds = 3;
    std::chrono::milliseconds duration{1000};  // measured per guest count and round
    uint32_t batch = 64;                       // dispatches per completion wait
};

// Starts its own xenhsa-sim and xenhsa-backend; each round makes a fresh set of guests
// per count (and lets the backend reap their workers before the next). Prints
// `guests=N aggregate_dispatch_per_s=...` per count, the baseline and the ratios.
void run_aggregate(const std::filesystem::path& bin_dir, const AggregateOptions& options);

}  // namespace xenhsa::bench

#endif
