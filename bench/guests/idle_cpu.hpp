// Section `idle`: the CPU the service side spends while guests are connected and each
// holds an idle AQL queue: the sim daemon, the backend supervisor and all its workers
// (utime + stime of /proc/<pid>/stat, reaped children included), over a window, against
// one core: a spinning process measured the same way in the same rounds.
#ifndef XENHSA_BENCH_GUESTS_IDLE_CPU_HPP
#define XENHSA_BENCH_GUESTS_IDLE_CPU_HPP

#include <chrono>
#include <cstdint>
#include <filesystem>

namespace xenhsa::bench {

struct IdleOptions {
    uint32_t guests = 4;
    uint32_t rounds = 3;
    std::chrono::milliseconds settle{500};   // before each window
    std::chrono::milliseconds window{2000};  // measured
};

// Starts its own xenhsa-sim and xenhsa-backend, connects the guests (one batch of
// dispatches each, then idle), prints the `idle_...` lines (medians of the rounds).
void run_idle_cpu(const std::filesystem::path& bin_dir, const IdleOptions& options);

}  // namespace xenhsa::bench

#endif
