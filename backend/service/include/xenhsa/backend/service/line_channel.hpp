// One JSON object per line over a Unix stream socket, on a Boost.Asio loop. Used between
// the supervisor and its workers (a socketpair) and on the control socket.
#ifndef XENHSA_BACKEND_SERVICE_LINE_CHANNEL_HPP
#define XENHSA_BACKEND_SERVICE_LINE_CHANNEL_HPP

#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/streambuf.hpp>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <system_error>

namespace xenhsa::backend::service {

// A line is at most this long; a longer one, or one that is not a JSON object, closes
// the channel with EPROTO.
inline constexpr std::size_t kMaxLine = 1u << 20;

std::string to_line(const nlohmann::json& message);  // compact, never throws on bad UTF-8

class LineChannel : public std::enable_shared_from_this<LineChannel> {
public:
    using Socket = boost::asio::local::stream_protocol::socket;
    using MessageHandler = std::function<void(const nlohmann::json&)>;
    // Once, when the peer hung up (ENOTCONN... or 0 for a clean EOF) or broke the framing.
    using CloseHandler = std::function<void(std::error_code)>;

    static std::shared_ptr<LineChannel> create(Socket socket);
    ~LineChannel();
    LineChannel(const LineChannel&) = delete;
    LineChannel& operator=(const LineChannel&) = delete;

    void start(MessageHandler on_message, CloseHandler on_close);
    void send(const nlohmann::json& message);
    // Closes the socket once every queued message is written.
    void close_after_send();
    // Closes now; no handler runs afterwards.
    void close() noexcept;
    [[nodiscard]] bool is_open() const noexcept { return open_; }
    // The socket's fd, e.g. to keep a copy elsewhere (the worker fd store).
    [[nodiscard]] int native_handle() noexcept { return socket_.native_handle(); }

private:
    explicit LineChannel(Socket socket);
    void read();
    void write();
    void fail(std::error_code ec);

    Socket socket_;
    boost::asio::streambuf in_{kMaxLine};
    std::deque<std::string> out_;
    bool writing_ = false;
    bool open_ = true;
    bool closing_ = false;
    MessageHandler on_message_;
    CloseHandler on_close_;
};

}  // namespace xenhsa::backend::service

#endif
