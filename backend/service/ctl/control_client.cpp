#include "control_client.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace xenhsa::ctl {

namespace {

class Socket {
public:
    Socket() : fd_(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) {}
    ~Socket() {
        if (fd_ >= 0) {
            ::close(fd_);
        }
    }
    Socket(const Socket&) = delete;
    Socket& operator=(const Socket&) = delete;
    [[nodiscard]] int fd() const noexcept { return fd_; }

private:
    int fd_;
};

constexpr std::size_t kMaxAnswer = 1u << 20;

}  // namespace

std::optional<nlohmann::json> ask(const std::filesystem::path& socket,
                                  const nlohmann::json& request, std::string& error,
                                  std::chrono::milliseconds timeout) {
    Socket s;
    if (s.fd() < 0) {
        error = std::strerror(errno);
        return std::nullopt;
    }
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    const std::string path = socket.string();
    if (path.size() >= sizeof addr.sun_path) {
        error = "path too long";
        return std::nullopt;
    }
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    if (::connect(s.fd(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
        error = std::string("cannot connect: ") + std::strerror(errno);
        return std::nullopt;
    }
    const std::string line = request.dump() + "\n";
    for (std::size_t done = 0; done < line.size();) {
        const ssize_t n = ::send(s.fd(), line.data() + done, line.size() - done, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            error = std::string("cannot send: ") + std::strerror(errno);
            return std::nullopt;
        }
        done += static_cast<std::size_t>(n);
    }
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::string answer;
    char buf[4096];
    while (answer.find('\n') == std::string::npos) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
            error = "no answer in time";
            return std::nullopt;
        }
        pollfd p{s.fd(), POLLIN, 0};
        const int ready = ::poll(&p, 1, static_cast<int>(left.count()));
        if (ready < 0 && errno == EINTR) {
            continue;
        }
        if (ready <= 0) {
            continue;
        }
        const ssize_t n = ::recv(s.fd(), buf, sizeof buf, 0);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            error = n == 0 ? "the backend closed the connection"
                           : std::string("cannot read: ") + std::strerror(errno);
            return std::nullopt;
        }
        answer.append(buf, static_cast<std::size_t>(n));
        if (answer.size() > kMaxAnswer) {
            error = "answer too long";
            return std::nullopt;
        }
    }
    answer.resize(answer.find('\n'));
    auto parsed = nlohmann::json::parse(answer, nullptr, false);
    if (parsed.is_discarded() || !parsed.is_object()) {
        error = "the answer is not a JSON object";
        return std::nullopt;
    }
    return parsed;
}

}  // namespace xenhsa::ctl
