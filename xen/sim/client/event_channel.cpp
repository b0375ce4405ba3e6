// EventChannel of the simulated hypervisor.
//
// Notifications never pass through the daemon, which only opens, binds and unbinds. Each
// handle has one inbox: an AF_UNIX datagram socket with an abstract name the kernel chose,
// made by the daemon at open. fd() is that inbox, so a wait is one poll or epoll_wait on
// it. Each binding and direction has an outbox: another socket with a kernel-chosen name,
// connected by the daemon to the receiving handle's inbox and handed to the sender, so
// notify() is one non-blocking send().
//
// A datagram is attributed by the source address the kernel reports, never by what it
// says: the receiver maps the address of each peer outbox to its own port, and holds a
// copy of that outbox for as long as it maps the address, so that the kernel cannot give
// the name to another socket meanwhile. An outbox can reach any inbox (sendto), but its
// address maps to nothing there. When a binding ends the daemon shuts both its outboxes
// for writing: the old sender gets EPIPE (and asks the daemon), never someone's port.
//
// The kernel queues at most net.unix.max_dgram_qlen datagrams on the inbox, whoever sent
// them, and refuses more with EAGAIN. That means "already pending" only for the sender
// whose datagrams fill the queue, so when more than that many arrived since the queue was
// last empty, some sender may have been refused: every bound port fires (Xen allows
// spurious events; a lost one would hang the peer).
//
// The daemon connection is in no wait set. Its messages (a peer bound or unbound one of
// our ports) are read when the handle calls the daemon, when notify() has no working
// outbox, when the daemon's wake-up datagram says it sent one, and when a datagram comes
// from an unknown address: the binding may be in a message not read yet. The daemon
// queues that message before the binder gets its reply, so if it is not in the socket
// either, a round trip to the daemon (evtchn_sync) brings it in; an address still unknown
// after that is a stranger's, and its datagram is dropped. After an unbinding the peer's
// address stays mapped until the inbox has been drained once, so what it sent before it
// went still counts.
//
// Masking is kept here, as Linux's evtchn device does: a delivered port is masked until
// unmask(); an event while it waits in the ready queue is merged into it, one after it was
// handed out is latched and delivered once on unmask(). pending() hands out one port per
// call. While more wait, the handle sends a datagram to itself (from an outbox of its own),
// so that fd() stays readable and an edge-triggered waiter gets a fresh edge: only when
// several ports fire at once or unmask() re-delivers, never on the common path.
//
// The system calls are send, recvfrom and recvmsg only: the backend's confined worker runs
// pending() under a seccomp allowlist (without recvmmsg or getsockname).
#include <sys/socket.h>
#include <sys/un.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <deque>
#include <map>
#include <new>
#include <vector>

#include "components.hpp"
#include "vm.hpp"

namespace xenhsa::xen::sim::client {

namespace {

using boost::outcome_v2::success;

// A datagram's source: an abstract name of at most 7 bytes (the kernel's own names are
// "\0" and five hex digits) packed with its length; kUnknown for anything else.
using Source = uint64_t;
constexpr Source kUnknown = 0;

Source source_of(const char* path, std::size_t len) noexcept {
    if (len == 0 || len > 7 || path[0] != '\0') return kUnknown;
    Source s = len;
    for (std::size_t i = 0; i < len; ++i) {
        s |= Source{static_cast<unsigned char>(path[i])} << (8 * (i + 1));
    }
    return s;
}

Source source_of(const wire::SocketName& name) noexcept {
    return name.len <= sizeof name.path ? source_of(name.path, name.len) : kUnknown;
}

Source source_of(const sockaddr_un& addr, socklen_t len) noexcept {
    constexpr std::size_t kPath = offsetof(sockaddr_un, sun_path);
    if (len <= kPath || len > sizeof addr) return kUnknown;
    return source_of(addr.sun_path, len - kPath);
}

// Datagrams read per drain at least; more if the kernel queues more (see receive()).
constexpr uint32_t kMinReads = 32;
constexpr uint32_t kMaxQueueLimit = 1u << 20;

class SimEventChannel final : public EventChannel {
public:
    // `unknown`: room for max_reads(queue_limit) sources.
    SimEventChannel(Channel ch, UniqueFd inbox, UniqueFd self_outbox, Source self, Source daemon,
                    uint32_t queue_limit, std::unique_ptr<Source[]> unknown) noexcept
        : ch_(std::move(ch)),
          inbox_(std::move(inbox)),
          self_outbox_(std::move(self_outbox)),
          self_(self),
          daemon_(daemon),
          queue_limit_(queue_limit),
          max_reads_(max_reads(queue_limit)),
          unknown_(std::move(unknown)) {
        ch_.on_async([this](wire::Message&& msg) { on_daemon_message(std::move(msg)); });
    }
    SimEventChannel(const SimEventChannel&) = delete;
    SimEventChannel& operator=(const SimEventChannel&) = delete;
    ~SimEventChannel() override = default;

