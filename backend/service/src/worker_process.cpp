#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <xenhsa/backend/service/control_messages.hpp>
#include <xenhsa/backend/service/worker_process.hpp>

extern char** environ;

namespace xenhsa::backend::service {

namespace {

// Closes a raw fd unless released.
class Fd {
public:
    explicit Fd(int fd = -1) noexcept : fd_(fd) {}
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    ~Fd() { reset(); }
    [[nodiscard]] int get() const noexcept { return fd_; }
    int release() noexcept { return std::exchange(fd_, -1); }
    void reset(int fd = -1) noexcept {
        if (fd_ >= 0) {
            ::close(fd_);
        }
        fd_ = fd;
    }

private:
    int fd_;
};

class SpawnActions {
public:
    SpawnActions() { ok_ = posix_spawn_file_actions_init(&fa_) == 0; }
    ~SpawnActions() {
        if (ok_) {
            posix_spawn_file_actions_destroy(&fa_);
        }
    }
    SpawnActions(const SpawnActions&) = delete;
    SpawnActions& operator=(const SpawnActions&) = delete;
    [[nodiscard]] bool ok() const noexcept { return ok_; }
    posix_spawn_file_actions_t* get() noexcept { return &fa_; }

private:
    posix_spawn_file_actions_t fa_{};
    bool ok_ = false;
};

class SpawnAttr {
public:
    SpawnAttr() { ok_ = posix_spawnattr_init(&attr_) == 0; }
    ~SpawnAttr() {
        if (ok_) {
            posix_spawnattr_destroy(&attr_);
        }
    }
    SpawnAttr(const SpawnAttr&) = delete;
    SpawnAttr& operator=(const SpawnAttr&) = delete;
    [[nodiscard]] bool ok() const noexcept { return ok_; }
    posix_spawnattr_t* get() noexcept { return &attr_; }

private:
    posix_spawnattr_t attr_{};
    bool ok_ = false;
};

}  // namespace

xen::Result<std::unique_ptr<WorkerProcess>> WorkerProcess::spawn(
    boost::asio::io_context& io, const std::filesystem::path& exe,
    const std::vector<std::string>& args) {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
        return xen::errno_code(errno);
    }
    Fd mine(sv[0]);
    Fd theirs(sv[1]);
    if (theirs.get() == kWorkerControlFd) {
        // dup2 onto itself would keep FD_CLOEXEC: move it out of the way first.
        const int moved = ::fcntl(theirs.get(), F_DUPFD_CLOEXEC, 10);
        if (moved < 0) {
            return xen::errno_code(errno);
        }
        theirs.reset(moved);
    }

    // A terminal is never a worker's: its stdin is /dev/null, and its stdout and stderr a
    // pipe the supervisor relays when its own are a terminal (worker_log_relay.hpp).
    Fd log_read;
    Fd log_write;
    if (needs_log_relay()) {
        int pipe[2];
        if (::pipe2(pipe, O_CLOEXEC) != 0) {
            return xen::errno_code(errno);
        }
        log_read.reset(pipe[0]);
        Fd write_end(pipe[1]);
        log_write.reset(::fcntl(write_end.get(), F_DUPFD_CLOEXEC, 10));  // not onto 1 or 2
        if (log_write.get() < 0) {
            return xen::errno_code(errno);
        }
    }

