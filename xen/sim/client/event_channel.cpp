// EventChannel of the simulated hypervisor.
//
// Fast path by design: the daemon only binds and unbinds. An interdomain binding is two
// connected AF_UNIX datagram socket pairs the daemon creates, one per direction; each end
// gets its inbox (read notifications) and an outbox into the peer's inbox. notify() is one
// non-blocking send() on the outbox, with no daemon round trip. A peer can only write into
// (or fail to drain) the inbox of its own binding: it never holds our inbox, so it cannot
// steal or block our wake-ups; MSG_DONTWAIT keeps every call non-blocking whatever it does
// to the shared file flags.
//
// fd() is an epoll set over every inbox, the daemon connection (bindings made by a peer
// arrive there) and a doorbell rung while delivered ports are queued. Masking is kept
// here, as Linux's evtchn device does: a delivered port is masked until unmask(); events
// while masked are latched and delivered once on unmask().
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#include <deque>
#include <map>
#include <new>

#include "components.hpp"
#include "vm.hpp"

namespace xenhsa::xen::sim::client {

namespace {

using boost::outcome_v2::success;

// epoll data of the non-port members of the set (ports are never 0 or this large).
constexpr uint64_t kSocketTag = 0;
constexpr uint64_t kDoorbellTag = ~uint64_t{0};

class SimEventChannel final : public EventChannel {
public:
    SimEventChannel(Channel ch, UniqueFd epoll, Doorbell doorbell) noexcept
        : ch_(std::move(ch)), epoll_(std::move(epoll)), doorbell_(std::move(doorbell)) {
        ch_.on_async([this](wire::Message&& msg) { on_daemon_message(std::move(msg)); });
    }

    [[nodiscard]] int fd() const noexcept override { return epoll_.get(); }

    Result<BoundPort> bind_interdomain(DomId remote, Port remote_port) override {
        if (remote == kDomIdInvalid) return errno_code(EINVAL);
        const wire::BindInterdomainReq req{remote, 0, remote_port};
        auto reply = ch_.call(wire::Op::evtchn_bind_interdomain, wire::as_bytes(req));
        if (!reply) return reply.error();
        if (auto ok = check(reply.value()); !ok) return ok.error();
        wire::Message& msg = reply.value();
        if (!msg.body_is<wire::PortMsg>() || msg.fds.size() != 2) {
            fatal("bind_interdomain: malformed reply", EPROTO);
        }
        const Port port = msg.body_as<wire::PortMsg>().port;
        if (auto added = add_port(port); !added) return undo_bind(port, added.error());
        if (auto wired = connect_port(port, std::move(msg.fds[0]), std::move(msg.fds[1])); !wired) {
            return undo_bind(port, wired.error());
        }
        return BoundPort(this, port);
    }

    Result<BoundPort> bind_unbound(DomId remote) override {
        if (remote == kDomIdInvalid) return errno_code(EINVAL);
        const wire::BindUnboundReq req{remote, {}};
        auto reply = ch_.call(wire::Op::evtchn_bind_unbound, wire::as_bytes(req));
        if (!reply) return reply.error();
        if (auto ok = check(reply.value()); !ok) return ok.error();
        if (!reply.value().body_is<wire::PortMsg>()) fatal("bind_unbound: malformed reply", EPROTO);
        const Port port = reply.value().body_as<wire::PortMsg>().port;
        if (auto added = add_port(port); !added) return undo_bind(port, added.error());
        return BoundPort(this, port);
    }

    Result<void> notify(Port local) override {
        if (!ports_.contains(local)) return errno_code(ENOTCONN);  // not bound by this handle
        // The fast path: one send. It fails when we have no outbox or the peer closed its
        // inbox: the daemon's messages about the port (unbound, bound again) may still be
        // queued on our socket, so take them in and try once more.
        if (send_to_peer(local)) return success();
        if (auto polled = ch_.poll_async(); !polled) return polled.error();
        (void)send_to_peer(local);
        return success();  // unbound: dropped, as Xen does
    }

