// Binaries a test starts by path (xenhsa-backend, xenhsa-ctl, xenhsa-guest): a Process is
// SIGKILLed and reaped if it still runs when it goes out of scope, and dies with the test
// process (PR_SET_PDEATHSIG), so nothing outlives a test. CapturedProcess also collects
// its stdout as it goes; run() runs a binary to its end.
#ifndef XENHSA_TESTS_SUPPORT_SPAWNED_PROCESS_HPP
#define XENHSA_TESTS_SUPPORT_SPAWNED_PROCESS_HPP

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>
#include <xenhsa/xen/sim/unique_fd.hpp>

namespace xenhsa::testing {

// Generous: every process runs under ASan, and ctest runs tests in parallel.
inline constexpr std::chrono::milliseconds kPatience{30000};

// Polls `pred` every 10 ms until it holds (true) or `timeout` passed (false).
template <class Pred>
bool eventually(Pred&& pred, std::chrono::milliseconds timeout = kPatience) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!pred()) {
        if (std::chrono::steady_clock::now() >= deadline) {
            return false;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return true;
}

// True once `pid` no longer exists (reaped, or never was).
bool process_gone(pid_t pid);

// execve's view of `strings`: a pointer to each, then nullptr (the strings must outlive it).
std::vector<char*> exec_pointers(std::vector<std::string>& strings);

// Starts args[0] (a path) with args; stdout goes to `stdout_fd` when >= 0; `extra_env`
// ("K=V") comes before the inherited environment. The child is SIGKILLed when the calling
// thread ends (PR_SET_PDEATHSIG). Its pid, or -1.
pid_t spawn(const std::vector<std::string>& args, int stdout_fd = -1,
            const std::vector<std::string>& extra_env = {});
// Reaps the child `pid` within `timeout`: its wait status, or nullopt (timeout, or not
// our child).
std::optional<int> wait_for_exit(pid_t pid, std::chrono::milliseconds timeout);

class Process {
public:
    // spawn(); pid() is -1 if it could not start.
    explicit Process(const std::vector<std::string>& args, int stdout_fd = -1,
                     const std::vector<std::string>& extra_env = {});
    // A child started otherwise (e.g. ServiceManager::start), now owned.
    explicit Process(pid_t child) : pid_(child) {}
    Process(const Process&) = delete;
    Process& operator=(const Process&) = delete;
    ~Process();  // SIGKILL and reap, if it still runs

    [[nodiscard]] pid_t pid() const { return pid_; }
    void signal(int sig) const;
    // The wait status, or nullopt on timeout (or if it never started).
    std::optional<int> wait(std::chrono::milliseconds timeout);

private:
    pid_t pid_ = -1;
};

// A Process whose stdout the test reads while it runs.
class CapturedProcess {
public:
    explicit CapturedProcess(const std::vector<std::string>& args);
    CapturedProcess(const CapturedProcess&) = delete;
    CapturedProcess& operator=(const CapturedProcess&) = delete;

    [[nodiscard]] pid_t pid() const { return process_.pid(); }
    void signal(int sig) const { process_.signal(sig); }
    // Reads stdout until a complete line starting with `prefix` arrived, the process
    // closed its stdout, or `timeout` passed; that line (without '\n'), or nullopt. A zero
    // timeout looks at what is already there.
    std::optional<std::string> wait_for_line(std::string_view prefix,
                                             std::chrono::milliseconds timeout = kPatience);
    // Reads stdout to its end, then reaps: the wait status, or nullopt on timeout.
    std::optional<int> wait(std::chrono::milliseconds timeout = kPatience);
    // Everything read so far.
    [[nodiscard]] const std::string& output() const { return out_; }

private:
    struct Pipe {
        xen::sim::UniqueFd read;
        xen::sim::UniqueFd write;
    };
    static Pipe make_pipe();
    CapturedProcess(const std::vector<std::string>& args, Pipe pipe);
    // One poll + read; false once stdout is closed (or on error).
    bool read_some(std::chrono::milliseconds timeout);

    xen::sim::UniqueFd read_end_;
    Process process_;
    std::string out_;
    bool eof_ = false;
};

struct Output {
    int status = -1;                // wait status; -1 when it did not end in time
    std::string out;                // stdout
    [[nodiscard]] bool ok() const;  // exited with 0
};

// Runs a binary to its end (SIGKILLed after `timeout`) and collects its stdout.
Output run(const std::vector<std::string>& args, std::chrono::milliseconds timeout = kPatience);

// `args` (a test's xenhsa-backend command line) followed by the words of
// XENHSA_TEST_BACKEND_ARGS: e.g. `--worker-seccomp off` where the tests run under qemu-user,
// which cannot load a seccomp filter (script/cross arm64 --labels sim).
std::vector<std::string> with_backend_test_args(std::vector<std::string> args);

}  // namespace xenhsa::testing

#endif