    SpawnActions actions;
    SpawnAttr attr;
    if (!actions.ok() || !attr.ok()) {
        return xen::errc(std::errc::not_enough_memory);
    }
    if (posix_spawn_file_actions_addopen(actions.get(), STDIN_FILENO, "/dev/null", O_RDONLY, 0) !=
        0) {
        return xen::errc(std::errc::not_enough_memory);
    }
    if (log_write.get() >= 0 &&
        (posix_spawn_file_actions_adddup2(actions.get(), log_write.get(), STDOUT_FILENO) != 0 ||
         posix_spawn_file_actions_adddup2(actions.get(), log_write.get(), STDERR_FILENO) != 0)) {
        return xen::errc(std::errc::not_enough_memory);
    }
    if (posix_spawn_file_actions_adddup2(actions.get(), theirs.get(), kWorkerControlFd) != 0 ||
        posix_spawn_file_actions_addclosefrom_np(actions.get(), kWorkerControlFd + 1) != 0) {
        return xen::errc(std::errc::not_enough_memory);
    }
    // The supervisor ignores SIGPIPE and catches SIGCHLD/SIGTERM: the worker starts clean.
    sigset_t defaults;
    sigemptyset(&defaults);
    for (const int s : {SIGPIPE, SIGCHLD, SIGTERM, SIGINT, SIGHUP}) {
        sigaddset(&defaults, s);
    }
    sigset_t mask;
    sigemptyset(&mask);
    if (posix_spawnattr_setsigdefault(attr.get(), &defaults) != 0 ||
        posix_spawnattr_setsigmask(attr.get(), &mask) != 0 ||
        posix_spawnattr_setflags(attr.get(), POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK) != 0) {
        return xen::errc(std::errc::invalid_argument);
    }

    std::vector<std::string> argv_storage;
    argv_storage.reserve(args.size() + 1);
    argv_storage.push_back(exe.string());
    argv_storage.insert(argv_storage.end(), args.begin(), args.end());
    std::vector<char*> argv;
    argv.reserve(argv_storage.size() + 1);
    for (auto& a : argv_storage) {
        argv.push_back(a.data());
    }
    argv.push_back(nullptr);

    pid_t pid = -1;
    const int rc =
        ::posix_spawn(&pid, exe.c_str(), actions.get(), attr.get(), argv.data(), environ);
    if (rc != 0) {
        return xen::errno_code(rc);
    }
    theirs.reset();

    LineChannel::Socket socket(io);
    boost::system::error_code ec;
    socket.assign(boost::asio::local::stream_protocol(), mine.get(), ec);
    if (ec) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
        return xen::errno_code(ec.value());
    }
    (void)mine.release();
    std::unique_ptr<WorkerProcess> worker(new WorkerProcess(io, pid, std::move(socket)));
    if (log_read.get() >= 0) {
        log_write.reset();
        worker->log_relay_ =
            std::make_unique<WorkerLogRelay>(io, log_read.release(), STDERR_FILENO);
    }
    return worker;
}

