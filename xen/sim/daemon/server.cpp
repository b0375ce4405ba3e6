// The daemon's event loop and connection I/O.
#include <spdlog/spdlog.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>

#include <csignal>
#include <cstddef>
#include <cstring>
#include <xenhsa/xen/sim/client.hpp>

#include "daemon.hpp"

namespace xenhsa::xen::sim::daemon {

namespace {

using boost::outcome_v2::success;

// epoll tags that are not connections (connection keys start above them).
constexpr uint64_t kListenerTag = 1;
constexpr uint64_t kSignalTag = 2;
constexpr ConnKey kFirstConn = 16;

// Requests handled per wake-up of one connection, so that one busy client cannot starve
// the others.
constexpr int kRequestsPerWake = 32;
// Messages queued to a client that does not read; beyond this it is dropped. Watch events
// are only pulled from the store while a queue is empty, so this bounds replies and port
// messages.
constexpr std::size_t kMaxQueued = 1024;

std::error_code last_error() { return errno_code(errno); }

// Is another daemon answering on this socket path?
bool answering(const sockaddr_un& addr) {
    UniqueFd probe(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
    return probe &&
           ::connect(probe.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0;
}

int open_pidfd(pid_t pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }

// A message the daemon sent on its own (seq 0), not a reply.
bool is_async(const wire::OutMessage& msg) noexcept {
    uint32_t seq = 1;
    if (msg.bytes.size() >= sizeof(wire::Header)) {
        std::memcpy(&seq, msg.bytes.data() + offsetof(wire::Header, seq), sizeof seq);
    }
    return seq == 0;
}

}  // namespace

Daemon::Daemon(Options options)
    : options_(std::move(options)),
      next_conn_(kFirstConn),
      buf_(std::make_unique<std::byte[]>(wire::kMaxMessage)) {}

Daemon::~Daemon() {
    // Connections first: their teardown needs the domains and the store.
    for (auto& [key, c] : conns_) {
        if (!c->closing) drop(*c, "daemon exit");
    }
    reap();
    if (bound_) ::unlink(socket_path_.c_str());
}

Result<void> Daemon::start() {
    std::error_code ec;
    std::filesystem::create_directories(options_.dir, ec);
    if (ec) return ec;
    socket_path_ = options_.dir / kSocketName;
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    const std::string path = socket_path_.string();
    if (path.size() >= sizeof addr.sun_path) return errno_code(ENAMETOOLONG);
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    if (answering(addr)) return errno_code(EADDRINUSE);
    ::unlink(path.c_str());  // a stale socket of a daemon that died

    listener_.reset(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!listener_) return last_error();
    if (::bind(listener_.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
        return last_error();
    }
    bound_ = true;
    if (::listen(listener_.get(), 128) != 0) return last_error();

    epoll_.reset(::epoll_create1(EPOLL_CLOEXEC));
    if (!epoll_) return last_error();
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = kListenerTag;
    if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, listener_.get(), &ev) != 0) return last_error();

    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    signals_.reset(::signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC));
    if (!signals_) return last_error();
    ev.data.u64 = kSignalTag;
    if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, signals_.get(), &ev) != 0) return last_error();

    return create_dom0();
}

Result<void> Daemon::run() {
    std::array<epoll_event, 64> events{};
    bool stop = false;
    while (!stop) {
        const int n =
            ::epoll_wait(epoll_.get(), events.data(), static_cast<int>(events.size()), -1);
        if (n < 0) {
            if (errno == EINTR) continue;
            return last_error();
        }
        for (int i = 0; i < n; ++i) {
            const epoll_event& ev = events[static_cast<std::size_t>(i)];
            if (ev.data.u64 == kListenerTag) {
                accept_all();
            } else if (ev.data.u64 == kSignalTag) {
                signalfd_siginfo si{};
                while (::read(signals_.get(), &si, sizeof si) == sizeof si) {
                    spdlog::info("signal {}: exiting", si.ssi_signo);
                    stop = true;
                }
            } else if (Conn* c = conn(ev.data.u64); c != nullptr && !c->closing) {
                on_event(*c, ev.events);
            }
        }
        serving_ = 0;
        do {
            reap();
            flush_watch_events();
        } while (!dropped_.empty());
    }
    return success();
}

