// Minimal processes the sections measure beside the product's, in the same run: one that
// spins on a core (the idle section's one-core baseline) and /bin/sleep (the memory
// section's smallest process). Killed (SIGKILL) and reaped when destroyed.
#ifndef XENHSA_BENCH_GUESTS_BASELINE_PROCESS_HPP
#define XENHSA_BENCH_GUESTS_BASELINE_PROCESS_HPP

#include <sys/types.h>

namespace xenhsa::bench {

class BaselineProcess {
public:
    // A fork of this process that only spins (no allocation, no locks).
    static BaselineProcess spinning();
    // /bin/sleep, exec'd and given time to finish loading.
    static BaselineProcess sleeping();

    BaselineProcess(BaselineProcess&& other) noexcept : pid_(other.pid_) { other.pid_ = -1; }
    BaselineProcess& operator=(BaselineProcess&&) = delete;
    BaselineProcess(const BaselineProcess&) = delete;
    BaselineProcess& operator=(const BaselineProcess&) = delete;
    ~BaselineProcess();

    [[nodiscard]] pid_t pid() const { return pid_; }

private:
    explicit BaselineProcess(pid_t pid) : pid_(pid) {}
    pid_t pid_;
};

}  // namespace xenhsa::bench

#endif
