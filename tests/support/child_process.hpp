// A forked child process for tests that need another domain's process (a guest, a mapper
// to kill): the child runs a function and _exits with its return value; a Link of two
// pipes carries small values both ways. In the child, use no gtest assertions: return a
// nonzero code (CHILD_CHECK) instead, which the parent asserts on.
#ifndef XENHSA_TESTS_SUPPORT_CHILD_PROCESS_HPP
#define XENHSA_TESTS_SUPPORT_CHILD_PROCESS_HPP

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <xenhsa/xen/sim/unique_fd.hpp>

namespace xenhsa::testing {

using namespace std::chrono_literals;

class Link {
public:
    Link();
    // Sends one value to the other side.
    bool send(uint64_t value);
    // The next value from the other side; nullopt on timeout or when it is gone.
    std::optional<uint64_t> receive(std::chrono::milliseconds timeout = 10s);

private:
    friend class ChildProcess;
    void keep_child_side();
    void keep_parent_side();

    xen::sim::UniqueFd to_child_[2];
    xen::sim::UniqueFd to_parent_[2];
    int in_ = -1;
    int out_ = -1;
};

class ChildProcess {
public:
    // The child's exit code when its function threw.
    static constexpr int kThrew = 101;
    // Exit codes of install_fault_exits().
    static constexpr int kSegv = 42;
    static constexpr int kBus = 43;

    static ChildProcess spawn(const std::function<int(Link&)>& body);
    ChildProcess(ChildProcess&& o) noexcept;
    ChildProcess& operator=(ChildProcess&&) = delete;
    ChildProcess(const ChildProcess&) = delete;
    ChildProcess& operator=(const ChildProcess&) = delete;
    ~ChildProcess();  // SIGKILLs and reaps a child still running

    [[nodiscard]] pid_t pid() const { return pid_; }
    Link& link() { return link_; }
    // Waits for the child to end; its wait status, or nullopt on timeout.
    std::optional<int> wait(std::chrono::milliseconds timeout = 10s);
    void kill(int sig);

private:
    ChildProcess() = default;
    pid_t pid_ = -1;
    Link link_;
};

// In a child: SIGSEGV and SIGBUS end the process with kSegv / kBus (also under ASan,
// whose own handler would report and exit 1).
void install_fault_exits();

// "exited normally with `code`", for EXPECT_TRUE with a readable message.
std::string describe_status(std::optional<int> status);
bool exited_with(std::optional<int> status, int code);

}  // namespace xenhsa::testing

using xenhsa::testing::ChildProcess;

// In a child's function: return a code naming the line when `cond` is false.
#define CHILD_CHECK(cond)                                                                        \
    do {                                                                                         \
        if (!(cond)) {                                                                           \
            std::fprintf(stderr, "child check failed: %s (%s:%d)\n", #cond, __FILE__, __LINE__); \
            return 1 + (__LINE__ % 200);                                                         \
        }                                                                                        \
    } while (0)

#endif
