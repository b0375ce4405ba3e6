#include "service_manager.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <spawned_process.hpp>
#include <stdexcept>
#include <string_view>

extern char** environ;

namespace xenhsa::testing {

namespace {

constexpr int kFirstListenFd = 3;  // SD_LISTEN_FDS_START
constexpr int kMaxFdsPerMessage = 16;

// The value of `key` in a notify message ("K=V" lines), or empty.
std::string_view value_of(std::string_view message, std::string_view key) {
    while (!message.empty()) {
        const auto eol = message.find('\n');
        const std::string_view line = message.substr(0, eol);
        if (line.size() > key.size() && line.starts_with(key) && line[key.size()] == '=') {
            return line.substr(key.size() + 1);
        }
        message = eol == std::string_view::npos ? std::string_view{} : message.substr(eol + 1);
    }
    return {};
}

// Writes "LISTEN_PID=<pid>" into `out` without allocating (the child, after fork).
void format_listen_pid(std::array<char, 32>& out, pid_t pid) {
    constexpr std::string_view kKey = "LISTEN_PID=";
    std::memcpy(out.data(), kKey.data(), kKey.size());
    char digits[16];
    int n = 0;
    do {
        digits[n++] = static_cast<char>('0' + pid % 10);
        pid /= 10;
    } while (pid > 0 && n < 15);
    std::size_t at = kKey.size();
    while (n > 0) {
        out[at++] = digits[--n];
    }
    out[at] = '\0';
}

}  // namespace

ServiceManager::ServiceManager(std::filesystem::path socket_path) : path_(std::move(socket_path)) {
    socket_.reset(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path_.c_str(), sizeof addr.sun_path - 1);
    std::filesystem::remove(path_);
    if (!socket_ ||
        ::bind(socket_.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
        throw std::runtime_error("cannot bind the notify socket " + path_.string());
    }
    // sd_notify passes credentials; accept them so that they do not fail the send.
    const int on = 1;
    (void)::setsockopt(socket_.get(), SOL_SOCKET, SO_PASSCRED, &on, sizeof on);
    reader_ = std::thread([this] { read_messages(); });
}

ServiceManager::~ServiceManager() {
    stopping_ = true;
    reader_.join();
    std::filesystem::remove(path_);
}

void ServiceManager::read_messages() {
    while (!stopping_) {
        pollfd pfd{socket_.get(), POLLIN, 0};
        if (::poll(&pfd, 1, 20) <= 0) {
            continue;
        }
        char text[4096];
        alignas(cmsghdr) char
            control[CMSG_SPACE(sizeof(int) * kMaxFdsPerMessage) + CMSG_SPACE(sizeof(ucred))];
        iovec iov{text, sizeof text - 1};
        msghdr msg{};
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control;
        msg.msg_controllen = sizeof control;
        const ssize_t n = ::recvmsg(socket_.get(), &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (n < 0) {
            continue;
        }
        std::vector<xen::sim::UniqueFd> fds;
        for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
            if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
                const std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                for (std::size_t i = 0; i < count; ++i) {
                    int fd = -1;
                    std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
                    fds.emplace_back(fd);
                }
            }
        }
        const std::string_view message(text, static_cast<std::size_t>(n));
        const std::string name(value_of(message, "FDNAME"));
        const std::lock_guard lock(mutex_);
        if (value_of(message, "FDSTORE") == "1" && fds.size() == 1 && !name.empty()) {
            kept_[name] = std::move(fds.front());
        } else if (value_of(message, "FDSTOREREMOVE") == "1") {
            kept_.erase(name);
        }
    }
}

std::vector<std::string> ServiceManager::kept() const {
    const std::lock_guard lock(mutex_);
    std::vector<std::string> names;
    for (const auto& [name, fd] : kept_) {
        names.push_back(name);
    }
    return names;
}

void ServiceManager::keep(const std::string& name, xen::sim::UniqueFd fd) {
    const std::lock_guard lock(mutex_);
    kept_[name] = std::move(fd);
}

pid_t ServiceManager::start(const std::vector<std::string>& args,
                            const std::filesystem::path& log) {
    // Everything the child needs is made before fork: it may only dup2, exec or _exit.
    std::vector<int> passed;
    std::string names;
    {
        const std::lock_guard lock(mutex_);
        for (const auto& [name, fd] : kept_) {
            // Above the fds 3.. they will be moved to.
            passed.push_back(::fcntl(fd.get(), F_DUPFD_CLOEXEC, 100));
            names += (names.empty() ? "" : ":") + name;
        }
    }
    std::vector<std::string> env_storage{"NOTIFY_SOCKET=" + path_.string()};
    if (!passed.empty()) {
        env_storage.push_back("LISTEN_FDS=" + std::to_string(passed.size()));
        env_storage.push_back("LISTEN_FDNAMES=" + names);
    }
    for (char** e = environ; *e != nullptr; ++e) {
        const std::string_view entry(*e);
        if (!entry.starts_with("NOTIFY_SOCKET=") && !entry.starts_with("LISTEN_")) {
            env_storage.emplace_back(entry);
        }
    }
    std::array<char, 32> listen_pid{};
    std::vector<char*> envp = exec_pointers(env_storage);
    if (!passed.empty()) {
        envp.insert(envp.end() - 1, listen_pid.data());  // filled in by the child
    }
    std::vector<std::string> arg_storage = args;
    std::vector<char*> argv = exec_pointers(arg_storage);
    const int log_fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid == 0) {
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != parent || log_fd < 0 || ::dup2(log_fd, STDERR_FILENO) < 0) {
            ::_exit(127);
        }
        for (std::size_t i = 0; i < passed.size(); ++i) {
            if (passed[i] < 0 || ::dup2(passed[i], kFirstListenFd + static_cast<int>(i)) < 0) {
                ::_exit(127);
            }
        }
        format_listen_pid(listen_pid, ::getpid());
        sigset_t none;
        sigemptyset(&none);
        ::sigprocmask(SIG_SETMASK, &none, nullptr);
        ::execve(argv[0], argv.data(), envp.data());
        ::_exit(127);
    }
    for (const int fd : passed) {
        if (fd >= 0) {
            ::close(fd);
        }
    }
    if (log_fd >= 0) {
        ::close(log_fd);
    }
    return pid > 0 ? pid : -1;
}

}  // namespace xenhsa::testing
