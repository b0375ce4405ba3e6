// Section `fairness` (issue 25, item 3): one guest's copy throughput alone and while another
// guest keeps 64 SDMA queues busy with the worst rectangle copy a packet can describe
// (16-byte elements, 16384 x 16384 x 2048, rows overlapping: 8 TiB of memmove over 1 MiB).
// The victim copies `copy_bytes` through its own SDMA queue and waits for a fence, again
// and again over a window; its rate loaded over its rate alone is the figure (target
// >= 0.4 on a 2-core machine). Baseline: memcpy of as many bytes on one thread here.
// Also: the CPU share of both workers while loaded, whether the workers have CPU groups of
// their own (backend/service cpu_groups.hpp), and how long destroying the 64 queues takes.
#ifndef XENHSA_BENCH_GUESTS_FAIRNESS_HPP
#define XENHSA_BENCH_GUESTS_FAIRNESS_HPP

#include <chrono>
#include <cstdint>
#include <filesystem>

namespace xenhsa::bench {

struct FairnessOptions {
    uint32_t rounds = 3;
    uint32_t hog_queues = 64;
    uint64_t copy_bytes = uint64_t{4} << 20;
    std::chrono::milliseconds window{1000};
};

// Starts its own xenhsa-sim and xenhsa-backend; prints the `fairness_...` lines (medians).
void run_fairness(const std::filesystem::path& bin_dir, const FairnessOptions& options);

}  // namespace xenhsa::bench

#endif
