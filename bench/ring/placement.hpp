// Where the two ends of a round trip run. An event-driven round trip between two
// processes is bimodal when the scheduler may place them freely: a wake-up on the
// waker's own CPU costs a few microseconds, one on another CPU that sits idle costs the
// CPU's exit from its idle state (tens of microseconds in a VM). So every event-driven
// figure is measured in both placements, each end pinned:
//   same_cpu   both ends on one CPU;
//   cross_cpu  each end on its own CPU (where a polling end must be).
#ifndef XENHSA_BENCH_RING_PLACEMENT_HPP
#define XENHSA_BENCH_RING_PLACEMENT_HPP

#include <sys/types.h>

#include <string>
#include <vector>

namespace xenhsa::bench {

struct Placement {
    std::string name;
    int own_cpu = 0;   // this process
    int peer_cpu = 0;  // the other end: the baseline's child, the guest's worker
};

// same_cpu, and cross_cpu when this process may run on two CPUs or more.
std::vector<Placement> placements();

// Pins every thread of `pid` (0: this process) to `cpu`. Throws std::system_error.
void pin_process(pid_t pid, int cpu);

// The child processes of `pid` (from /proc/<pid>/task/*/children).
std::vector<pid_t> children_of(pid_t pid);

}  // namespace xenhsa::bench

#endif
