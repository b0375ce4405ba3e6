// Grant sharing and mapping, and foreign maps: the hypervisor's side of gntalloc, gntdev
// and privcmd. Pins go through sim::GrantTable on the granter's table (Xen's flag
// protocol; the guest may rewrite its entries at any moment, so what a pin returns is the
// only thing trusted), frames resolve to segment pages in the granter's gfn space.
#include <fcntl.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>

#include "daemon.hpp"

namespace xenhsa::xen::sim::daemon {

namespace {

using boost::outcome_v2::success;

// Runs per map reply message: keeps the tail inline.
constexpr std::size_t kRunsPerMessage = 4000;

Result<UniqueFd> dup_fd(int fd) {
    UniqueFd copy(::fcntl(fd, F_DUPFD_CLOEXEC, 0));
    if (!copy) return errno_code(errno);
    return copy;
}

}  // namespace

uint64_t Daemon::maps_of(const Domain& d) const noexcept {
    uint64_t mapped = 0;
    for (const ConnKey key : d.conns) {
        if (const auto it = conns_.find(key); it != conns_.end()) {
            mapped += it->second->mapped_pages;
        }
    }
    return mapped;
}

Result<uint64_t> Daemon::share(Conn& c, const wire::ShareReq& req, std::vector<GrantRef>& refs,
                               UniqueFd& segment_fd) {
    const DomId peer = req.peer;
    const uint64_t pages = req.pages;
    const bool writable = req.writable != 0;
    const bool clear = (req.notify & wire::kNotifyClearByte) != 0;
    const bool send = (req.notify & wire::kNotifySendEvent) != 0;
    Domain* d = live_domain(c.dom);
    if (d == nullptr) return errno_code(ESRCH);
    if (peer >= kDomIdFirstReserved) return errno_code(EINVAL);
    if (clear && req.clear_byte_at >= kPageSize) return errno_code(EINVAL);
    if (send && d->ports.find(req.notify_port) == nullptr) return errno_code(EINVAL);
    if (pages > d->ram_pages - d->used_pages) return errno_code(ENOMEM);
    if (pages > d->grants->free_refs()) return errno_code(ENOSPC);  // before making the memfd
    auto gfn = d->grants->take_gfns(pages);
    if (!gfn) return gfn.error();
    auto seg = Segment::create(d->id, gfn.value(), pages);
    if (!seg) return seg.error();
    auto fd = dup_fd(seg.value()->rw.get());
    if (!fd) return fd.error();
    const uint64_t id = next_id_++;
    ShareRecord& rec = c.shares[id];  // first, so that a bad_alloc leaves nothing granted
    auto granted = d->grants->grant(seg.value(), peer, !writable);
    if (!granted) {
        c.shares.erase(id);
        return granted.error();
    }
    rec.table = d->grants;
    rec.segment = std::move(seg.value());
    rec.refs = std::move(granted.value());
    if (clear) rec.clear_byte = req.clear_byte_at;
    if (send) {
        rec.notify_port = req.notify_port;
        hold_port(*d, req.notify_port);
    }
    d->used_pages += pages;
    refs = rec.refs;
    segment_fd = std::move(fd.value());
    return id;
}

Result<void> Daemon::end_share(Conn& c, uint64_t id, wire::Op how) {
    auto it = c.shares.find(id);
    if (it == c.shares.end()) return errno_code(EINVAL);
    ShareRecord& rec = it->second;
    switch (how) {
        case wire::Op::share_end_access:
            if (auto r = rec.table->end_access(rec.refs); !r) return r;
            break;
        case wire::Op::share_release:
            rec.table->release(rec.refs);
            break;
        default:  // share_revoke
            rec.table->revoke(rec.refs);
            rec.segment->truncate();
            break;
    }
    if (Domain* d = any_domain(c.dom); d != nullptr) d->used_pages -= rec.segment->pages;
    notify_share_end(c, rec);
    c.shares.erase(it);
    return success();
}

void Daemon::notify_share_end(const Conn& c, ShareRecord& rec) noexcept {
    if (rec.clear_byte) {
        rec.segment->clear_byte(0, *rec.clear_byte);
        rec.clear_byte.reset();
    }
    if (rec.notify_port) {
        if (Domain* d = any_domain(c.dom); d != nullptr) {
            if (const PortEntry* e = d->ports.find(*rec.notify_port); e != nullptr) e->notify();
        }
        unhold_port(c.dom, *rec.notify_port);
        rec.notify_port.reset();
    }
}

Result<void> Daemon::map_grants(Conn& c, const wire::MapReq& req, std::span<const GrantRef> refs,
                                MapResult& out) {
    out.failed = 0;
    Domain* mapper = live_domain(c.dom);
    if (mapper == nullptr) return errno_code(ESRCH);
    const DomId granter_id = req.domid == kDomIdSelf ? c.dom : req.domid;
    const bool writable = req.writable != 0;
    const bool clear = (req.notify & wire::kNotifyClearByte) != 0;
    const bool send = (req.notify & wire::kNotifySendEvent) != 0;
    if ((clear || send) && refs.size() != 1) return errno_code(EINVAL);
    if (clear && (req.clear_byte_at >= kPageSize || !writable)) return errno_code(EINVAL);
    if (send && mapper->ports.find(req.notify_port) == nullptr) return errno_code(EINVAL);
    Domain* granter = live_domain(granter_id);
    if (granter == nullptr) return errno_code(ESRCH);
    // Xen's maptrack: the mapping domain's table, whichever of its processes maps.
    const uint64_t maps = std::min(maps_of(*mapper), options_.maptrack_entries);
    if (refs.size() > options_.maptrack_entries - maps) return errno_code(ENOSPC);

    const std::shared_ptr<GranterTable> table = granter->grants;
    std::vector<uint64_t> frames(refs.size());
    std::vector<int> status(refs.size());
    if (auto pinned = table->hypervisor().pin_batch(refs, c.dom, writable, frames, status);
        !pinned) {
        const auto bad = std::find_if(status.begin(), status.end(), [](int s) { return s != 0; });
        out.failed = static_cast<uint32_t>(bad - status.begin());
        return pinned.error();
    }
    auto unpin_all = [&] {
        for (const GrantRef ref : refs) table->unpin(ref, writable);
    };
    try {
        out.pages.resize(refs.size());
        for (std::size_t i = 0; i < refs.size(); ++i) {
            out.pages[i] = table->resolve(frames[i]);
            if (!out.pages[i].segment) {  // a hole in the granter's gfn space
                unpin_all();
                out.failed = static_cast<uint32_t>(i);
                out.pages.clear();
                return errno_code(EFAULT);
            }
        }
        MapRecord rec;
        rec.table = table;
        rec.refs.assign(refs.begin(), refs.end());
        rec.writable = writable;
        if (clear) {
            rec.notify_segment = out.pages[0].segment;
            rec.notify_page = out.pages[0].page;
            rec.clear_byte = req.clear_byte_at;
        }
        const uint64_t id = next_id_;
        c.maps.emplace(id, std::move(rec));
        ++next_id_;
        if (send) {
            c.maps[id].notify_port = req.notify_port;
            hold_port(*mapper, req.notify_port);
        }
        c.mapped_pages += refs.size();
        out.map_id = id;
        return success();
    } catch (const std::bad_alloc&) {
        unpin_all();
        out.pages.clear();
        return errno_code(ENOMEM);
    }
}

Result<void> Daemon::unmap_grants(Conn& c, uint64_t id) {
    auto it = c.maps.find(id);
    if (it == c.maps.end()) return errno_code(EINVAL);
    release_map(c, it->second);
    c.mapped_pages -= it->second.refs.size();
    c.maps.erase(it);
    return success();
}

// gntdev's order: clear the byte, unmap (unpin), then notify.
void Daemon::release_map(Conn& c, MapRecord& rec) noexcept {
    if (rec.clear_byte && rec.notify_segment) {
        rec.notify_segment->clear_byte(rec.notify_page, *rec.clear_byte);
    }
    for (const GrantRef ref : rec.refs) rec.table->unpin(ref, rec.writable);
    if (rec.notify_port) {
        if (Domain* d = any_domain(c.dom); d != nullptr) {
            if (const PortEntry* e = d->ports.find(*rec.notify_port); e != nullptr) e->notify();
        }
        unhold_port(c.dom, *rec.notify_port);
        rec.notify_port.reset();
    }
}

void Daemon::release_grants(Conn& c) noexcept {
    for (auto& [id, rec] : c.maps) release_map(c, rec);
    c.maps.clear();
    c.mapped_pages = 0;
    Domain* d = any_domain(c.dom);
    for (auto& [id, rec] : c.shares) {
        rec.table->release(rec.refs);  // deferred while the peer still maps them
        if (d != nullptr) d->used_pages -= rec.segment->pages;
        notify_share_end(c, rec);  // the sharing process's mapping is gone
    }
    c.shares.clear();
}

Result<void> Daemon::foreign_map(Conn& c, DomId domid, std::span<const uint64_t> gfns,
                                 std::vector<Resolved>& out) {
    if (c.dom != 0) return errno_code(EPERM);
    Domain* d = live_domain(domid == kDomIdSelf ? c.dom : domid);
    if (d == nullptr) return errno_code(ESRCH);
    out.reserve(gfns.size());
    for (const uint64_t gfn : gfns) {
        out.push_back(d->grants->resolve(gfn));
        if (!out.back().segment) return errno_code(EFAULT);
    }
    return success();
}

void Daemon::reply_runs(Conn& c, const wire::Message& req, uint64_t map_id,
                        std::span<const Resolved> pages, bool writable) {
    struct Pending {
        std::vector<wire::Run> runs;
        std::vector<UniqueFd> fds;
        std::map<const Segment*, uint32_t> index;
    };
    std::vector<Pending> messages(1);
    const Segment* last = nullptr;
    std::error_code failure;
    for (const Resolved& page : pages) {
        Pending* m = &messages.back();
        const Segment* seg = page.segment.get();
        if (seg == last && !m->runs.empty() &&
            m->runs.back().page_offset + m->runs.back().pages == page.page) {
            ++m->runs.back().pages;
            continue;
        }
        auto found = m->index.find(seg);
        const bool fds_full = found == m->index.end() && m->fds.size() >= wire::kMaxFds;
        if (fds_full || m->runs.size() >= kRunsPerMessage) {
            messages.emplace_back();
            m = &messages.back();
            found = m->index.end();
        }
        if (found == m->index.end()) {
            auto source =
                writable ? Result<int>(page.segment->rw.get()) : page.segment->read_only_fd();
            auto fd = source ? dup_fd(source.value()) : Result<UniqueFd>(source.error());
            if (!fd) {
                failure = fd.error();
                break;
            }
            found = m->index.emplace(seg, static_cast<uint32_t>(m->fds.size())).first;
            m->fds.push_back(std::move(fd.value()));
        }
        m->runs.push_back({found->second, 1, page.page});
        last = seg;
    }
    if (failure) {
        if (map_id != 0) (void)unmap_grants(c, map_id);
        reply(c, req, failure.value(), wire::as_bytes(wire::MapRep{}));
        return;
    }
    for (std::size_t i = 0; i < messages.size(); ++i) {
        Pending& m = messages[i];
        const wire::MapRep rep{map_id, 0, static_cast<uint32_t>(m.runs.size())};
        const uint16_t flags = i + 1 < messages.size() ? wire::kFlagMore : 0;
        reply(c, req, 0, wire::as_bytes(rep), wire::bytes_of(std::span<const wire::Run>(m.runs)),
              std::move(m.fds), flags);
    }
}

}  // namespace xenhsa::xen::sim::daemon
