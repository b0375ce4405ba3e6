// Section `memory`: RSS and PSS (/proc/<pid>/smaps_rollup) of the backend's worker with one
// guest connected and idle (holding an AQL queue), of the supervisor and of the sim
// daemon, against /bin/sleep, the smallest process, measured in the same run.
#ifndef XENHSA_BENCH_GUESTS_PROCESS_MEMORY_HPP
#define XENHSA_BENCH_GUESTS_PROCESS_MEMORY_HPP

#include <cstdint>
#include <filesystem>

namespace xenhsa::bench {

struct MemoryOptions {
    uint32_t rounds = 3;  // readings, 100 ms apart (medians reported)
};

// Starts its own xenhsa-sim and xenhsa-backend, connects one guest, prints one
// `process=...` line per process, the baseline and `worker_pss_kib=... baseline_pss_kib=`.
void run_process_memory(const std::filesystem::path& bin_dir, const MemoryOptions& options);

}  // namespace xenhsa::bench

#endif
