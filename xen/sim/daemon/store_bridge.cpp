// The store behind the socket: each client Store is one StoreTree connection of its
// domain. Relative paths are relative to the domain's home, as in xenstored, and the
// events of a watch registered with a relative path carry relative paths.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>

#include "daemon.hpp"

namespace xenhsa::xen::sim::daemon {

namespace {

using wire::Op;

bool is_child(std::string_view child, std::string_view parent) {
    if (parent == "/" || child == parent) return true;
    return child.size() > parent.size() && child.substr(0, parent.size()) == parent &&
           child[parent.size()] == '/';
}

template <class T>
std::span<const std::byte> bytes(const std::vector<T>& v) {
    return wire::bytes_of(std::span<const T>(v));
}

}  // namespace

Result<ConnId> Daemon::store_conn(Conn& c) {
    if (!c.store) {
        auto id = store_.open_connection(c.dom);
        if (!id) return id.error();
        c.store = id.value();
    }
    return *c.store;
}

bool Daemon::store_path_allowed(const Conn& c, std::string_view path) {
    if (path.starts_with('@')) return true;  // @releaseDomain and the like: watches
    const std::string guest = std::to_string(c.acting_for);
    return is_child(path, "/local/domain/" + guest + "/device/xenhsa") ||
           is_child(path, "/local/domain/0/backend/xenhsa/" + guest);
}

std::string Daemon::store_path(const Conn& c, std::string_view path) const {
    if (path.empty() || path.front() == '/' || path.front() == '@') return std::string(path);
    return home_of(c.dom) + "/" + std::string(path);
}

void Daemon::on_store(Conn& c, const wire::Message& req) {
    auto sc = store_conn(c);
    if (!sc) {
        reply_error(c, req, sc.error());
        return;
    }
    const ConnId id = sc.value();
    if (req.op() == Op::store_tx_start) {
        if (!req.body_is<wire::Empty>() || !req.tail.empty()) {
            reply_error(c, req, errno_code(EINVAL));
            return;
        }
        auto tx = store_.transaction_start(id);
        if (!tx) {
            reply_error(c, req, tx.error());
            return;
        }
        reply_body(c, req, wire::TxRep{tx.value(), 0});
        return;
    }
    if (req.op() == Op::store_tx_end) {
        if (!req.body_is<wire::TxReq>() || !req.tail.empty() ||
            req.body_as<wire::TxReq>().commit > 1) {
            reply_error(c, req, errno_code(EINVAL));
            return;
        }
        const auto body = req.body_as<wire::TxReq>();
        auto r = store_.transaction_end(id, body.tx, body.commit != 0);
        if (!r) {
            reply_error(c, req, r.error());
            return;
        }
        reply_body(c, req, wire::Empty{});
        return;
    }

    if (!req.body_is<wire::StoreReq>()) {
        reply_error(c, req, errno_code(EINVAL));
        return;
    }
    const auto body = req.body_as<wire::StoreReq>();
    const std::string_view text = req.tail_text();
    if (std::size_t{body.path_len} + body.arg_len != text.size()) {
        reply_error(c, req, errno_code(EINVAL));
        return;
    }
    const std::string_view raw_path = text.substr(0, body.path_len);
    const std::string_view arg = text.substr(body.path_len);
    const bool takes_arg = req.op() == Op::store_write || req.op() == Op::store_set_perms ||
                           req.op() == Op::store_watch || req.op() == Op::store_unwatch;
    const bool is_watch = req.op() == Op::store_watch || req.op() == Op::store_unwatch;
    // Paths and tokens are C strings in xenstored.
    if (raw_path.find('\0') != std::string_view::npos || (!takes_arg && !arg.empty()) ||
        (is_watch && (body.tx != kNoTx || arg.find('\0') != std::string_view::npos))) {
        reply_error(c, req, errno_code(EINVAL));
        return;
    }
    const std::string path = store_path(c, raw_path);
    if (c.acting_for != 0 && !store_path_allowed(c, path)) {
        reply_error(c, req, errno_code(EACCES));
        return;
    }
    const TxId tx = body.tx;
    const wire::Empty empty_body{};
    const auto empty = wire::as_bytes(empty_body);

    auto done = [&](Result<void> r) {
        if (!r) {
            reply_error(c, req, r.error());
        } else {
            reply(c, req, 0, empty);
        }
    };
    switch (req.op()) {
        case Op::store_read: {
            auto value = store_.read(id, path, tx);
            if (!value) {
                reply_error(c, req, value.error());
                return;
            }
            reply(c, req, 0, empty, std::as_bytes(std::span(value.value())));
            return;
        }
        case Op::store_write:
            done(store_.write(id, path, arg, tx));
            return;
        case Op::store_mkdir:
            done(store_.mkdir(id, path, tx));
            return;
        case Op::store_rm:
            done(store_.rm(id, path, tx));
            return;
        case Op::store_directory: {
            auto names = store_.directory(id, path, tx);
            if (!names) {
                reply_error(c, req, names.error());
                return;
            }
            std::string joined;
            for (const std::string& n : names.value()) {
                joined += n;
                joined += '\0';
            }
            reply(c, req, 0, empty, std::as_bytes(std::span(joined)));
            return;
        }
        case Op::store_get_perms: {
            auto perms = store_.get_perms(id, path, tx);
            if (!perms) {
                reply_error(c, req, perms.error());
                return;
            }
            std::vector<wire::StorePermWire> list;
            for (const StorePerm& p : perms.value()) {
                list.push_back({p.domid, static_cast<uint8_t>(p.access), 0});
            }
            reply(c, req, 0, empty, bytes(list));
            return;
        }
        case Op::store_set_perms: {
            if (arg.size() % sizeof(wire::StorePermWire) != 0) break;
            PermList perms;
            for (const auto& w :
                 wire::items_of<wire::StorePermWire>(std::as_bytes(std::span(arg)))) {
                if (w.access > static_cast<uint8_t>(StoreAccess::both) || w.pad != 0) {
                    reply_error(c, req, errno_code(EINVAL));
                    return;
                }
                perms.push_back({w.domid, static_cast<StoreAccess>(w.access)});
            }
            done(store_.set_perms(id, path, perms, tx));
            return;
        }
        case Op::store_watch: {
            auto r = store_.watch(id, path, arg);
            if (r && path != raw_path) c.relative_watches.push_back({path, std::string(arg)});
            done(r);
            return;
        }
        case Op::store_unwatch: {
            auto r = store_.unwatch(id, path, arg);
            if (r) {
                auto it = std::find_if(c.relative_watches.begin(), c.relative_watches.end(),
                                       [&](const RelativeWatch& w) {
                                           return w.absolute_path == path && w.token == arg;
                                       });
                if (it != c.relative_watches.end()) c.relative_watches.erase(it);
            }
            done(r);
            return;
        }
        default:
            break;
    }
    reply_error(c, req, errno_code(EINVAL));
}

// Watch events go out while a connection has nothing else queued; the rest wait in the
// StoreTree's bounded per-connection queue (oldest dropped when full, as xenstored does).
void Daemon::flush_watch_events() {
    for (auto& [key, cp] : conns_) {
        Conn& c = *cp;
        if (!c.store || c.closing) continue;
        while (c.out.empty() && !c.closing) {
            auto ev = store_.next_event(*c.store);
            if (!ev || !ev.value()) break;
            WatchEvent& e = *ev.value();
            const std::string home = home_of(c.dom) + "/";
            const bool relative = std::any_of(
                c.relative_watches.begin(), c.relative_watches.end(), [&](const RelativeWatch& w) {
                    return w.token == e.token && is_child(e.path, w.absolute_path);
                });
            if (relative && e.path.starts_with(home)) e.path.erase(0, home.size());
            const std::string tail = e.path + e.token;
            const wire::StoreReq body{0, static_cast<uint32_t>(e.path.size()),
                                      static_cast<uint32_t>(e.token.size()), 0};
            auto out = wire::build(Op::store_event, 0, 0, wire::as_bytes(body),
                                   std::as_bytes(std::span(tail)), {});
            if (!out) break;
            post(c, std::move(out.value()));
        }
    }
}

void Daemon::release_store(Conn& c) noexcept {
    if (c.store) (void)store_.close_connection(*c.store);
    c.store.reset();
    c.relative_watches.clear();
}

}  // namespace xenhsa::xen::sim::daemon
