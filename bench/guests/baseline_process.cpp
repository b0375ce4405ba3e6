#include "baseline_process.hpp"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <system_error>
#include <thread>

extern char** environ;

namespace xenhsa::bench {

BaselineProcess BaselineProcess::spinning() {
    const pid_t pid = fork();
    if (pid < 0) {
        throw std::system_error(errno, std::generic_category(), "fork");
    }
    if (pid == 0) {
        volatile uint64_t spins = 0;
        for (;;) {
            spins = spins + 1;
        }
    }
    return BaselineProcess(pid);
}

BaselineProcess BaselineProcess::sleeping() {
    char path[] = "/bin/sleep";
    char seconds[] = "3600";
    char* argv[] = {path, seconds, nullptr};
    pid_t pid = -1;
    const int rc = posix_spawn(&pid, path, nullptr, nullptr, argv, environ);
    if (rc != 0) {
        throw std::system_error(rc, std::generic_category(), "spawn /bin/sleep");
    }
    // Past its dynamic loading: what is left is its steady state.
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    return BaselineProcess(pid);
}

BaselineProcess::~BaselineProcess() {
    if (pid_ > 0) {
        kill(pid_, SIGKILL);
        while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
        }
    }
}

}  // namespace xenhsa::bench