xen::Result<std::unique_ptr<WorkerProcess>> WorkerProcess::adopt(boost::asio::io_context& io,
                                                                 pid_t pid, int fd) {
    Fd channel(fd);
    Fd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
    if (pidfd.get() < 0) {
        return xen::errno_code(errno);
    }
    // A worker that ended closed its end of the channel, and its pid may name another
    // process by now. A channel still open after the pidfd was taken means the worker was
    // alive then, so the pidfd is the worker's.
    pollfd peer{channel.get(), POLLRDHUP, 0};
    if (::poll(&peer, 1, 0) < 0 || (peer.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0) {
        return xen::errc(std::errc::no_such_process);
    }
    LineChannel::Socket socket(io);
    auto descriptor = std::make_unique<boost::asio::posix::stream_descriptor>(io);
    boost::system::error_code ec;
    socket.assign(boost::asio::local::stream_protocol(), channel.get(), ec);
    if (!ec) {
        (void)channel.release();
        descriptor->assign(pidfd.get(), ec);
    }
    if (ec) {
        return xen::errno_code(ec.value());
    }
    (void)pidfd.release();
    std::unique_ptr<WorkerProcess> worker(new WorkerProcess(io, pid, std::move(socket)));
    worker->pidfd_ = std::move(descriptor);
    // It served its guest before this supervisor started.
    worker->ever_connected_ = true;
    worker->watch_exit();
    return worker;
}

void WorkerProcess::watch_exit() {
    pidfd_->async_wait(boost::asio::posix::stream_descriptor::wait_read,
                       [this, weak = std::weak_ptr<int>(alive_)](boost::system::error_code ec) {
                           if (ec || weak.expired() || !running_) {
                               return;
                           }
                           // The handler may destroy this object, and with it on_exit.
                           if (auto ended = std::move(on_exit)) {
                               ended();
                           }
                       });
}

void WorkerProcess::signal(int sig) noexcept {
    if (!running_) {
        return;
    }
    if (pidfd_) {
        (void)::syscall(SYS_pidfd_send_signal, pidfd_->native_handle(), sig, nullptr, 0);
    } else {
        ::kill(pid_, sig);
    }
}

WorkerProcess::WorkerProcess(boost::asio::io_context& io, pid_t pid, LineChannel::Socket socket)
    : io_(io), pid_(pid), channel_(LineChannel::create(std::move(socket))) {
    channel_->start(
        [this, weak = std::weak_ptr<int>(alive_)](const nlohmann::json& m) {
            if (!weak.expired()) {
                on_message(m);
            }
        },
        [this, weak = std::weak_ptr<int>(alive_)](std::error_code) {
            if (!weak.expired()) {
                fail_pending();
            }
        });
}

WorkerProcess::~WorkerProcess() {
    alive_.reset();
    channel_->close();
    for (auto& [id, p] : pending_) {
        if (p.timer) {
            p.timer->cancel();
        }
    }
    if (running_) {
        signal(SIGKILL);
        if (!pidfd_) {
            ::waitpid(pid_, nullptr, 0);
        }
    }
}

void WorkerProcess::request(nlohmann::json message, std::chrono::milliseconds timeout,
                            Answer answer) {
    if (!channel_->is_open()) {
        answer(std::nullopt);
        return;
    }
    const uint64_t id = next_id_++;
    message["id"] = id;
    auto timer = std::make_unique<boost::asio::steady_timer>(io_, timeout);
    timer->async_wait([this, id, weak = std::weak_ptr<int>(alive_)](boost::system::error_code ec) {
        if (ec || weak.expired()) {
            return;
        }
        const auto it = pending_.find(id);
        if (it == pending_.end()) {
            return;
        }
        auto late = std::move(it->second.answer);
        pending_.erase(it);
        late(std::nullopt);
    });
    pending_.emplace(id, Pending{std::move(answer), std::move(timer)});
    channel_->send(message);
}

void WorkerProcess::on_message(const nlohmann::json& message) {
    if (json_string(message, "event") == std::optional<std::string_view>("ceilings-wanted")) {
        if (on_ceilings_wanted) {
            on_ceilings_wanted();
        }
        return;
    }
    if (json_string(message, "event") == std::optional<std::string_view>("state")) {
        const auto state = json_string(message, "state");
        for (unsigned i = 0; state && i <= static_cast<unsigned>(XenbusState::reconfigured); ++i) {
            if (to_string(static_cast<XenbusState>(i)) == *state) {
                state_ = static_cast<XenbusState>(i);
                ever_connected_ = ever_connected_ || state_ == XenbusState::connected;
                if (on_state) {
                    on_state(*state_);
                }
            }
        }
        return;
    }
    const auto id = json_uint(message, "id");
    if (!id) {
        return;
    }
    const auto it = pending_.find(*id);
    if (it == pending_.end()) {
        return;  // answered after its timeout
    }
    auto answer = std::move(it->second.answer);
    it->second.timer->cancel();
    pending_.erase(it);
    answer(message);
}

void WorkerProcess::fail_pending() {
    auto pending = std::move(pending_);
    pending_.clear();
    for (auto& [id, p] : pending) {
        p.timer->cancel();
        p.answer(std::nullopt);
    }
}

void WorkerProcess::shutdown() { channel_->send({{"op", std::string(op::shutdown)}}); }

void WorkerProcess::kill() noexcept { signal(SIGKILL); }

void WorkerProcess::reaped() noexcept {
    running_ = false;
    fail_pending();
}

}  // namespace xenhsa::backend::service
