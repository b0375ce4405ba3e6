#include "child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <stdexcept>

#include "spawned_process.hpp"

namespace xenhsa::testing {

namespace {

void make_pipe(xen::sim::UniqueFd (&ends)[2]) {
    int fds[2] = {-1, -1};
    if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
    ends[0].reset(fds[0]);
    ends[1].reset(fds[1]);
}

extern "C" void fault_exit(int sig) {
    ::_exit(sig == SIGBUS ? ChildProcess::kBus : ChildProcess::kSegv);
}

}  // namespace

Link::Link() {
    make_pipe(to_child_);
    make_pipe(to_parent_);
}

void Link::keep_child_side() {
    to_child_[1].reset();
    to_parent_[0].reset();
    in_ = to_child_[0].get();
    out_ = to_parent_[1].get();
}

void Link::keep_parent_side() {
    to_child_[0].reset();
    to_parent_[1].reset();
    in_ = to_parent_[0].get();
    out_ = to_child_[1].get();
}

bool Link::send(uint64_t value) {
    ssize_t n = 0;
    do {
        n = ::write(out_, &value, sizeof value);
    } while (n < 0 && errno == EINTR);
    return n == sizeof value;
}

std::optional<uint64_t> Link::receive(std::chrono::milliseconds timeout) {
    pollfd pfd{in_, POLLIN, 0};
    int ready = 0;
    do {
        ready = ::poll(&pfd, 1, static_cast<int>(timeout.count()));
    } while (ready < 0 && errno == EINTR);
    if (ready <= 0) return std::nullopt;
    uint64_t value = 0;
    ssize_t n = 0;
    do {
        n = ::read(in_, &value, sizeof value);
    } while (n < 0 && errno == EINTR);
    if (n != sizeof value) return std::nullopt;
    return value;
}

ChildProcess ChildProcess::spawn(const std::function<int(Link&)>& body) {
    ChildProcess child;
    std::fflush(nullptr);
    child.pid_ = ::fork();
    if (child.pid_ < 0) throw std::runtime_error("fork failed");
    if (child.pid_ == 0) {
        child.link_.keep_child_side();
        int code = kThrew;
        try {
            code = body(child.link_);
        } catch (...) {
        }
        std::fflush(nullptr);
        ::_exit(code);
    }
    child.link_.keep_parent_side();
    return child;
}

ChildProcess::ChildProcess(ChildProcess&& o) noexcept
    : pid_(std::exchange(o.pid_, -1)), link_(std::move(o.link_)) {}

ChildProcess::~ChildProcess() {
    if (pid_ > 0) {
        ::kill(pid_, SIGKILL);
        int status = 0;
        while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
        }
    }
}

std::optional<int> ChildProcess::wait(std::chrono::milliseconds timeout) {
    if (pid_ <= 0) return std::nullopt;
    const auto status = wait_for_exit(pid_, timeout);
    if (status) pid_ = -1;
    return status;
}

void ChildProcess::kill(int sig) {
    if (pid_ > 0) ::kill(pid_, sig);
}

void install_fault_exits() {
    struct sigaction sa {};
    sa.sa_handler = fault_exit;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGSEGV, &sa, nullptr);
    ::sigaction(SIGBUS, &sa, nullptr);
}

std::string describe_status(std::optional<int> status) {
    if (!status) return "still running (timeout)";
    if (WIFEXITED(*status)) return "exited with " + std::to_string(WEXITSTATUS(*status));
    if (WIFSIGNALED(*status)) return "killed by signal " + std::to_string(WTERMSIG(*status));
    return "wait status " + std::to_string(*status);
}

bool exited_with(std::optional<int> status, int code) {
    return status && WIFEXITED(*status) && WEXITSTATUS(*status) == code;
}

}  // namespace xenhsa::testing
