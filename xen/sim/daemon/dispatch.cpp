// Decoding and validation of client requests. Framing was checked by wire::receive; here
// every body size, count, length and id is checked before anything acts on it. A request
// that is well framed but wrong gets an error reply; only framing violations (and requests
// that make no sense on any connection, like a reply-only op) drop the connection.
#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "daemon.hpp"

namespace xenhsa::xen::sim::daemon {

namespace {

using wire::Op;

std::error_code err(int e) { return errno_code(e); }

// Tail holding exactly `count` items of T.
template <class T>
bool tail_holds(const wire::Message& req, uint64_t count) {
    return req.tail.size() == count * sizeof(T);
}

}  // namespace

void Daemon::reply(Conn& c, const wire::Message& req, int error, std::span<const std::byte> body,
                   std::span<const std::byte> tail, std::vector<UniqueFd> fds, uint16_t flags) {
    auto msg = wire::build(req.op(), req.header.seq, error, body, tail, std::move(fds), flags);
    if (!msg) {
        // Could not build the reply (memory, or a tail too large): say so instead.
        msg = wire::build(req.op(), req.header.seq, msg.error().value(), body, {}, {}, 0);
        if (!msg) {
            drop(c, "cannot reply");
            return;
        }
    }
    post(c, std::move(msg.value()));
}

void Daemon::reply_error(Conn& c, const wire::Message& req, std::error_code ec) {
    reply(c, req, ec.value() > 0 ? ec.value() : EIO, wire::as_bytes(wire::Empty{}));
}

void Daemon::dispatch(Conn& c, wire::Message& req) {
    if (req.header.seq == 0 || req.header.op == 0 ||
        req.header.op > static_cast<uint16_t>(Op::last_) || (req.header.flags & wire::kFlagMore)) {
        drop(c, "not a request");
        return;
    }
    if (c.role == Conn::Role::none) {
        if (req.op() != Op::hello) {
            drop(c, "no hello");
            return;
        }
        on_hello(c, req);
        return;
    }
    // No request takes fds (bulk tails were consumed by wire::receive).
    if (!req.fds.empty()) {
        reply_error(c, req, err(EINVAL));
        return;
    }
    const bool attached = c.role == Conn::Role::attached;
    switch (req.op()) {
        case Op::hello:
            reply_error(c, req, err(EISCONN));
            return;
        case Op::create_domain:
        case Op::destroy_domain:
        case Op::grant_table:
            if (attached) {
                reply_error(c, req, err(EPERM));  // toolstack calls use their own connection
                return;
            }
            on_toolstack(c, req);
            return;
        case Op::list_domains:
        case Op::domain_alive:
            if (c.acting_for != 0 && !may_query(c, req)) {
                reply_error(c, req, err(EPERM));
                return;
            }
            on_toolstack(c, req);
            return;
        case Op::evtchn_bound:
        case Op::evtchn_unbound:
        case Op::store_event:
            drop(c, "sent a daemon-only message");
            return;
        default:
            break;
    }
    if (!attached) {
        reply_error(c, req, err(EPERM));
        return;
    }
    if (c.acting_for != 0 && !may_act(c, req)) {
        reply_error(c, req, err(EPERM));
        return;
    }
    switch (req.op()) {
        case Op::grant_map:
        case Op::grant_unmap:
        case Op::share:
        case Op::share_end_access:
        case Op::share_release:
        case Op::share_revoke:
        case Op::foreign_map:
        case Op::grant_usage:
            on_grants(c, req);
            return;
        case Op::evtchn_open:
        case Op::evtchn_sync:
        case Op::evtchn_bind_unbound:
        case Op::evtchn_bind_interdomain:
        case Op::evtchn_unbind:
            on_events(c, req);
            return;
        default:
            on_store(c, req);
            return;
    }
}

// A connection acting for one guest (attach_acting_for): only that guest's liveness.
bool Daemon::may_query(const Conn& c, const wire::Message& req) const {
    if (req.op() != Op::domain_alive || !req.body_is<wire::DomainReq>()) {
        return false;  // no domain list
    }
    const DomId id = req.body_as<wire::DomainReq>().domid;
    return id == c.acting_for || id == c.dom;
}

// A connection acting for one guest: grants, shares and event channels with that guest
// only, no foreign memory. Malformed bodies pass on to be refused as such.
bool Daemon::may_act(const Conn& c, const wire::Message& req) const {
    const auto with_guest = [&](DomId other) { return other == c.acting_for; };
    switch (req.op()) {
        case Op::grant_map:
            return !req.body_is<wire::MapReq>() || with_guest(req.body_as<wire::MapReq>().domid);
        case Op::foreign_map:
            return false;
        case Op::share:
            return !req.body_is<wire::ShareReq>() || with_guest(req.body_as<wire::ShareReq>().peer);
        case Op::grant_usage:
            return !req.body_is<wire::DomainReq>() ||
                   with_guest(req.body_as<wire::DomainReq>().domid);
        case Op::evtchn_bind_unbound:
            return !req.body_is<wire::BindUnboundReq>() ||
                   with_guest(req.body_as<wire::BindUnboundReq>().remote);
        case Op::evtchn_bind_interdomain:
            return !req.body_is<wire::BindInterdomainReq>() ||
                   with_guest(req.body_as<wire::BindInterdomainReq>().remote);
        default:
            return true;  // its own maps, shares and ports; the store checks its paths
    }
}

void Daemon::on_hello(Conn& c, const wire::Message& req) {
    if (!req.body_is<wire::HelloReq>() || !req.tail.empty() || !req.fds.empty()) {
        drop(c, "bad hello");
        return;
    }
    const auto hello = req.body_as<wire::HelloReq>();
    if (hello.role == static_cast<uint32_t>(wire::Role::control)) {
        c.role = Conn::Role::control;
        reply_body(c, req, wire::HelloRep{0, 0, 0});
        return;
    }
    if (hello.role != static_cast<uint32_t>(wire::Role::attach)) {
        reply_error(c, req, err(EINVAL));
        return;
    }
    if (hello.acting_for != 0 && (hello.domid != 0 || hello.acting_for >= kDomIdFirstReserved)) {
        reply_error(c, req, err(EINVAL));  // only dom0 acts for a guest
        return;
    }
    if (auto r = attach(c, hello.domid); !r) {
        reply_error(c, req, r.error());
        return;
    }
    c.acting_for = hello.acting_for;
    reply_body(c, req, wire::HelloRep{c.dom, static_cast<uint16_t>(c.dom == 0 ? 1 : 0), 0});
}

void Daemon::on_toolstack(Conn& c, const wire::Message& req) {
    switch (req.op()) {
        case Op::create_domain: {
            if (!req.body_is<wire::CreateReq>()) break;
            auto id = create_domain(req.tail_text(), req.body_as<wire::CreateReq>().ram_pages);
            if (!id) {
                reply_error(c, req, id.error());
                return;
            }
            reply_body(c, req, wire::DomainReq{id.value(), {}});
            return;
        }
        case Op::destroy_domain: {
            if (!req.body_is<wire::DomainReq>() || !req.tail.empty()) break;
            auto r = destroy_domain(req.body_as<wire::DomainReq>().domid, true, c.pid);
            if (!r) {
                reply_error(c, req, r.error());
                return;
            }
            reply_body(c, req, wire::Empty{});
            return;
        }
        case Op::list_domains: {
            if (!req.body_is<wire::Empty>() || !req.tail.empty()) break;
            std::vector<wire::DomainEntry> entries;
            for (const auto& [id, d] : domains_) {
                wire::DomainEntry e{};
                e.domid = id;
                e.alive = d.dying ? 0 : 1;
                e.name_len = static_cast<uint8_t>(std::min(d.name.size(), sizeof e.name));
                std::memcpy(e.name, d.name.data(), e.name_len);
                const uint64_t mapped = maps_of(d);
                uint64_t ports = 0;
                for (const ConnKey key : d.conns) {
                    if (const auto it = conns_.find(key); it != conns_.end()) {
                        ports += it->second->ports.size();
                    }
                }
                constexpr uint64_t kMax = UINT32_MAX;
                e.mapped_pages = static_cast<uint32_t>(std::min(mapped, kMax));
                e.shared_pages = static_cast<uint32_t>(std::min(d.used_pages, kMax));
                e.bound_ports = static_cast<uint32_t>(std::min(ports, kMax));
                entries.push_back(e);
            }
            const wire::ListRep rep{static_cast<uint32_t>(entries.size()), 0};
            reply(c, req, 0, wire::as_bytes(rep),
                  wire::bytes_of(std::span<const wire::DomainEntry>(entries)));
            return;
        }
        case Op::domain_alive: {
            if (!req.body_is<wire::DomainReq>() || !req.tail.empty()) break;
            const DomId id = req.body_as<wire::DomainReq>().domid;
            if (id >= kDomIdSelf) break;
            reply_body(c, req, wire::AliveRep{live_domain(id) != nullptr ? 1u : 0u, 0});
            return;
        }
        case Op::grant_table: {
            if (!req.body_is<wire::DomainReq>() || !req.tail.empty()) break;
            Domain* d = live_domain(req.body_as<wire::DomainReq>().domid);
            if (d == nullptr) {
                reply_error(c, req, err(ESRCH));
                return;
            }
            std::vector<UniqueFd> fds;
            fds.emplace_back(::fcntl(d->grants->memfd(), F_DUPFD_CLOEXEC, 0));
            if (!fds.back()) {
                reply_error(c, req, err(errno));
                return;
            }
            const wire::TableRep rep{d->grants->size(), 0};
            reply(c, req, 0, wire::as_bytes(rep), {}, std::move(fds));
            return;
        }
        default:
            break;
    }
    reply_error(c, req, err(EINVAL));
}

void Daemon::on_grants(Conn& c, const wire::Message& req) {
    switch (req.op()) {
        case Op::grant_map: {
            if (!req.body_is<wire::MapReq>()) break;
            const auto body = req.body_as<wire::MapReq>();
            if (body.count == 0 || body.count > wire::kMaxBatch || body.writable > 1 ||
                (body.notify & ~(wire::kNotifyClearByte | wire::kNotifySendEvent)) != 0 ||
                !tail_holds<GrantRef>(req, body.count)) {
                break;
            }
            const auto refs = wire::items_of<GrantRef>(req.tail);
            MapResult result;
            if (auto r = map_grants(c, body, refs, result); !r) {
                const wire::MapRep rep{0, result.failed, 0};
                reply(c, req, r.error().value(), wire::as_bytes(rep));
                return;
            }
            reply_runs(c, req, result.map_id, result.pages, body.writable != 0);
            return;
        }
        case Op::foreign_map: {
            if (!req.body_is<wire::ForeignReq>()) break;
            const auto body = req.body_as<wire::ForeignReq>();
            if (body.count == 0 || body.count > wire::kMaxBatch || body.writable > 1 ||
                !tail_holds<uint64_t>(req, body.count)) {
                break;
            }
            const auto gfns = wire::items_of<uint64_t>(req.tail);
            std::vector<Resolved> pages;
            if (auto r = foreign_map(c, body.domid, gfns, pages); !r) {
                reply(c, req, r.error().value(), wire::as_bytes(wire::MapRep{}));
                return;
            }
            reply_runs(c, req, 0, pages, body.writable != 0);
            return;
        }
        case Op::grant_unmap: {
            if (!req.body_is<wire::IdReq>() || !req.tail.empty()) break;
            auto r = unmap_grants(c, req.body_as<wire::IdReq>().id);
            if (!r) {
                reply_error(c, req, r.error());
                return;
            }
            reply_body(c, req, wire::Empty{});
            return;
        }
        case Op::share: {
            if (!req.body_is<wire::ShareReq>() || !req.tail.empty()) break;
            const auto body = req.body_as<wire::ShareReq>();
            if (body.pages == 0 || body.pages > wire::kMaxBatch || body.writable > 1 ||
                (body.notify & ~(wire::kNotifyClearByte | wire::kNotifySendEvent)) != 0 ||
                body.pad != 0) {
                break;
            }
            std::vector<GrantRef> refs;
            UniqueFd fd;
            auto id = share(c, body, refs, fd);
            if (!id) {
                reply_error(c, req, id.error());
                return;
            }
            std::vector<UniqueFd> fds;
            fds.push_back(std::move(fd));
            reply(c, req, 0, wire::as_bytes(wire::ShareRep{id.value()}),
                  wire::bytes_of(std::span<const GrantRef>(refs)), std::move(fds));
            return;
        }
        case Op::grant_usage: {
            if (!req.body_is<wire::DomainReq>() || !req.tail.empty()) break;
            const Domain* d = live_domain(c.dom);
            if (d == nullptr) {
                reply_error(c, req, err(ESRCH));
                return;
            }
            const DomId peer = req.body_as<wire::DomainReq>().domid;
            reply_body(c, req, wire::UsageRep{d->grants->held_by(peer), d->grants->capacity()});
            return;
        }
        case Op::share_end_access:
        case Op::share_release:
        case Op::share_revoke: {
            if (!req.body_is<wire::IdReq>() || !req.tail.empty()) break;
            auto r = end_share(c, req.body_as<wire::IdReq>().id, req.op());
            if (!r) {
                reply_error(c, req, r.error());
                return;
            }
            reply_body(c, req, wire::Empty{});
            return;
        }
        default:
            break;
    }
    reply_error(c, req, err(EINVAL));
}

void Daemon::on_events(Conn& c, const wire::Message& req) {
    switch (req.op()) {
        case Op::evtchn_open: {
            if (!req.body_is<wire::Empty>() || !req.tail.empty()) break;
            EventsOpened opened;
            if (auto r = open_events(c, opened); !r) {
                reply_error(c, req, r.error());
                return;
            }
            std::vector<UniqueFd> fds;
            fds.push_back(std::move(opened.inbox));
            fds.push_back(std::move(opened.self_outbox));
            reply(c, req, 0, wire::as_bytes(opened.rep), {}, std::move(fds));
            return;
        }
        case Op::evtchn_sync:
            if (!req.body_is<wire::Empty>() || !req.tail.empty()) break;
            reply_body(c, req, wire::Empty{});
            return;
        case Op::evtchn_bind_unbound: {
            if (!req.body_is<wire::BindUnboundReq>() || !req.tail.empty()) break;
            auto port = bind_unbound(c, req.body_as<wire::BindUnboundReq>().remote);
            if (!port) {
                reply_error(c, req, port.error());
                return;
            }
            reply_body(c, req, wire::PortMsg{port.value(), 0});
            return;
        }
        case Op::evtchn_bind_interdomain: {
            if (!req.body_is<wire::BindInterdomainReq>() || !req.tail.empty()) break;
            const auto body = req.body_as<wire::BindInterdomainReq>();
            BoundEnd end;
            auto port = bind_interdomain(c, body.remote, body.remote_port, end);
            if (!port) {
                reply_error(c, req, port.error());
                return;
            }
            std::vector<UniqueFd> fds;
            fds.push_back(std::move(end.outbox));
            fds.push_back(std::move(end.peer_outbox));
            const wire::BoundMsg rep{port.value(), 0, end.peer};
            reply(c, req, 0, wire::as_bytes(rep), {}, std::move(fds));
            return;
        }
        case Op::evtchn_unbind: {
            if (!req.body_is<wire::PortMsg>() || !req.tail.empty()) break;
            auto r = unbind(c, req.body_as<wire::PortMsg>().port);
            if (!r) {
                reply_error(c, req, r.error());
                return;
            }
            reply_body(c, req, wire::Empty{});
            return;
        }
        default:
            break;
    }
    reply_error(c, req, err(EINVAL));
}

}  // namespace xenhsa::xen::sim::daemon