void Daemon::accept_all() {
    for (;;) {
        UniqueFd sock(::accept4(listener_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
        if (!sock) {
            if (errno == EINTR || errno == ECONNABORTED) continue;
            if (errno != EAGAIN) spdlog::warn("accept: {}", std::strerror(errno));
            return;
        }
        if (conns_.size() >= options_.max_connections) {
            spdlog::warn("too many connections: refusing one");
            continue;
        }
        ucred cred{};
        socklen_t len = sizeof cred;
        if (::getsockopt(sock.get(), SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) continue;
        auto c = std::make_unique<Conn>();
        c->key = next_conn_++;
        c->sock = std::move(sock);
        c->pid = cred.pid;
        c->pidfd.reset(open_pidfd(cred.pid));  // -1 if the process is already gone
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.u64 = c->key;
        if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, c->sock.get(), &ev) != 0) {
            spdlog::warn("epoll add: {}", std::strerror(errno));
            continue;
        }
        spdlog::debug("conn {}: pid {}", c->key, c->pid);
        conns_.emplace(c->key, std::move(c));
    }
}

void Daemon::on_event(Conn& c, uint32_t events) {
    if ((events & EPOLLOUT) != 0) flush(c);
    if ((events & EPOLLIN) != 0 && !c.closing) {
        read_requests(c);
    } else if ((events & (EPOLLHUP | EPOLLERR)) != 0) {
        drop(c, "hang-up");
    }
}

void Daemon::read_requests(Conn& c) {
    for (int i = 0; i < kRequestsPerWake && !c.closing && !c.want_write; ++i) {
        wire::Message req;
        auto got = wire::receive(c.sock.get(), {buf_.get(), wire::kMaxMessage}, req, true);
        if (!got) {
            const int e = got.error().value();
            if (e == EAGAIN) return;
            drop(c, e == ECONNRESET ? "closed" : e == EPROTO ? "garbage" : "receive failed");
            return;
        }
        try {
            serving_ = c.key;
            dispatch(c, req);
            serving_ = 0;
            // A request's watch events follow its reply before the next request is read:
            // a client sees the events of its own change by the time of its next reply.
            flush_watch_events();
        } catch (const std::bad_alloc&) {
            serving_ = 0;
            drop(c, "out of memory");
        }
    }
}

void Daemon::post(Conn& c, wire::OutMessage msg) {
    if (c.closing) return;
    if (c.out.size() >= kMaxQueued) {
        drop(c, "not reading its messages");
        return;
    }
    c.out.push_back(std::move(msg));
    flush(c);
}

void Daemon::flush(Conn& c) {
    bool async_sent = false;
    while (!c.out.empty() && !c.closing) {
        auto sent = wire::send(c.sock.get(), c.out.front(), true);
        if (!sent) {
            if (sent.error().value() == EAGAIN) break;
            drop(c, "send failed");
            return;
        }
        async_sent = async_sent || is_async(c.out.front());
        c.out.pop_front();
    }
    // An event-channel handle waits on its inbox only, not on this connection: tell it
    // that a binding changed (dropped if its inbox is full, which it notices).
    if (async_sent && c.evtchn_wake) {
        const char one = 1;
        (void)::send(c.evtchn_wake.get(), &one, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
    }
    update_interest(c);
}

// Backpressure: a connection with queued output is not read until the queue drains.
void Daemon::update_interest(Conn& c) {
    const bool want_write = !c.out.empty();
    if (c.closing || want_write == c.want_write) return;
    epoll_event ev{};
    ev.events = want_write ? EPOLLOUT : EPOLLIN;
    ev.data.u64 = c.key;
    if (::epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, c.sock.get(), &ev) != 0) {
        drop(c, "epoll");
        return;
    }
    c.want_write = want_write;
}

void Daemon::drop(Conn& c, std::string_view why) {
    if (c.closing) return;
    spdlog::debug("conn {} (pid {}, dom {}): dropped: {}", c.key, c.pid, c.dom, why);
    c.closing = true;
    dropped_.push_back(c.key);
}

void Daemon::reap() {
    // The connection being served stays until its request is done (destroy_domain reaps
    // from inside a request); run() reaps it afterwards.
    std::vector<ConnKey> later;
    while (!dropped_.empty()) {
        const ConnKey key = dropped_.back();
        dropped_.pop_back();
        if (key == serving_) {
            later.push_back(key);
            continue;
        }
        auto it = conns_.find(key);
        if (it == conns_.end()) continue;
        Conn& c = *it->second;
        teardown(c);
        (void)::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, c.sock.get(), nullptr);
        conns_.erase(it);
    }
    dropped_ = std::move(later);
}

Conn* Daemon::conn(ConnKey key) {
    auto it = conns_.find(key);
    return it == conns_.end() ? nullptr : it->second.get();
}

}  // namespace xenhsa::xen::sim::daemon
