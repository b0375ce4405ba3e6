#include "store_proxy.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "helper_process.hpp"

extern "C" {
#include <xen/io/xs_wire.h>
}

namespace xenhsa::backend::service {

namespace {

constexpr std::size_t kHeader = sizeof(xsd_sockmsg);

bool under(std::string_view path, std::string_view dir) {
    return path == dir ||
           (path.size() > dir.size() && path.starts_with(dir) && path[dir.size()] == '/');
}

void proxy_says(const char* text) noexcept { helper_says("store proxy", text); }

// All of `size` bytes through `io` (read or write), retried after a signal.
template <typename Data, typename Io>
bool all_of(int fd, Data* data, std::size_t size, Io io) noexcept {
    while (size > 0) {
        const ssize_t n = io(fd, data, size);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return false;
        }
        data += n;
        size -= static_cast<std::size_t>(n);
    }
    return true;
}

bool write_all(int fd, const char* data, std::size_t size) noexcept {
    return all_of(fd, data, size, ::write);
}

bool read_all(int fd, char* data, std::size_t size) noexcept {
    return all_of(fd, data, size, ::read);
}

// A connection to xenstored as libxenstore makes it: its socket, else the xenbus device.
int open_upstream() noexcept {
    const char* env = std::getenv("XENSTORED_PATH");
    const std::string path = env != nullptr ? env : "/run/xenstored/socket";
    const int s = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (s >= 0 && path.size() < sizeof addr.sun_path) {
        std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
        if (::connect(s, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0) {
            return s;
        }
    }
    if (s >= 0) {
        ::close(s);
    }
    return ::open("/dev/xen/xenbus", O_RDWR | O_CLOEXEC);
}

// This domain's id, read on `up` before anything is relayed on it.
std::optional<xen::DomId> read_self(int up) noexcept {
    static constexpr char kKey[] = "domid";
    xsd_sockmsg h{};
    h.type = XS_READ;
    h.len = sizeof kKey;
    char reply[64];
    if (!write_all(up, reinterpret_cast<const char*>(&h), kHeader) ||
        !write_all(up, kKey, sizeof kKey) || !read_all(up, reinterpret_cast<char*>(&h), kHeader) ||
        h.type != XS_READ || h.len == 0 || h.len >= sizeof reply || !read_all(up, reply, h.len)) {
        return std::nullopt;
    }
    unsigned value = 0;
    const auto [end, ec] = std::from_chars(reply, reply + h.len, value);
    if (ec != std::errc() || end != reply + h.len || value >= xen::kDomIdInvalid) {
        return std::nullopt;
    }
    return static_cast<xen::DomId>(value);
}

struct Relay {
    int down = -1;  // the worker's
    int up = -1;    // xenstored's
    std::string from_down;
    std::string from_up;
};

// Whole messages off the front of `buffer`; false when one is malformed.
template <typename OnMessage>
bool take_messages(std::string& buffer, OnMessage&& on_message) {
    std::size_t at = 0;
    while (buffer.size() - at >= kHeader) {
        xsd_sockmsg h{};
        std::memcpy(&h, buffer.data() + at, kHeader);
        if (h.len > XENSTORE_PAYLOAD_MAX) {
            return false;
        }
        if (buffer.size() - at < kHeader + h.len) {
            break;
        }
        if (!on_message(h, std::string_view(buffer).substr(at, kHeader + h.len))) {
            return false;
        }
        at += kHeader + h.len;
    }
    buffer.erase(0, at);
    return true;
}

// One readable side: false when the relay ends (EOF, an error or a malformed message).
bool pump(Relay& r, bool from_worker, const StoreRules& rules) {
    char chunk[16384];
    const ssize_t n = ::read(from_worker ? r.down : r.up, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) {
        return true;
    }
    if (n <= 0) {
        return false;
    }
    std::string& buffer = from_worker ? r.from_down : r.from_up;
    buffer.append(chunk, static_cast<std::size_t>(n));
    return take_messages(buffer, [&](const xsd_sockmsg& h, std::string_view whole) {
        if (!from_worker) {
            return write_all(r.down, whole.data(), whole.size());
        }
        const auto refused = rules.refusal(h.type, whole.substr(kHeader));
        if (!refused) {
            return write_all(r.up, whole.data(), whole.size());
        }
        const char* name = *refused == EINVAL ? "EINVAL" : "EACCES";
        xsd_sockmsg error = h;
        error.type = XS_ERROR;
        error.len = static_cast<uint32_t>(std::strlen(name) + 1);
        return write_all(r.down, reinterpret_cast<const char*>(&error), kHeader) &&
               write_all(r.down, name, error.len);
    });
}

// The connection the worker made, with its own to xenstored; false when it cannot be.
bool accept_one(int listener, std::vector<Relay>& relays, std::optional<StoreRules>& rules,
                xen::DomId guest) {
    Relay r;
    r.down = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (r.down < 0) {
        return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
    }
    r.up = open_upstream();
    if (r.up < 0) {
        proxy_says("cannot reach xenstored");
        return false;
    }
    if (!rules) {
        const auto self = read_self(r.up);
        if (!self) {
            proxy_says("cannot read this domain's id");
            return false;
        }
        rules.emplace(*self, guest);
    }
    relays.push_back(std::move(r));
    return true;
}

// Relays from the first connection on; accepts the worker's connections until it seals,
// then removes the socket and confines itself. Ends when the last connection closes.
[[noreturn]] void run_proxy(int listener, int seal, const std::string& path, xen::DomId guest) {
    std::vector<Relay> relays;
    std::optional<StoreRules> rules;
    std::vector<pollfd> fds;
    while (listener >= 0 || !relays.empty()) {
        fds.clear();
        for (const Relay& r : relays) {
            fds.push_back({r.down, POLLIN, 0});
            fds.push_back({r.up, POLLIN, 0});
        }
        if (listener >= 0) {
            fds.push_back({listener, POLLIN, 0});
            fds.push_back({seal, POLLIN, 0});
        }
        if (::poll(fds.data(), fds.size(), -1) < 0) {
            if (errno == EINTR) {
                continue;
            }
            ::_exit(1);
        }
        for (std::size_t i = relays.size(); i-- > 0;) {
            bool alive = true;
            for (const bool from_worker : {true, false}) {
                if (alive && fds[2 * i + (from_worker ? 0 : 1)].revents != 0) {
                    alive = pump(relays[i], from_worker, *rules);
                }
            }
            if (!alive) {
                ::close(relays[i].down);
                ::close(relays[i].up);
                relays.erase(relays.begin() + static_cast<std::ptrdiff_t>(i));
            }
        }
        if (listener < 0) {
            continue;
        }
        const short accepting = fds[fds.size() - 2].revents;
        const short sealed = fds[fds.size() - 1].revents;
        // Every connection made before the seal is waiting by the time the seal is seen
        // (but perhaps not when the listener was polled): accept until none is.
        for (bool more = accepting != 0 || sealed != 0; more;) {
            const std::size_t before = relays.size();
            if (!accept_one(listener, relays, rules, guest)) {
                ::_exit(1);
            }
            more = relays.size() > before;
        }
        if (sealed != 0) {
            ::close(listener);
            ::close(seal);
            listener = -1;
            (void)::unlink(path.c_str());
            (void)::rmdir(path.substr(0, path.rfind('/')).c_str());
            if (!rules || !confine_helper(HelperKind::store_proxy)) {
                ::_exit(1);
            }
        }
    }
    ::_exit(0);
}

}  // namespace

StoreRules::StoreRules(xen::DomId self, xen::DomId guest)
    : home_("/local/domain/" + std::to_string(self)),
      frontend_("/local/domain/" + std::to_string(guest) + "/device/xenhsa"),
      backend_(home_ + "/backend/xenhsa/" + std::to_string(guest)) {}

std::optional<int> StoreRules::refusal(uint32_t type, std::string_view payload) const {
    bool writes = false;
    bool watch = false;
    switch (type) {
        case XS_TRANSACTION_START:
        case XS_TRANSACTION_END:
        case XS_RESET_WATCHES:  // this connection's own
            return std::nullopt;
        case XS_READ:
        case XS_DIRECTORY:
        case XS_DIRECTORY_PART:
        case XS_GET_PERMS:
            break;
        case XS_WATCH:
        case XS_UNWATCH:
            watch = true;
            break;
        case XS_WRITE:
        case XS_MKDIR:
        case XS_RM:
        case XS_SET_PERMS:
            writes = true;
            break;
        default:  // introducing, releasing or resuming domains, targets, control, ...
            return EACCES;
    }
    const auto nul = payload.find('\0');
    if (nul == std::string_view::npos || nul == 0) {
        return EINVAL;
    }
    const std::string_view path = payload.substr(0, nul);
    if (path.front() == '@') {
        return watch && (path == "@releaseDomain" || path == "@introduceDomain")
                   ? std::nullopt
                   : std::optional<int>(EACCES);
    }
    const std::string absolute =
        path.front() == '/' ? std::string(path) : home_ + "/" + std::string(path);
    if (type == XS_READ && absolute == home_ + "/domid") {
        return std::nullopt;
    }
    // The backend writes its own directory only, and reads and watches the frontend's.
    const bool allowed = under(absolute, backend_) || (!writes && under(absolute, frontend_));
    return allowed ? std::nullopt : std::optional<int>(EACCES);
}

xen::Result<StoreProxy> StoreProxy::start(xen::DomId guest) {
    char dir[] = "/tmp/xenhsa-store-XXXXXX";  // 0700, root's
    if (::mkdtemp(dir) == nullptr) {
        return xen::errno_code(errno);
    }
    std::string path = std::string(dir) + "/socket";
    const auto undo = [&](int err, std::initializer_list<int> fds) {
        for (const int fd : fds) {
            ::close(fd);
        }
        (void)::unlink(path.c_str());
        (void)::rmdir(dir);
        return xen::errno_code(err);
    };
    const int listener = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (listener < 0) {
        return undo(errno, {});
    }
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    if (::bind(listener, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(listener, 8) != 0) {
        return undo(errno, {listener});
    }
    int seal[2];
    if (::pipe2(seal, O_CLOEXEC) != 0) {
        return undo(errno, {listener});
    }
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0) {
        return undo(errno, {listener, seal[0], seal[1]});
    }
    if (pid == 0) {
        if (::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0 || ::getppid() != parent) {
            ::_exit(1);
        }
        keep_only_fds({listener, seal[0]});
        run_proxy(listener, seal[0], path, guest);
    }
    ::close(listener);
    ::close(seal[0]);
    return StoreProxy(std::move(path), seal[1], pid);
}

StoreProxy::StoreProxy(StoreProxy&& other) noexcept
    : path_(std::move(other.path_)),
      seal_fd_(std::exchange(other.seal_fd_, -1)),
      pid_(other.pid_) {}

StoreProxy::~StoreProxy() { seal(); }

void StoreProxy::seal() noexcept {
    if (seal_fd_ >= 0) {
        ::close(seal_fd_);
        seal_fd_ = -1;
    }
}

}  // namespace xenhsa::backend::service