    // What one drain reads at most: more than the kernel queues (see receive()).
    static uint32_t max_reads(uint32_t queue_limit) noexcept {
        return std::max(kMinReads, std::min(queue_limit, kMaxQueueLimit) + 2);
    }

    [[nodiscard]] int fd() const noexcept override { return inbox_.get(); }

    Result<BoundPort> bind_interdomain(DomId remote, Port remote_port) override {
        if (remote == kDomIdInvalid) return errno_code(EINVAL);
        const wire::BindInterdomainReq req{remote, 0, remote_port};
        auto reply = ch_.call(wire::Op::evtchn_bind_interdomain, wire::as_bytes(req));
        if (!reply) return reply.error();
        if (auto ok = check(reply.value()); !ok) return ok.error();
        wire::Message& msg = reply.value();
        if (!msg.body_is<wire::BoundMsg>() || msg.fds.size() != 2) {
            fatal("bind_interdomain: malformed reply", EPROTO);
        }
        const auto bound = msg.body_as<wire::BoundMsg>();
        if (auto added = add_port(bound.port); !added) return undo_bind(bound.port, added.error());
        auto wired =
            connect_port(bound.port, bound.peer, std::move(msg.fds[0]), std::move(msg.fds[1]));
        if (!wired) return undo_bind(bound.port, wired.error());
        return BoundPort(this, bound.port);
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
        auto it = ports_.find(local);
        if (it == ports_.end()) return errno_code(ENOTCONN);  // not bound by this handle
        if (send_to_peer(it->second)) return success();
        // No outbox, or a dead one (EPIPE: the binding ended; ECONNREFUSED: the peer's
        // handle is gone): take in the daemon's messages about the port (unbound, bound
        // again) and try once more.
        if (auto polled = ch_.poll_async(); !polled) return polled.error();
        if (auto again = ports_.find(local); again != ports_.end()) {
            (void)send_to_peer(again->second);
        }
        return success();  // unbound: dropped, as Xen does
    }

    Result<std::optional<Port>> pending() override {
        // A wake-up of ours still queued is taken out with the rest, so that fd() goes
        // quiet once the last port is handed out.
        if (ready_.empty() || self_wakes_ > 0) {
            if (auto got = receive(); !got) return got.error();
        }
        if (ready_.empty()) return std::optional<Port>{};
        const Port port = ready_.front();
        ready_.pop_front();
        if (auto it = ports_.find(port); it != ports_.end()) it->second.queued = false;
        if (!ready_.empty()) ring();  // one port per readiness: a fresh one for the next
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
            make_readable();
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
        UniqueFd outbox;       // ours, into the peer's inbox
        UniqueFd peer_outbox;  // the peer's, into ours: keeps `peer` unique while mapped
        Source peer = kUnknown;
        bool masked = false;
        bool latched = false;  // fired while masked
        bool queued = false;   // in ready_
    };
    // The address of a binding that ended, still mapped until the next full drain.
    struct Retired {
        Source source = kUnknown;
        Port port = 0;
        UniqueFd peer_outbox;
    };

    // False when the port has no outbox or the outbox leads nowhere any more. EAGAIN is
    // success: the peer's inbox is full, which its owner notices (see receive()).
    static bool send_to_peer(const LocalPort& p) noexcept {
        if (!p.outbox) return false;
        const char one = 1;
        for (;;) {
            if (::send(p.outbox.get(), &one, 1, MSG_DONTWAIT | MSG_NOSIGNAL) == 1) return true;
            if (errno == EINTR) continue;
            return errno == EAGAIN || errno == EWOULDBLOCK;
        }
    }

