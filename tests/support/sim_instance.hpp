// A real xenhsa-sim daemon for one test: started in a fresh temp dir, stopped and removed
// at the end.
#ifndef XENHSA_TESTS_SUPPORT_SIM_INSTANCE_HPP
#define XENHSA_TESTS_SUPPORT_SIM_INSTANCE_HPP

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

namespace xenhsa::testing {

class SimInstance {  // starts the real `xenhsa-sim` binary in a fresh temp dir
public:
    // Waits (up to 10 s) until the socket accepts. On failure it throws, which fails the
    // running test (and leaves nothing behind).
    // `extra`: more of xenhsa-sim's options (--grant-frames N, ...).
    static SimInstance start(const std::vector<std::string>& extra = {});

    SimInstance(SimInstance&& o) noexcept;
    SimInstance& operator=(SimInstance&& o) noexcept;
    SimInstance(const SimInstance&) = delete;
    SimInstance& operator=(const SimInstance&) = delete;
    // SIGTERM the daemon, wait for it (a non-zero exit, e.g. a sanitizer report, fails the
    // running test), remove the dir.
    ~SimInstance();

    [[nodiscard]] const std::filesystem::path& dir() const { return dir_; }
    [[nodiscard]] pid_t pid() const { return pid_; }

private:
    SimInstance() = default;
    void stop() noexcept;

    std::filesystem::path dir_;
    pid_t pid_ = -1;
};

}  // namespace xenhsa::testing

// The contract (helper-notes/sim-api.md) names it unqualified.
using xenhsa::testing::SimInstance;

#endif
