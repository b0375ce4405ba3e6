// Event-channel ports: Xen's evtchn_alloc_unbound, evtchn_bind_interdomain and
// evtchn_close. Notifications themselves never pass through the daemon (see the client's
// event_channel.cpp): it makes the sockets they travel on and hands them out. Each handle
// has one inbox; each binding and direction one outbox, connected to the receiver's inbox,
// whose kernel-chosen address the receiver maps to its port.
#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <array>
#include <cstddef>
#include <cstdlib>
#include <cstring>

#include "daemon.hpp"

namespace xenhsa::xen::sim::daemon {

namespace {

using boost::outcome_v2::success;

// The kernel's default for net.unix.max_dgram_qlen, if it cannot be read.
constexpr uint32_t kDefaultQueueLimit = 10;

Result<UniqueFd> datagram_socket() {
    UniqueFd fd(::socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd) return errno_code(errno);
    return fd;
}

// Binds to an abstract name the kernel picks, unused at that moment, and returns it. The
// name stays the socket's until its last fd closes.
Result<wire::SocketName> autobind(const UniqueFd& fd) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(sa_family_t)) != 0) {
        return errno_code(errno);
    }
    socklen_t len = sizeof addr;
    if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
        return errno_code(errno);
    }
    wire::SocketName name{};
    const std::size_t path = len - offsetof(sockaddr_un, sun_path);
    if (len <= offsetof(sockaddr_un, sun_path) || path > sizeof name.path) {
        return errno_code(EPROTO);
    }
    name.len = static_cast<uint32_t>(path);
    std::memcpy(name.path, addr.sun_path, path);
    return name;
}

struct Outbox {
    UniqueFd fd;
    wire::SocketName name{};  // what the receiver sees as the source of its datagrams
};

// A sending socket with a name of its own, connected to an inbox (or to nothing, for a
// receiver without a handle: sends then fail with ENOTCONN and are dropped).
Result<Outbox> outbox_to(const Conn* receiver) {
    auto fd = datagram_socket();
    if (!fd) return fd.error();
    auto name = autobind(fd.value());
    if (!name) return name.error();
    if (receiver != nullptr && receiver->evtchn_inbox) {
        sockaddr_un to{};
        to.sun_family = AF_UNIX;
        std::memcpy(to.sun_path, receiver->evtchn_inbox_name.path, receiver->evtchn_inbox_name.len);
        const auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) +
                                                receiver->evtchn_inbox_name.len);
        if (::connect(fd.value().get(), reinterpret_cast<const sockaddr*>(&to), len) != 0) {
            return errno_code(errno);
        }
    }
    // It only sends: nothing can queue on it whoever holds it.
    (void)::shutdown(fd.value().get(), SHUT_RD);
    return Outbox{std::move(fd.value()), name.value()};
}

Result<UniqueFd> dup_fd(const UniqueFd& fd) {
    UniqueFd copy(::fcntl(fd.get(), F_DUPFD_CLOEXEC, 0));
    if (!copy) return errno_code(errno);
    return copy;
}

// Ends every holder's sends on an outbox (a copy of it outlives the binding in the old
// sender, which then gets EPIPE and asks the daemon), then drops the daemon's copy.
void retire(UniqueFd& outbox) noexcept {
    if (!outbox) return;
    (void)::shutdown(outbox.get(), SHUT_WR);
    outbox.reset();
}

// How many datagrams the kernel queues on an AF_UNIX datagram socket before refusing more
// (EAGAIN), fixed for a socket when it is created.
uint32_t datagram_queue_limit() {
    UniqueFd f(::open("/proc/sys/net/unix/max_dgram_qlen", O_RDONLY | O_CLOEXEC));
    std::array<char, 16> text{};
    const ssize_t n = f ? ::read(f.get(), text.data(), text.size() - 1) : -1;
    if (n <= 0) return kDefaultQueueLimit;
    char* end = nullptr;
    const unsigned long v = std::strtoul(text.data(), &end, 10);
    if (end == text.data() || v > (1u << 20)) return kDefaultQueueLimit;
    return static_cast<uint32_t>(v);
}

}  // namespace