    // Reads what the inbox holds, up to max_reads_ datagrams. That bound exceeds what the
    // kernel queues, so whatever is left arrived after the caller's wait returned and is
    // a fresh readiness of its own.
    Result<void> receive() {
        const std::size_t retired_before = retired_.size();
        uint32_t reads = 0;
        uint32_t unknowns = 0;
        bool drained = false;
        bool ask_daemon = false;
        while (reads < max_reads_) {
            sockaddr_un from{};
            socklen_t len = sizeof from;
            char sink = 0;
            const ssize_t n = ::recvfrom(inbox_.get(), &sink, sizeof sink, MSG_DONTWAIT,
                                         reinterpret_cast<sockaddr*>(&from), &len);
            if (n < 0) {
                if (errno == EINTR) continue;
                if (errno == EAGAIN || errno == EWOULDBLOCK) {
                    drained = true;
                    break;
                }
                return errno_code(errno);
            }
            ++reads;
            const Source source = source_of(from, len);
            if (source == self_) {
                if (self_wakes_ > 0) --self_wakes_;
            } else if (source == daemon_) {
                ask_daemon = true;
            } else if (!fire_from(source)) {
                unknown_[unknowns++] = source;
            }
        }
        burst_ += reads;
        const bool overflowed = burst_ > queue_limit_;
        if (overflowed || drained) burst_ = 0;
        if (ask_daemon || overflowed || unknowns > 0) {
            if (auto polled = ch_.poll_async(); !polled) return polled.error();
        }
        if (unknowns > 0) {
            if (auto looked = attribute_unknown(unknowns); !looked) return looked.error();
        }
        if (overflowed) {
            for (const auto& [source, port] : sources_) fire(port);
        }
        if (drained) {
            self_wakes_ = 0;
            forget_retired(retired_before);
        }
        return success();
    }

    bool fire_from(Source source) noexcept {
        auto it = sources_.find(source);
        if (it == sources_.end()) return false;
        fire(it->second);
        return true;
    }

    // The first `count` of unknown_, after a poll of the daemon: still unknown, they get
    // one round trip to the daemon, whose reply follows every binding queued for us before
    // it; unknown after that, they are dropped.
    Result<void> attribute_unknown(uint32_t count) {
        uint32_t left = 0;
        for (uint32_t i = 0; i < count; ++i) {
            if (!fire_from(unknown_[i])) unknown_[left++] = unknown_[i];
        }
        if (left == 0) return success();
        if (auto synced = ch_.call_small(wire::Op::evtchn_sync, wire::as_bytes(wire::Empty{}));
            !synced) {
            return synced.error();
        }
        for (uint32_t i = 0; i < left; ++i) (void)fire_from(unknown_[i]);
        return success();
    }

    // Xen's pending bit: merged while queued, latched while handed out and masked.
    void fire(Port port) noexcept {
        auto it = ports_.find(port);
        if (it == ports_.end()) return;
        LocalPort& p = it->second;
        if (p.queued) return;
        if (p.masked) {
            p.latched = true;
            return;
        }
        deliver(port, p);
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
    }

    // fd() readable while ports are queued, after unmask() delivered one.
    void make_readable() noexcept {
        if (!ready_.empty() && self_wakes_ == 0) ring();
    }

    // A datagram to ourselves: readable, and a new edge for an edge-triggered waiter.
    void ring() noexcept {
        if (send_self()) return;
        // The inbox is full: drain it (what arrives after that is a fresh edge itself),
        // and ring again if something is still queued.
        try {
            (void)receive();
        } catch (const std::bad_alloc&) {
        }
        if (!ready_.empty()) (void)send_self();
    }