    Result<std::optional<Port>> pending() override {
        std::array<epoll_event, 64> events{};
        int n = 0;
        do {
            n = ::epoll_wait(epoll_.get(), events.data(), static_cast<int>(events.size()), 0);
        } while (n < 0 && errno == EINTR);
        if (n < 0) return errno_code(errno);
        bool daemon_spoke = false;
        for (int i = 0; i < n; ++i) {
            const uint64_t tag = events[static_cast<std::size_t>(i)].data.u64;
            if (tag == kSocketTag) {
                daemon_spoke = true;
            } else if (tag != kDoorbellTag) {
                harvest(static_cast<Port>(tag));
            }
        }
        // Bindings and unbindings (a new binding's inbox is harvested as it arrives).
        if (daemon_spoke) {
            if (auto polled = ch_.poll_async(); !polled) return polled.error();
        }
        if (ready_.empty()) {
            doorbell_.quiet();
            return std::optional<Port>{};
        }
        const Port port = ready_.front();
        ready_.pop_front();
        if (auto it = ports_.find(port); it != ports_.end()) it->second.queued = false;
        // One port per readiness: a wake-up for each one still queued.
        if (ready_.empty()) {
            doorbell_.quiet();
        } else {
            doorbell_.nudge();
        }
        return std::optional<Port>{port};
    }

    Result<void> unmask(Port local) override {
        auto it = ports_.find(local);
        if (it == ports_.end()) return success();  // as Linux: unmasking a stranger is ignored
        LocalPort& p = it->second;
        if (!p.masked) return success();
        p.masked = false;
        if (p.latched) {
            p.latched = false;
            deliver(local, p);
        }
        return success();
    }

protected:
    void unbind(Port local) noexcept override {
        drop_port(local);
        const wire::PortMsg req{local, 0};
        auto done = ch_.call_small(wire::Op::evtchn_unbind, wire::as_bytes(req));
        if (!done && !is_disconnect(done.error())) {
            std::fprintf(stderr, "xenhsa-sim client: evtchn unbind: %s\n",
                         done.error().message().c_str());
        }
    }

private:
    struct LocalPort {
        UniqueFd inbox;
        UniqueFd outbox;
        bool masked = false;
        bool latched = false;  // fired while masked
        bool queued = false;   // in ready_
    };

    // False when there is no live peer inbox behind the port's outbox. EAGAIN (the peer's
    // inbox is full) means the event is already pending: delivered, as far as Xen goes.
    bool send_to_peer(Port port) noexcept {
        auto it = ports_.find(port);
        if (it == ports_.end() || !it->second.outbox) return false;
        const char one = 1;
        for (;;) {
            if (::send(it->second.outbox.get(), &one, 1, MSG_DONTWAIT | MSG_NOSIGNAL) == 1) {
                return true;
            }
            if (errno == EINTR) continue;
            return errno == EAGAIN || errno == EWOULDBLOCK;
        }
    }

    Result<void> add_port(Port port) {
        try {
            if (!ports_.try_emplace(port).second) return errno_code(EPROTO);
        } catch (const std::bad_alloc&) {
            return errno_code(ENOMEM);
        }
        return success();
    }

    Result<BoundPort> undo_bind(Port port, std::error_code err) {
        BoundPort undo(this, port);  // unbinds when it goes
        return err;
    }