Result<void> Daemon::open_events(Conn& c, EventsOpened& out) {
    if (c.evtchn_inbox) return errno_code(EISCONN);
    const uint32_t queue_limit = datagram_queue_limit();  // read before the inbox exists
    auto inbox = datagram_socket();
    if (!inbox) return inbox.error();
    auto inbox_name = autobind(inbox.value());
    if (!inbox_name) return inbox_name.error();
    // It only receives: nothing can be sent through it, so no outbox ever gets data.
    (void)::shutdown(inbox.value().get(), SHUT_WR);
    auto theirs = dup_fd(inbox.value());
    if (!theirs) return theirs.error();
    c.evtchn_inbox = std::move(inbox.value());
    c.evtchn_inbox_name = inbox_name.value();
    auto self = outbox_to(&c);
    if (!self) {
        c.evtchn_inbox.reset();
        return self.error();
    }
    auto wake = outbox_to(&c);
    if (!wake) {
        c.evtchn_inbox.reset();
        return wake.error();
    }
    c.evtchn_wake = std::move(wake.value().fd);
    out.rep = wire::EvtchnOpenRep{queue_limit, 0, self.value().name, wake.value().name};
    out.inbox = std::move(theirs.value());
    out.self_outbox = std::move(self.value().fd);
    return success();
}

Result<Port> Daemon::bind_unbound(Conn& c, DomId remote) {
    Domain* d = live_domain(c.dom);
    if (d == nullptr) return errno_code(ESRCH);
    if (remote == kDomIdSelf) remote = c.dom;
    if (remote >= kDomIdFirstReserved) return errno_code(EINVAL);
    if (!c.evtchn_inbox) return errno_code(EBADFD);  // no evtchn_open
    auto port = d->ports.allocate();
    if (!port) return port.error();
    PortEntry* e = d->ports.find(port.value());
    e->owner = c.key;
    e->remote = remote;
    c.ports.insert(port.value());
    return port;
}

Result<Port> Daemon::bind_interdomain(Conn& c, DomId remote, Port remote_port, BoundEnd& out) {
    Domain* d = live_domain(c.dom);
    if (d == nullptr) return errno_code(ESRCH);
    if (!c.evtchn_inbox) return errno_code(EBADFD);  // no evtchn_open
    if (remote == kDomIdSelf) remote = c.dom;
    if (remote >= kDomIdFirstReserved) return errno_code(EINVAL);
    Domain* rd = live_domain(remote);
    if (rd == nullptr) return errno_code(ESRCH);
    PortEntry* re = rd->ports.find(remote_port);
    // Xen: the remote port must be unbound and offered to us.
    if (re == nullptr || re->interdomain || re->remote != d->id) return errno_code(EINVAL);
    Conn* rc = conn(re->owner);  // none while only unmap notifications hold the port
    // Each outbox has three holders: its sender, the daemon (unmap notifications), and the
    // receiver, so that the name it maps stays unique for as long as it maps it.
    auto to_local = outbox_to(&c);
    if (!to_local) return to_local.error();
    auto to_remote = outbox_to(rc);
    if (!to_remote) return to_remote.error();
    auto their_outbox = dup_fd(to_local.value().fd);
    if (!their_outbox) return their_outbox.error();
    auto our_pin = dup_fd(to_local.value().fd);
    if (!our_pin) return our_pin.error();
    auto our_outbox = dup_fd(to_remote.value().fd);
    if (!our_outbox) return our_outbox.error();
    auto their_pin = dup_fd(to_remote.value().fd);
    if (!their_pin) return their_pin.error();
    auto port = d->ports.allocate();
    if (!port) return port.error();

    PortEntry* le = d->ports.find(port.value());  // std::map: `re` stays valid
    le->owner = c.key;
    le->interdomain = true;
    le->remote = rd->id;
    le->remote_port = remote_port;
    le->to_peer = std::move(to_remote.value().fd);
    re->interdomain = true;
    re->remote = d->id;
    re->remote_port = port.value();
    re->to_peer = std::move(to_local.value().fd);
    c.ports.insert(port.value());

    // The remote handle learns its end before our reply goes out, so anything we then do
    // (publish in the store, notify) reaches it after the binding.
    if (rc != nullptr) {
        std::vector<UniqueFd> fds;
        fds.push_back(std::move(their_outbox.value()));
        fds.push_back(std::move(their_pin.value()));
        const wire::BoundMsg msg{remote_port, 0, to_remote.value().name};
        auto sent =
            wire::build(wire::Op::evtchn_bound, 0, 0, wire::as_bytes(msg), {}, std::move(fds));
        if (sent) {
            post(*rc, std::move(sent.value()));
        } else {
            drop(*rc, "cannot tell about a binding");
        }
    }
    out.peer = to_local.value().name;
    out.outbox = std::move(our_outbox.value());
    out.peer_outbox = std::move(our_pin.value());
    return port;
}