    bool send_self() noexcept {
        const char one = 1;
        for (;;) {
            if (::send(self_outbox_.get(), &one, 1, MSG_DONTWAIT | MSG_NOSIGNAL) == 1) {
                ++self_wakes_;
                return true;
            }
            if (errno != EINTR) return false;
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

    Result<void> connect_port(Port port, const wire::SocketName& peer, UniqueFd outbox,
                              UniqueFd peer_outbox) {
        auto it = ports_.find(port);
        if (it == ports_.end()) return success();  // unbound meanwhile: drop the fds
        const Source source = source_of(peer);
        if (source == kUnknown || source == self_ || source == daemon_) return errno_code(EPROTO);
        LocalPort& p = it->second;
        retire_peer(port, p);  // a binding whose end we did not hear of (never, in order)
        try {
            if (!sources_.try_emplace(source, port).second) return errno_code(EPROTO);
        } catch (const std::bad_alloc&) {
            return errno_code(ENOMEM);
        }
        p.outbox = std::move(outbox);
        p.peer_outbox = std::move(peer_outbox);
        p.peer = source;
        return success();
    }

    void retire_peer(Port port, LocalPort& p) noexcept {
        p.outbox.reset();
        if (p.peer == kUnknown) return;
        try {
            retired_.push_back(Retired{p.peer, port, std::move(p.peer_outbox)});
        } catch (const std::bad_alloc&) {
            sources_.erase(p.peer);  // forgotten at once: what it sent last is dropped
        }
        p.peer_outbox.reset();
        p.peer = kUnknown;
    }

    void forget_retired(std::size_t count) noexcept {
        count = std::min(count, retired_.size());
        for (std::size_t i = 0; i < count; ++i) sources_.erase(retired_[i].source);
        retired_.erase(retired_.begin(), retired_.begin() + static_cast<std::ptrdiff_t>(count));
    }

    void drop_port(Port port) noexcept {
        auto it = ports_.find(port);
        if (it == ports_.end()) return;
        if (it->second.peer != kUnknown) sources_.erase(it->second.peer);
        ports_.erase(it);
        std::erase(ready_, port);
        std::erase_if(retired_, [&](const Retired& r) {
            if (r.port != port) return false;
            sources_.erase(r.source);
            return true;
        });
    }

    void on_daemon_message(wire::Message&& msg) noexcept {
        if (msg.op() == wire::Op::evtchn_bound && msg.body_is<wire::BoundMsg>() &&
            msg.fds.size() == 2) {
            const auto bound = msg.body_as<wire::BoundMsg>();
            (void)connect_port(bound.port, bound.peer, std::move(msg.fds[0]),
                               std::move(msg.fds[1]));
        } else if (msg.op() == wire::Op::evtchn_unbound && msg.body_is<wire::PortMsg>()) {
            const Port port = msg.body_as<wire::PortMsg>().port;
            if (auto it = ports_.find(port); it != ports_.end()) retire_peer(port, it->second);
        }
    }

    Channel ch_;
    UniqueFd inbox_;
    UniqueFd self_outbox_;
    const Source self_;
    const Source daemon_;
    const uint32_t queue_limit_;
    const uint32_t max_reads_;
    std::unique_ptr<Source[]> unknown_;  // sources of one drain not known at once
    std::map<Port, LocalPort> ports_;
    std::map<Source, Port> sources_;  // peer outboxes' addresses, retired ones too
    std::vector<Retired> retired_;
    std::deque<Port> ready_;
    uint32_t self_wakes_ = 0;  // our datagrams not yet read back
    uint32_t burst_ = 0;       // datagrams read since the inbox was last seen empty
};

}  // namespace

Result<std::unique_ptr<EventChannel>> make_event_channel(Channel ch) {
    auto reply = ch.call(wire::Op::evtchn_open, wire::as_bytes(wire::Empty{}));
    if (!reply) return reply.error();
    if (auto ok = check(reply.value()); !ok) return ok.error();
    wire::Message& msg = reply.value();
    if (!msg.body_is<wire::EvtchnOpenRep>() || msg.fds.size() != 2) return errno_code(EPROTO);
    const auto rep = msg.body_as<wire::EvtchnOpenRep>();
    const Source self = source_of(rep.self);
    const Source daemon = source_of(rep.daemon);
    if (self == kUnknown || daemon == kUnknown || self == daemon) return errno_code(EPROTO);
    try {
        auto unknown = std::make_unique<Source[]>(SimEventChannel::max_reads(rep.queue_limit));
        return std::unique_ptr<EventChannel>(std::make_unique<SimEventChannel>(
            std::move(ch), std::move(msg.fds[0]), std::move(msg.fds[1]), self, daemon,
            rep.queue_limit, std::move(unknown)));
    } catch (const std::bad_alloc&) {
        return errno_code(ENOMEM);
    }
}

}  // namespace xenhsa::xen::sim::client