    Result<void> connect_port(Port port, UniqueFd inbox, UniqueFd outbox) {
        auto it = ports_.find(port);
        if (it == ports_.end()) return success();  // unbound meanwhile: drop the fds
        LocalPort& p = it->second;
        if (p.inbox) (void)::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, p.inbox.get(), nullptr);
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.u64 = port;
        if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, inbox.get(), &ev) != 0) {
            p.inbox.reset();
            p.outbox.reset();
            return errno_code(errno);
        }
        p.inbox = std::move(inbox);
        p.outbox = std::move(outbox);
        harvest(port);  // the peer may have notified already
        return success();
    }

    void disconnect_port(Port port) noexcept {
        auto it = ports_.find(port);
        if (it == ports_.end()) return;
        LocalPort& p = it->second;
        if (p.inbox) {
            harvest(port);  // what the peer sent before it went still counts
            (void)::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, p.inbox.get(), nullptr);
        }
        p.inbox.reset();
        p.outbox.reset();
    }

    void drop_port(Port port) noexcept {
        auto it = ports_.find(port);
        if (it == ports_.end()) return;
        if (it->second.inbox) {
            (void)::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, it->second.inbox.get(), nullptr);
        }
        ports_.erase(it);
        for (auto q = ready_.begin(); q != ready_.end(); ++q) {
            if (*q == port) {
                ready_.erase(q);
                break;
            }
        }
    }

    // Drains a port's inbox; anything received is one event. Bounded: a peer sending as
    // fast as we read must not keep us here (the rest stays readable for the next call).
    void harvest(Port port) noexcept {
        auto it = ports_.find(port);
        if (it == ports_.end() || !it->second.inbox) return;
        constexpr int kMaxReads = 64;
        bool fired = false;
        std::array<char, 64> sink{};
        for (int i = 0; i < kMaxReads; ++i) {
            const ssize_t n =
                ::recv(it->second.inbox.get(), sink.data(), sink.size(), MSG_DONTWAIT);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) break;
            fired = true;
        }
        if (!fired) return;
        LocalPort& p = it->second;
        if (p.masked) {
            p.latched = true;
        } else {
            deliver(port, p);
        }
    }

    void deliver(Port port, LocalPort& p) noexcept {
        p.masked = true;
        if (p.queued) return;
        try {
            ready_.push_back(port);
        } catch (const std::bad_alloc&) {
            p.latched = true;  // delivered later, on unmask
            return;
        }
        p.queued = true;
        doorbell_.ring();
    }

    void on_daemon_message(wire::Message&& msg) noexcept {
        if (!msg.body_is<wire::PortMsg>()) return;
        const Port port = msg.body_as<wire::PortMsg>().port;
        if (msg.op() == wire::Op::evtchn_bound && msg.fds.size() == 2) {
            (void)connect_port(port, std::move(msg.fds[0]), std::move(msg.fds[1]));
        } else if (msg.op() == wire::Op::evtchn_unbound) {
            disconnect_port(port);
        }
    }

    Channel ch_;
    UniqueFd epoll_;
    Doorbell doorbell_;
    std::map<Port, LocalPort> ports_;
    std::deque<Port> ready_;
};

}  // namespace

Result<Doorbell> Doorbell::create() {
    Doorbell d;
    d.fd_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    if (!d.fd_) return errno_code(errno);
    return d;
}

void Doorbell::ring() noexcept {
    if (!rung_) nudge();
}

void Doorbell::nudge() noexcept {
    const uint64_t one = 1;
    rung_ = ::write(fd_.get(), &one, sizeof one) == sizeof one || rung_;
}

void Doorbell::quiet() noexcept {
    if (!rung_) return;
    uint64_t value = 0;
    (void)::read(fd_.get(), &value, sizeof value);
    rung_ = false;
}

Result<std::unique_ptr<EventChannel>> make_event_channel(Channel ch) {
    UniqueFd epoll(::epoll_create1(EPOLL_CLOEXEC));
    if (!epoll) return errno_code(errno);
    auto doorbell = Doorbell::create();
    if (!doorbell) return doorbell.error();
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = kSocketTag;
    if (::epoll_ctl(epoll.get(), EPOLL_CTL_ADD, ch.fd(), &ev) != 0) return errno_code(errno);
    ev.data.u64 = kDoorbellTag;
    if (::epoll_ctl(epoll.get(), EPOLL_CTL_ADD, doorbell.value().fd(), &ev) != 0) {
        return errno_code(errno);
    }
    try {
        return std::unique_ptr<EventChannel>(std::make_unique<SimEventChannel>(
            std::move(ch), std::move(epoll), std::move(doorbell.value())));
    } catch (const std::bad_alloc&) {
        return errno_code(ENOMEM);
    }
}

}  // namespace xenhsa::xen::sim::client
