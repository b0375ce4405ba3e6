// GrantMapper of the simulated hypervisor: the daemon pins the grants (all or nothing,
// per-element errnos) and hands back memfd runs of the granter's segments, which are
// mapped here, read-only fds for read-only maps. Unmap unpins in the daemon (which also
// performs the unmap notification); a mapping process that dies is unpinned by the daemon.
#include <sys/mman.h>

#include <algorithm>
#include <limits>
#include <map>
#include <new>

#include "components.hpp"
#include "vm.hpp"

namespace xenhsa::xen::sim::client {

namespace {

// 0 before `failed`, the error at it, ECANCELED after: the seam's per-element contract.
void fill_status(std::span<int> status, std::size_t failed, int err) noexcept {
    for (std::size_t i = 0; i < status.size(); ++i) {
        status[i] = i < failed ? 0 : i == failed ? err : ECANCELED;
    }
}

class SimGrantMapper final : public GrantMapper {
public:
    explicit SimGrantMapper(Channel ch) noexcept : ch_(std::move(ch)) {}

    Result<GrantMapping> map(const GrantMapSpec& spec, std::span<int> status) override {
        const std::size_t n = spec.refs.size();
        if (n == 0 || (!status.empty() && status.size() != n)) return errno_code(EINVAL);
        if (n > wire::kMaxBatch || spec.domid == kDomIdInvalid ||
            reinterpret_cast<uintptr_t>(spec.at) % kPageSize != 0 ||
            reinterpret_cast<uintptr_t>(spec.at) >
                std::numeric_limits<uintptr_t>::max() - n * kPageSize) {
            fill_status(status, 0, EINVAL);
            return errno_code(EINVAL);
        }
        wire::MapReq req{};
        req.domid = spec.domid;
        req.writable = spec.writable ? 1 : 0;
        req.count = static_cast<uint32_t>(n);
        return do_map(req, spec.refs, spec.at, status);
    }

    Result<GrantMapping> map_notify(DomId domid, GrantRef ref, bool writable,
                                    const UnmapNotify& notify) override {
        wire::MapReq req{};
        req.domid = domid;
        req.writable = writable ? 1 : 0;
        req.count = 1;
        if (notify.clear_byte_at) {
            // As gntdev: the byte is cleared through the mapping, so it must be writable.
            if (*notify.clear_byte_at >= kPageSize || !writable) return errno_code(EINVAL);
            req.notify |= wire::kNotifyClearByte;
            req.clear_byte_at = *notify.clear_byte_at;
        }
        if (notify.port) {
            if (*notify.port == static_cast<Port>(-1)) return errno_code(EINVAL);
            req.notify |= wire::kNotifySendEvent;
            req.notify_port = *notify.port;
        }
        if (domid == kDomIdInvalid) return errno_code(EINVAL);
        return do_map(req, std::span<const GrantRef>(&ref, 1), nullptr, {});
    }

protected:
    void unmap(std::byte* addr, std::size_t pages, bool fixed) noexcept override {
        auto it = maps_.find(addr);
        if (it == maps_.end()) fatal("grant unmap of an unknown mapping", EINVAL);
        const wire::IdReq req{it->second};
        maps_.erase(it);
        if (fixed) {
            rereserve(addr, pages * kPageSize);
        } else {
            unmap_pages(addr, pages);
        }
        // Synchronous: once unmap returns, the granter can end access.
        auto done = ch_.call_small(wire::Op::grant_unmap, wire::as_bytes(req));
        if (!done && !is_disconnect(done.error())) fatal("grant unmap", done.error().value());
    }

private:
    static void unmap_pages(std::byte* addr, std::size_t pages) noexcept {
        client::unmap(addr, pages * kPageSize);
    }

    Result<GrantMapping> do_map(const wire::MapReq& req, std::span<const GrantRef> refs,
                                std::byte* at, std::span<int> status) {
        const std::size_t n = refs.size();
        auto replies =
            ch_.call_multi(wire::Op::grant_map, wire::as_bytes(req), wire::bytes_of(refs));
        if (!replies) {
            fill_status(status, 0, replies.error().value());
            return replies.error();
        }
        const wire::Message& first = replies.value().front();
        const bool has_rep = first.body_is<wire::MapRep>();
        if (auto ok = check(first); !ok) {
            // The failing element, when the daemon got as far as the pins.
            const std::size_t failed = has_rep ? first.body_as<wire::MapRep>().failed : 0;
            fill_status(status, std::min(failed, n), ok.error().value());
            return ok.error();
        }
        if (!has_rep) fatal("grant map: malformed reply", EPROTO);
        const auto rep = first.body_as<wire::MapRep>();
        const std::size_t len = n * kPageSize;
        std::byte* base = at;
        if (base == nullptr) {
            auto r = reserve(len);
            if (!r) return undo(rep.map_id, Range::none, nullptr, 0, r.error().value(), status);
            base = r.value();
        }
        const Range range = at != nullptr ? Range::callers : Range::ours;
        const int prot = PROT_READ | (req.writable != 0 ? PROT_WRITE : 0);
        std::size_t failed = 0;
        if (auto mapped = map_runs(base, n, replies.value(), prot, failed); !mapped) {
            if (mapped.error().value() == EPROTO) fatal("grant map: malformed runs", EPROTO);
            return undo(rep.map_id, range, base, len, mapped.error().value(), status, failed);
        }
        try {
            maps_.emplace(base, rep.map_id);
        } catch (const std::bad_alloc&) {
            return undo(rep.map_id, range, base, len, ENOMEM, status);
        }
        return GrantMapping(this, base, n, at != nullptr);
    }

    // Whose reservation a failed map leaves behind.
    enum class Range { none, callers, ours };

    // Undoes a map the daemon made: the address range (the caller's reservation is put
    // back, ours is unmapped), then the pins.
    Result<GrantMapping> undo(uint64_t map_id, Range range, std::byte* base, std::size_t len,
                              int err, std::span<int> status, std::size_t failed = 0) {
        if (range == Range::callers) rereserve(base, len);
        if (range == Range::ours) client::unmap(base, len);
        const wire::IdReq req{map_id};
        auto done = ch_.call_small(wire::Op::grant_unmap, wire::as_bytes(req));
        if (!done && !is_disconnect(done.error())) fatal("grant unmap", done.error().value());
        fill_status(status, failed, err);
        return errno_code(err);
    }

    Channel ch_;
    std::map<std::byte*, uint64_t> maps_;  // mapping address -> the daemon's map id
};

}  // namespace

Result<std::unique_ptr<GrantMapper>> make_grant_mapper(Channel ch) {
    try {
        return std::unique_ptr<GrantMapper>(std::make_unique<SimGrantMapper>(std::move(ch)));
    } catch (const std::bad_alloc&) {
        return errno_code(ENOMEM);
    }
}

}  // namespace xenhsa::xen::sim::client
