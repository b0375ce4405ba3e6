#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <xenhsa/backend/service/control_server.hpp>

namespace xenhsa::backend::service {

namespace {

using Local = boost::asio::local::stream_protocol;

xen::Result<void> remove_stale_socket(boost::asio::io_context& io,
                                      const std::filesystem::path& path) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) {
        return xen::Result<void>(boost::outcome_v2::success());  // nothing there
    }
    if (!S_ISSOCK(st.st_mode)) {
        return xen::errc(std::errc::file_exists);
    }
    Local::socket probe(io);
    boost::system::error_code ec;
    probe.connect(Local::endpoint(path.string()), ec);
    if (!ec) {
        return xen::errc(std::errc::address_in_use);
    }
    std::error_code removed;
    std::filesystem::remove(path, removed);
    if (removed) {
        return removed;
    }
    return xen::Result<void>(boost::outcome_v2::success());
}

}  // namespace

ControlServer::ControlServer(boost::asio::io_context& io, std::filesystem::path path,
                             Handler handler)
    : io_(io), path_(std::move(path)), handler_(std::move(handler)), acceptor_(io), retry_(io) {}

ControlServer::~ControlServer() { close(); }

xen::Result<void> ControlServer::listen() {
    // Bound under a temporary name and renamed once listening: whoever waits for the
    // socket to appear can connect at once.
    const std::filesystem::path binding = path_.string() + ".new";
    if (binding.string().size() >= sizeof(sockaddr_un{}.sun_path)) {
        return xen::errc(std::errc::filename_too_long);
    }
    if (auto stale = remove_stale_socket(io_, path_); !stale) {
        return stale.error();
    }
    if (auto stale = remove_stale_socket(io_, binding); !stale) {
        return stale.error();
    }
    boost::system::error_code ec;
    acceptor_.open(Local(), ec);
    if (!ec) {
        // Only root (the service's user) may ask for status or revoke.
        const mode_t old = ::umask(0177);
        acceptor_.bind(Local::endpoint(binding.string()), ec);
        ::umask(old);
    }
    if (!ec) {
        acceptor_.listen(boost::asio::socket_base::max_listen_connections, ec);
    }
    if (!ec && ::rename(binding.c_str(), path_.c_str()) != 0) {
        ec.assign(errno, boost::system::system_category());
        std::error_code ignored;
        std::filesystem::remove(binding, ignored);
    }
    if (ec) {
        boost::system::error_code ignored;
        acceptor_.close(ignored);
        return xen::errno_code(ec.value());
    }
    listening_ = true;
    accept();
    return xen::Result<void>(boost::outcome_v2::success());
}

void ControlServer::accept() {
    acceptor_.async_accept([this, weak = std::weak_ptr<int>(alive_)](boost::system::error_code ec,
                                                                     Local::socket socket) {
        if (weak.expired() || !listening_) {
            return;
        }
        if (ec) {
            // EMFILE and friends: try again later instead of spinning.
            retry_.expires_after(std::chrono::milliseconds(100));
            retry_.async_wait([this, weak](boost::system::error_code e) {
                if (!e && !weak.expired() && listening_) {
                    accept();
                }
            });
            return;
        }
        {
            clients_.remove_if([](const auto& c) { return c.expired(); });
            if (clients_.size() < kMaxClients) {
                auto channel = LineChannel::create(std::move(socket));
                clients_.push_back(channel);
                std::weak_ptr<LineChannel> client = channel;
                channel->start(
                    [this, client, weak](const nlohmann::json& request) {
                        if (weak.expired()) {
                            return;
                        }
                        handler_(request, [client](const nlohmann::json& answer) {
                            if (auto c = client.lock()) {
                                c->send(answer);
                            }
                        });
                    },
                    [](std::error_code) {});
            }
        }
        accept();
    });
}

void ControlServer::close() noexcept {
    if (!listening_) {
        return;
    }
    listening_ = false;
    boost::system::error_code ignored;
    acceptor_.close(ignored);
    retry_.cancel();
    for (auto& c : clients_) {
        if (auto channel = c.lock()) {
            channel->close();
        }
    }
    clients_.clear();
    std::error_code removed;
    std::filesystem::remove(path_, removed);
}

}  // namespace xenhsa::backend::service
