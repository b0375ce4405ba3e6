#include <unistd.h>

#include <boost/asio/buffer.hpp>
#include <xenhsa/backend/service/worker_log_relay.hpp>

namespace xenhsa::backend::service {

WorkerLogRelay::WorkerLogRelay(boost::asio::io_context& io, int read_end, int out)
    : pipe_(io), out_(out) {
    boost::system::error_code ec;
    pipe_.assign(read_end, ec);
    if (ec) {
        ::close(read_end);
        return;
    }
    read();
}

WorkerLogRelay::~WorkerLogRelay() {
    alive_.reset();
    boost::system::error_code ignored;
    pipe_.close(ignored);
}

std::string WorkerLogRelay::printable(std::string_view bytes) {
    std::string shown(bytes);
    for (char& c : shown) {
        const auto u = static_cast<unsigned char>(c);
        if ((u < 0x20 && c != '\n' && c != '\t') || u == 0x7f) {
            c = '?';
        }
    }
    return shown;
}

void WorkerLogRelay::read() {
    pipe_.async_read_some(
        boost::asio::buffer(buffer_),
        [this, weak = std::weak_ptr<int>(alive_)](boost::system::error_code ec, std::size_t n) {
            if (weak.expired() || ec) {
                return;  // the worker's end closed, or the relay went
            }
            const std::string shown = printable({buffer_.data(), n});
            for (std::size_t done = 0; done < shown.size();) {
                const ssize_t wrote = ::write(out_, shown.data() + done, shown.size() - done);
                if (wrote <= 0) {
                    break;  // the supervisor's stderr is gone: drop the rest
                }
                done += static_cast<std::size_t>(wrote);
            }
            read();
        });
}

bool needs_log_relay() noexcept {
    return ::isatty(STDOUT_FILENO) == 1 || ::isatty(STDERR_FILENO) == 1;
}

}  // namespace xenhsa::backend::service
