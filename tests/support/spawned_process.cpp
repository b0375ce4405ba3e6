#include "spawned_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <sstream>

extern char** environ;

namespace xenhsa::testing {

bool process_gone(pid_t pid) { return ::kill(pid, 0) != 0 && errno == ESRCH; }

std::vector<char*> exec_pointers(std::vector<std::string>& strings) {
    std::vector<char*> pointers;
    pointers.reserve(strings.size() + 1);
    for (auto& s : strings) {
        pointers.push_back(s.data());
    }
    pointers.push_back(nullptr);
    return pointers;
}

pid_t spawn(const std::vector<std::string>& args, int stdout_fd,
            const std::vector<std::string>& extra_env) {
    if (args.empty()) {
        return -1;
    }
    // Everything the child needs is built before fork: it may only exec or _exit.
    std::vector<std::string> env_storage(extra_env);
    for (char** e = environ; *e != nullptr; ++e) {
        env_storage.emplace_back(*e);
    }
    std::vector<char*> envp = exec_pointers(env_storage);
    std::vector<std::string> arg_storage = args;
    std::vector<char*> argv = exec_pointers(arg_storage);

    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid == 0) {
        // Dies with the test, whatever happens to it.
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != parent) {
            ::_exit(127);
        }
        sigset_t none;
        sigemptyset(&none);
        ::sigprocmask(SIG_SETMASK, &none, nullptr);
        if (stdout_fd >= 0 && ::dup2(stdout_fd, STDOUT_FILENO) < 0) {
            ::_exit(127);
        }
        ::execve(argv[0], argv.data(), envp.data());
        ::_exit(127);
    }
    return pid > 0 ? pid : -1;
}

std::optional<int> wait_for_exit(pid_t pid, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        int status = 0;
        const pid_t r = ::waitpid(pid, &status, WNOHANG);
        if (r == pid) {
            return status;
        }
        if ((r < 0 && errno != EINTR) || std::chrono::steady_clock::now() >= deadline) {
            return std::nullopt;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
}

Process::Process(const std::vector<std::string>& args, int stdout_fd,
                 const std::vector<std::string>& extra_env)
    : pid_(spawn(args, stdout_fd, extra_env)) {}

Process::~Process() {
    if (pid_ > 0) {
        ::kill(pid_, SIGKILL);
        (void)wait(kPatience);
    }
}

void Process::signal(int sig) const {
    if (pid_ > 0) {
        ::kill(pid_, sig);
    }
}

std::optional<int> Process::wait(std::chrono::milliseconds timeout) {
    if (pid_ <= 0) {
        return std::nullopt;
    }
    const auto status = wait_for_exit(pid_, timeout);
    if (status) {
        pid_ = -1;
    }
    return status;
}

CapturedProcess::Pipe CapturedProcess::make_pipe() {
    int fds[2] = {-1, -1};
    if (::pipe2(fds, O_CLOEXEC) != 0) {
        return {};
    }
    return {xen::sim::UniqueFd(fds[0]), xen::sim::UniqueFd(fds[1])};
}

CapturedProcess::CapturedProcess(const std::vector<std::string>& args)
    : CapturedProcess(args, make_pipe()) {}

// The write end is closed when `pipe` goes: the child holds the only copy, so EOF means
// the child (and whatever inherited its stdout) is done.
CapturedProcess::CapturedProcess(const std::vector<std::string>& args, Pipe pipe)
    : read_end_(std::move(pipe.read)), process_(args, pipe.write.get()), eof_(!read_end_) {}

bool CapturedProcess::read_some(std::chrono::milliseconds timeout) {
    if (eof_) {
        return false;
    }
    pollfd pfd{read_end_.get(), POLLIN, 0};
    const int ready = ::poll(&pfd, 1, static_cast<int>(std::max<int64_t>(timeout.count(), 0)));
    if (ready < 0 && errno != EINTR) {
        eof_ = true;
    } else if (ready > 0) {
        char buf[4096];
        const ssize_t n = ::read(read_end_.get(), buf, sizeof buf);
        if (n > 0) {
            out_.append(buf, static_cast<std::size_t>(n));
        } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
            eof_ = true;
        }
    }
    return !eof_;
}

std::optional<std::string> CapturedProcess::wait_for_line(std::string_view prefix,
                                                          std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::size_t scanned = 0;  // the complete lines before this offset did not match
    for (bool first = true;; first = false) {
        for (std::size_t nl = out_.find('\n', scanned); nl != std::string::npos;
             nl = out_.find('\n', scanned)) {
            const std::string_view line(out_.data() + scanned, nl - scanned);
            scanned = nl + 1;
            if (line.substr(0, prefix.size()) == prefix) {
                return std::string(line);
            }
        }
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (eof_ || (left.count() <= 0 && !first)) {
            return std::nullopt;  // a zero timeout still reads what is there once
        }
        read_some(std::clamp(left, std::chrono::milliseconds(0), std::chrono::milliseconds(100)));
    }
}

std::optional<int> CapturedProcess::wait(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!eof_) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
            return std::nullopt;
        }
        read_some(std::min(left, std::chrono::milliseconds(100)));
    }
    // Its stdout is closed: it is exiting (a sanitizer's exit can take a moment).
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    return process_.wait(std::max(left, std::chrono::milliseconds(5000)));
}

bool Output::ok() const { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }

Output run(const std::vector<std::string>& args, std::chrono::milliseconds timeout) {
    CapturedProcess p(args);
    Output result;
    result.status = p.wait(timeout).value_or(-1);
    result.out = p.output();
    return result;
}

std::vector<std::string> with_backend_test_args(std::vector<std::string> args) {
    const char* extra = std::getenv("XENHSA_TEST_BACKEND_ARGS");
    std::istringstream words(extra != nullptr ? extra : "");
    for (std::string word; words >> word;) {
        args.push_back(word);
    }
    return args;
}

}  // namespace xenhsa::testing