Result<void> Daemon::unbind(Conn& c, Port port) {
    if (port == 0 || port >= PortTable::kMaxPorts) return errno_code(EINVAL);
    Domain* d = any_domain(c.dom);
    PortEntry* e = d != nullptr ? d->ports.find(port) : nullptr;
    if (e == nullptr || e->owner != c.key) return errno_code(ENOTCONN);  // as Linux's evtchn
    c.ports.erase(port);
    if (e->holds > 0) {
        e->owner = 0;  // closed when the last unmap notification that needs it is done
    } else {
        close_port(*d, port);
    }
    return success();
}

void Daemon::hold_port(Domain& d, Port port) noexcept {
    if (PortEntry* e = d.ports.find(port); e != nullptr) ++e->holds;
}

void Daemon::unhold_port(DomId dom, Port port) noexcept {
    Domain* d = any_domain(dom);
    PortEntry* e = d != nullptr ? d->ports.find(port) : nullptr;
    if (e == nullptr || e->holds == 0) return;
    if (--e->holds == 0 && e->owner == 0) close_port(*d, port);
}

// Xen's evtchn_close: an interdomain peer goes back to unbound, bindable again by us.
void Daemon::close_port(Domain& d, Port port) noexcept {
    PortEntry* e = d.ports.find(port);
    if (e == nullptr) return;
    if (e->interdomain) {
        Domain* rd = any_domain(e->remote);
        PortEntry* re = rd != nullptr ? rd->ports.find(e->remote_port) : nullptr;
        if (re != nullptr && re->interdomain && re->remote == d.id && re->remote_port == port) {
            re->interdomain = false;
            re->remote_port = 0;
            retire(re->to_peer);
            if (Conn* rc = conn(re->owner); rc != nullptr) {
                const wire::PortMsg msg{e->remote_port, 0};
                auto out = wire::build(wire::Op::evtchn_unbound, 0, 0, wire::as_bytes(msg), {}, {});
                if (out) {
                    post(*rc, std::move(out.value()));
                } else {
                    drop(*rc, "cannot tell about an unbinding");
                }
            }
        }
    }
    retire(e->to_peer);
    d.ports.erase(port);
}

void Daemon::release_ports(Conn& c) noexcept {
    Domain* d = any_domain(c.dom);
    if (d != nullptr) {
        for (const Port port : c.ports) {
            PortEntry* e = d->ports.find(port);
            if (e == nullptr) continue;
            if (e->holds > 0) {
                e->owner = 0;
            } else {
                close_port(*d, port);
            }
        }
    }
    c.ports.clear();
}

}  // namespace xenhsa::xen::sim::daemon
