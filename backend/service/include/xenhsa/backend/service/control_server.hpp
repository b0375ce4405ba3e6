// The supervisor's control socket: a Unix stream socket (mode 0600), one JSON request
// per line, each answered with one JSON line (control_messages.hpp).
#ifndef XENHSA_BACKEND_SERVICE_CONTROL_SERVER_HPP
#define XENHSA_BACKEND_SERVICE_CONTROL_SERVER_HPP

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/steady_timer.hpp>
#include <filesystem>
#include <functional>
#include <list>
#include <memory>
#include <nlohmann/json.hpp>
#include <xenhsa/backend/service/line_channel.hpp>
#include <xenhsa/xen/types.hpp>

namespace xenhsa::backend::service {

class ControlServer {
public:
    using Reply = std::function<void(const nlohmann::json&)>;
    // `reply` may be called later (after asking workers), at most once; calling it after
    // the client left does nothing.
    using Handler = std::function<void(const nlohmann::json& request, Reply reply)>;

    static constexpr std::size_t kMaxClients = 32;

    ControlServer(boost::asio::io_context& io, std::filesystem::path path, Handler handler);
    ~ControlServer();  // close()
    ControlServer(const ControlServer&) = delete;
    ControlServer& operator=(const ControlServer&) = delete;

    // Binds and listens. A stale socket left by a dead backend is replaced; EADDRINUSE
    // when another backend answers on it, EEXIST when the path is not a socket.
    xen::Result<void> listen();
    // Stops accepting, drops the clients and removes the socket file.
    void close() noexcept;

private:
    void accept();

    boost::asio::io_context& io_;
    std::filesystem::path path_;
    Handler handler_;
    boost::asio::local::stream_protocol::acceptor acceptor_;
    boost::asio::steady_timer retry_;
    std::list<std::weak_ptr<LineChannel>> clients_;
    bool listening_ = false;
    std::shared_ptr<int> alive_ = std::make_shared<int>(0);
};

}  // namespace xenhsa::backend::service

#endif
