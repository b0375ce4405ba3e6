// What /proc says about a process: its CPU time (utime + stime of /proc/<pid>/stat, all
// its threads; with cutime + cstime, its children reaped so far; and from schedstat, in
// nanoseconds), its children, and its memory (RSS and PSS of /proc/<pid>/smaps_rollup).
#ifndef XENHSA_BENCH_GUESTS_PROC_STATS_HPP
#define XENHSA_BENCH_GUESTS_PROC_STATS_HPP

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace xenhsa::bench {

// CPU seconds of `pid` (all threads), plus those of its reaped children when
// `with_reaped_children`; nullopt when the process is gone.
std::optional<double> cpu_seconds(pid_t pid, bool with_reaped_children);

// Time on CPU of the live threads of `pid` (/proc/<pid>/task/*/schedstat, nanoseconds:
// finer than stat's clock ticks, but without reaped children); nullopt when gone.
std::optional<double> schedstat_seconds(pid_t pid);

// The live processes whose parent is `parent`.
std::vector<pid_t> children_of(pid_t parent);

// Its command line, arguments separated by spaces ("" when gone).
std::string command_line(pid_t pid);

struct MemoryUse {
    uint64_t rss_kib = 0;
    uint64_t pss_kib = 0;
};

// From /proc/<pid>/smaps_rollup; nullopt when the process is gone or the file unreadable.
std::optional<MemoryUse> memory_use(pid_t pid);

}  // namespace xenhsa::bench

#endif
