// Event-channel ports: Xen's evtchn_alloc_unbound, evtchn_bind_interdomain and
// evtchn_close. Notifications themselves never pass through the daemon (see the client's
// event_channel.cpp): a binding is two datagram socket pairs, created here and handed out.
#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include "daemon.hpp"

namespace xenhsa::xen::sim::daemon {

namespace {

using boost::outcome_v2::success;

constexpr DomId kDomIdFirstReserved = 0x7FF0;

struct Pair {
    UniqueFd inbox;   // read by the end that owns it
    UniqueFd outbox;  // written by the peer
};

Result<Pair> datagram_pair() {
    int sv[2] = {-1, -1};
    if (::socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) != 0) {
        return errno_code(errno);
    }
    // The outbox only sends and the inbox only receives: shut the other directions, so a
    // peer holding our outbox cannot read anything through it.
    (void)::shutdown(sv[0], SHUT_WR);
    (void)::shutdown(sv[1], SHUT_RD);
    return Pair{UniqueFd(sv[0]), UniqueFd(sv[1])};
}

Result<UniqueFd> dup_fd(const UniqueFd& fd) {
    UniqueFd copy(::fcntl(fd.get(), F_DUPFD_CLOEXEC, 0));
    if (!copy) return errno_code(errno);
    return copy;
}

}  // namespace

Result<Port> Daemon::bind_unbound(Conn& c, DomId remote) {
    Domain* d = live_domain(c.dom);
    if (d == nullptr) return errno_code(ESRCH);
    if (remote == kDomIdSelf) remote = c.dom;
    if (remote >= kDomIdFirstReserved) return errno_code(EINVAL);
    auto port = d->ports.allocate();
    if (!port) return port.error();
    PortEntry* e = d->ports.find(port.value());
    e->owner = c.key;
    e->remote = remote;
    c.ports.insert(port.value());
    return port;
}

Result<Port> Daemon::bind_interdomain(Conn& c, DomId remote, Port remote_port, UniqueFd& inbox,
                                      UniqueFd& outbox) {
    Domain* d = live_domain(c.dom);
    if (d == nullptr) return errno_code(ESRCH);
    if (remote == kDomIdSelf) remote = c.dom;
    if (remote >= kDomIdFirstReserved) return errno_code(EINVAL);
    Domain* rd = live_domain(remote);
    if (rd == nullptr) return errno_code(ESRCH);
    PortEntry* re = rd->ports.find(remote_port);
    // Xen: the remote port must be unbound and offered to us.
    if (re == nullptr || re->interdomain || re->remote != d->id) return errno_code(EINVAL);
    auto to_local = datagram_pair();
    if (!to_local) return to_local.error();
    auto to_remote = datagram_pair();
    if (!to_remote) return to_remote.error();
    auto our_outbox = dup_fd(to_remote.value().outbox);
    if (!our_outbox) return our_outbox.error();
    auto their_outbox = dup_fd(to_local.value().outbox);
    if (!their_outbox) return their_outbox.error();
    auto port = d->ports.allocate();
    if (!port) return port.error();

    PortEntry* le = d->ports.find(port.value());  // std::map: `re` stays valid
    le->owner = c.key;
    le->interdomain = true;
    le->remote = rd->id;
    le->remote_port = remote_port;
    le->to_peer = std::move(to_remote.value().outbox);
    re->interdomain = true;
    re->remote = d->id;
    re->remote_port = port.value();
    re->to_peer = std::move(to_local.value().outbox);
    c.ports.insert(port.value());

    // The remote handle learns its end before our reply goes out, so anything we then do
    // (publish in the store, notify) reaches it after the binding.
    if (Conn* rc = conn(re->owner); rc != nullptr) {
        std::vector<UniqueFd> fds;
        fds.push_back(std::move(to_remote.value().inbox));
        fds.push_back(std::move(their_outbox.value()));
        const wire::PortMsg msg{remote_port, 0};
        auto out =
            wire::build(wire::Op::evtchn_bound, 0, 0, wire::as_bytes(msg), {}, std::move(fds));
        if (out) {
            post(*rc, std::move(out.value()));
        } else {
            drop(*rc, "cannot tell about a binding");
        }
    }
    inbox = std::move(to_local.value().inbox);
    outbox = std::move(our_outbox.value());
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
            re->to_peer.reset();
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
