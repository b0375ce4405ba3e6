// The supervisor's handle on one worker process: fork+exec of the backend binary
// (posix_spawn) with one end of a socketpair as fd 3, /dev/null as stdin, stdout and
// stderr the supervisor's (or a relay's pipe) and nothing else inherited, and the
// request/answer traffic on that socket. Or a worker an earlier supervisor started,
// adopted with its channel (worker_fd_store.hpp).
#ifndef XENHSA_BACKEND_SERVICE_WORKER_PROCESS_HPP
#define XENHSA_BACKEND_SERVICE_WORKER_PROCESS_HPP

#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>
#include <xenhsa/backend/service/line_channel.hpp>
#include <xenhsa/backend/service/worker_log_relay.hpp>
#include <xenhsa/backend/service/xenbus.hpp>
#include <xenhsa/xen/types.hpp>

namespace xenhsa::backend::service {

// The fd number a worker finds its end of the socketpair at.
inline constexpr int kWorkerControlFd = 3;

class WorkerProcess {
public:
    // The answer, or nullopt when the worker did not answer in time or went away.
    using Answer = std::function<void(std::optional<nlohmann::json>)>;

    // Starts `exe` with `args` (argv[1..]). The child gets fd 3 and fds 0-2 only.
    static xen::Result<std::unique_ptr<WorkerProcess>> spawn(boost::asio::io_context& io,
                                                             const std::filesystem::path& exe,
                                                             const std::vector<std::string>& args);
    // A worker an earlier supervisor started, still running, with the supervisor's end of
    // its channel (`fd`, taken over). Not this process's child: its end is seen through a
    // pidfd, and `on_exit` runs then (its exit status is not known). ESRCH when it ended
    // (its end of the channel is closed; its pid may be another process's by now).
    static xen::Result<std::unique_ptr<WorkerProcess>> adopt(boost::asio::io_context& io, pid_t pid,
                                                             int fd);
    // SIGKILLs and reaps a worker that is still running (the supervisor's last resort;
    // normally the worker was reaped already).
    ~WorkerProcess();
    WorkerProcess(const WorkerProcess&) = delete;
    WorkerProcess& operator=(const WorkerProcess&) = delete;

    [[nodiscard]] pid_t pid() const noexcept { return pid_; }
    // The backend state the worker reported last.
    [[nodiscard]] std::optional<XenbusState> reported_state() const noexcept { return state_; }
    [[nodiscard]] bool ever_connected() const noexcept { return ever_connected_; }
    [[nodiscard]] bool adopted() const noexcept { return pidfd_ != nullptr; }
    // The supervisor's end of the channel (to keep in the worker fd store).
    [[nodiscard]] int channel_fd() const noexcept { return channel_->native_handle(); }
    // An adopted worker ended.
    std::function<void()> on_exit;

    void request(nlohmann::json message, std::chrono::milliseconds timeout, Answer answer);
    // Called with each backend state the worker reports.
    std::function<void(XenbusState)> on_state;
    // Called when the worker holds a reconnecting frontend until it gets new pool shares.
    std::function<void()> on_ceilings_wanted;
    // Asks the worker to revoke everything and end; its exit is seen through SIGCHLD.
    void shutdown();
    void kill() noexcept;
    // The supervisor reaped it: no signal may go to that pid any more.
    void reaped() noexcept;

private:
    WorkerProcess(boost::asio::io_context& io, pid_t pid, LineChannel::Socket socket);
    void on_message(const nlohmann::json& message);
    void fail_pending();
    void watch_exit();
    void signal(int sig) noexcept;

    boost::asio::io_context& io_;
    pid_t pid_;
    bool running_ = true;
    std::shared_ptr<LineChannel> channel_;
    uint64_t next_id_ = 1;
    struct Pending {
        Answer answer;
        std::unique_ptr<boost::asio::steady_timer> timer;
    };
    std::map<uint64_t, Pending> pending_;
    std::optional<XenbusState> state_;
    bool ever_connected_ = false;
    std::unique_ptr<boost::asio::posix::stream_descriptor> pidfd_;  // adopted workers
    std::unique_ptr<WorkerLogRelay> log_relay_;  // when the supervisor's stderr is a terminal
    std::shared_ptr<int> alive_ = std::make_shared<int>(0);
};

}  // namespace xenhsa::backend::service

#endif
