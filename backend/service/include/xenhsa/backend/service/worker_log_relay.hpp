// A worker's stdout and stderr when the supervisor's own are a terminal: a pipe the
// supervisor reads and copies to its stderr with every control character but newline and
// tab shown as '?', so that a compromised worker never holds the operator's terminal (no
// TIOCSTI, no escape sequences). Reads until the worker's end closes.
#ifndef XENHSA_BACKEND_SERVICE_WORKER_LOG_RELAY_HPP
#define XENHSA_BACKEND_SERVICE_WORKER_LOG_RELAY_HPP

#include <array>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <memory>
#include <string>

namespace xenhsa::backend::service {

class WorkerLogRelay {
public:
    // Takes `read_end` (the pipe's; closed on error too); writes to `out`.
    WorkerLogRelay(boost::asio::io_context& io, int read_end, int out);
    ~WorkerLogRelay();
    WorkerLogRelay(const WorkerLogRelay&) = delete;
    WorkerLogRelay& operator=(const WorkerLogRelay&) = delete;

    // What a terminal is shown of `bytes`.
    static std::string printable(std::string_view bytes);

private:
    void read();

    boost::asio::posix::stream_descriptor pipe_;
    int out_;
    std::array<char, 4096> buffer_{};
    std::shared_ptr<int> alive_ = std::make_shared<int>(0);
};

// Whether a worker's fds 1-2 need the relay: the supervisor's stdout or stderr is a
// terminal.
bool needs_log_relay() noexcept;

}  // namespace xenhsa::backend::service

#endif
