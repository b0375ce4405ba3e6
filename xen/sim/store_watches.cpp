// Watches of the simulated xenstore: registration, permission-filtered delivery into
// bounded per-connection queues, special events.
#include <algorithm>
#include <xenhsa/xen/sim/store_tree.hpp>

#include "store_detail.hpp"

namespace xenhsa::xen::sim {

namespace {

using boost::outcome_v2::success;

bool can_read(DomId dom, const PermList& perms) {
    return (detail::perm_for(dom, perms) & detail::kPermRead) != 0;
}

// xenstored watch_permitted: the node or its parent must be readable (for set_perms
// the node's old permissions count as well).
bool permitted(DomId dom, const detail::PendingEvent& ev) {
    return (ev.old_perms && can_read(dom, *ev.old_perms)) || can_read(dom, ev.perms) ||
           (ev.parent_perms && can_read(dom, *ev.parent_perms));
}

// Does an event on `path` match a watch on `watched`? Special events match exactly.
bool matches(std::string_view path, std::string_view watched) {
    return path.starts_with('@') ? path == watched : detail::is_child(path, watched);
}

}  // namespace

// --- delivery --------------------------------------------------------------------------------

void StoreTree::Impl::enqueue(Connection& c, std::string_view path, std::string_view token,
                              bool special) {
    if (!special) {
        // xenstored send_event: an identical event still queued makes this one redundant.
        for (const auto& e : c.queue) {
            if (e.path == path && e.token == token) return;
        }
    }
    if (quotas.max_queued_events == 0) {
        ++c.dropped;
        return;
    }
    if (c.queue.size() >= quotas.max_queued_events) {
        c.queue.pop_front();  // bounded memory per connection: drop the oldest, count it
        ++c.dropped;
    }
    c.queue.push_back(WatchEvent{std::string(path), std::string(token)});
}

void StoreTree::Impl::deliver(const std::vector<detail::PendingEvent>& events) {
    for (auto& [id, c] : conns) {
        if (c.watches.empty()) continue;
        for (const auto& ev : events) {
            if (!permitted(c.dom, ev)) continue;
            for (const auto& w : c.watches) {
                const bool hit = ev.exact ? ev.path == w.path : detail::is_child(ev.path, w.path);
                if (hit) enqueue(c, ev.path, w.token, false);
            }
        }
    }
}

void StoreTree::Impl::deliver_special(std::string_view name) {
    auto it = specials.find(name);
    if (it == specials.end()) return;
    for (auto& [id, c] : conns) {
        if (!can_read(c.dom, it->second)) continue;
        for (const auto& w : c.watches) {
            if (w.path == name) enqueue(c, name, w.token, true);
        }
    }
}

void StoreTree::Impl::purge_unwatched(Connection& c, const Watch& removed) {
    std::erase_if(c.queue, [&](const WatchEvent& e) {
        if (e.token != removed.token || !matches(e.path, removed.path)) return false;
        return std::none_of(c.watches.begin(), c.watches.end(), [&](const Watch& w) {
            return w.token == e.token && matches(e.path, w.path);
        });
    });
}

// --- API ---------------------------------------------------------------------------------------

Result<void> StoreTree::watch(ConnId conn, std::string_view path, std::string_view token) {
    Impl::Connection* c = impl_->conn(conn);
    if (c == nullptr) return errc(std::errc::bad_file_descriptor);
    const bool special = detail::is_special_path(path);
    if (!special && !detail::valid_node_path(path)) return errc(std::errc::invalid_argument);
    if (token.find('\0') != std::string_view::npos) return errc(std::errc::invalid_argument);
    if (path.size() + 1 + token.size() + 1 > kStoreMaxPayload) {
        return errc(std::errc::argument_list_too_long);
    }
    for (const auto& w : c->watches) {
        if (w.path == path && w.token == token) return errc(std::errc::file_exists);
    }
    if (!detail::is_privileged(c->dom) && impl_->watches_of(c->dom) >= impl_->quotas.max_watches) {
        return errc(std::errc::argument_list_too_long);  // E2BIG, as xenstored
    }
    c->watches.push_back(Impl::Watch{std::string(path), std::string(token)});
    // Fires once straight away, whatever the permissions and whether the node exists.
    impl_->enqueue(*c, path, token, special);
    return success();
}

Result<void> StoreTree::unwatch(ConnId conn, std::string_view path, std::string_view token) {
    Impl::Connection* c = impl_->conn(conn);
    if (c == nullptr) return errc(std::errc::bad_file_descriptor);
    if (!detail::is_special_path(path) && !detail::valid_node_path(path)) {
        return errc(std::errc::invalid_argument);
    }
    auto it = std::find_if(c->watches.begin(), c->watches.end(), [&](const Impl::Watch& w) {
        return w.path == path && w.token == token;
    });
    if (it == c->watches.end()) return errc(std::errc::no_such_file_or_directory);
    const Impl::Watch removed = std::move(*it);
    c->watches.erase(it);
    impl_->purge_unwatched(*c, removed);
    return success();
}

Result<std::optional<WatchEvent>> StoreTree::next_event(ConnId conn) {
    Impl::Connection* c = impl_->conn(conn);
    if (c == nullptr) return errc(std::errc::bad_file_descriptor);
    if (c->queue.empty()) return std::optional<WatchEvent>{};
    std::optional<WatchEvent> ev(std::move(c->queue.front()));
    c->queue.pop_front();
    return ev;
}

Result<std::size_t> StoreTree::pending_events(ConnId conn) const {
    const Impl::Connection* c = impl_->conn(conn);
    if (c == nullptr) return errc(std::errc::bad_file_descriptor);
    return c->queue.size();
}

Result<uint64_t> StoreTree::dropped_events(ConnId conn) const {
    const Impl::Connection* c = impl_->conn(conn);
    if (c == nullptr) return errc(std::errc::bad_file_descriptor);
    return c->dropped;
}

}  // namespace xenhsa::xen::sim
