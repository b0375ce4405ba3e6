// GrantSharer of the simulated hypervisor: each share() is a fresh memfd segment the
// daemon creates and grants (it writes the Xen v1 entries of our domain's grant table).
// revoke() is enforced: the daemon ends the grants by force and truncates the segment, so
// the peer's next access to its mapping faults (SIGBUS), and the memory is gone for good.
#include <sys/mman.h>

#include <limits>
#include <map>
#include <new>

#include "components.hpp"
#include "vm.hpp"

namespace xenhsa::xen::sim::client {

namespace {

class SimGrantSharer final : public GrantSharer {
public:
    explicit SimGrantSharer(Channel ch) noexcept : ch_(std::move(ch)) {}

    Result<SharedPages> share(const ShareSpec& spec) override {
        const auto at = reinterpret_cast<uintptr_t>(spec.at);
        if (spec.pages == 0 || spec.pages > wire::kMaxBatch || spec.peer == kDomIdInvalid ||
            at % kPageSize != 0 ||
            at > std::numeric_limits<uintptr_t>::max() - spec.pages * kPageSize) {
            return errno_code(EINVAL);
        }
        wire::ShareReq req{};
        req.pages = spec.pages;
        req.peer = spec.peer;
        req.writable = spec.writable ? 1 : 0;
        if (spec.notify.clear_byte_at) {
            req.notify |= wire::kNotifyClearByte;
            req.clear_byte_at = *spec.notify.clear_byte_at;
        }
        if (spec.notify.port) {
            req.notify |= wire::kNotifySendEvent;
            req.notify_port = *spec.notify.port;
        }
        auto reply = ch_.call(wire::Op::share, wire::as_bytes(req));
        if (!reply) return reply.error();
        if (auto ok = check(reply.value()); !ok) return ok.error();
        const wire::Message& msg = reply.value();
        if (!msg.body_is<wire::ShareRep>() || msg.fds.size() != 1 ||
            msg.tail.size() != spec.pages * sizeof(GrantRef)) {
            fatal("share: malformed reply", EPROTO);
        }
        const uint64_t id = msg.body_as<wire::ShareRep>().share_id;
        const std::size_t len = spec.pages * kPageSize;
        // With copy_bytes the view is made elsewhere and moved over `at` last.
        const bool moved = spec.at != nullptr && spec.copy_bytes != nullptr;
        std::byte* const first_at = moved ? nullptr : spec.at;
        const int flags = MAP_SHARED | (first_at != nullptr ? MAP_FIXED : 0);
        // MAP_FIXED only inside the caller's PROT_NONE reservation (ShareSpec::at).
        void* p = ::mmap(first_at, len, PROT_READ | PROT_WRITE, flags, msg.fds[0].get(), 0);
        if (p == MAP_FAILED) {
            const int err = errno;
            if (first_at != nullptr) rereserve(first_at, len);
            forget(wire::Op::share_release, id);
            return errno_code(err);
        }
        auto* addr = moved ? spec.at : static_cast<std::byte*>(p);
        try {
            auto refs = wire::items_of<GrantRef>(msg.tail);
            shares_.emplace(addr, Share{id, spec.pages, spec.at != nullptr, false});
            if (moved && !move_view_over(p, spec.at, len, spec.copy_bytes)) {
                const int err = errno;
                shares_.erase(addr);
                client::unmap(static_cast<std::byte*>(p), len);
                forget(wire::Op::share_release, id);
                return errno_code(err);
            }
            return SharedPages(this, addr, std::move(refs));
        } catch (const std::bad_alloc&) {
            shares_.erase(addr);
            drop_view(static_cast<std::byte*>(p), len, first_at != nullptr);
            forget(wire::Op::share_release, id);
            return errno_code(ENOMEM);
        }
    }

protected:
    Result<void> end_access(std::byte* addr, std::span<const GrantRef> /*refs*/) noexcept override {
        auto it = shares_.find(addr);
        if (it == shares_.end()) fatal("end_access of unknown shared pages", EINVAL);
        if (it->second.ended) return boost::outcome_v2::success();
        const wire::IdReq req{it->second.id};
        auto done = ch_.call_small(wire::Op::share_end_access, wire::as_bytes(req));
        if (!done && !is_disconnect(done.error())) return done.error();
        it->second.ended = true;  // ended, or the daemon (and every peer mapping) is gone
        return boost::outcome_v2::success();
    }

    void release(std::byte* addr, std::span<const GrantRef> /*refs*/) noexcept override {
        const Share share = give_up(addr);
        drop_view(addr, share.pages * kPageSize, share.fixed);
    }

    void release_replaced(std::byte* addr, std::span<const GrantRef> /*refs*/) noexcept override {
        (void)give_up(addr);  // the view is the caller's already
    }

    RevokeEffect revoke(std::byte* addr, std::span<const GrantRef> /*refs*/) noexcept override {
        const Share share = give_up(addr, wire::Op::share_revoke);
        drop_view(addr, share.pages * kPageSize, share.fixed);
        return RevokeEffect::enforced;
    }

private:
    struct Share {
        uint64_t id;
        std::size_t pages;
        bool fixed;
        bool ended;
    };

    // The share at addr forgotten here and, if not ended, given up to the daemon with `op`
    // (share_release: it ends the grants once the peer unmaps, gntalloc's rule).
    Share give_up(std::byte* addr, wire::Op op = wire::Op::share_release) noexcept {
        auto it = shares_.find(addr);
        if (it == shares_.end()) fatal("release or revoke of unknown shared pages", EINVAL);
        const Share share = it->second;
        shares_.erase(it);
        if (!share.ended) forget(op, share.id);
        return share;
    }

    // share_release / share_revoke: never fail, except when the daemon is gone.
    void forget(wire::Op op, uint64_t id) noexcept {
        const wire::IdReq req{id};
        auto done = ch_.call_small(op, wire::as_bytes(req));
        if (!done && !is_disconnect(done.error()))
            fatal("giving up shared pages", done.error().value());
    }

    static void drop_view(std::byte* addr, std::size_t len, bool fixed) noexcept {
        if (fixed) {
            rereserve(addr, len);
        } else {
            client::unmap(addr, len);
        }
    }

    Channel ch_;
    std::map<std::byte*, Share> shares_;
};

}  // namespace

Result<std::unique_ptr<GrantSharer>> make_grant_sharer(Channel ch) {
    try {
        return std::unique_ptr<GrantSharer>(std::make_unique<SimGrantSharer>(std::move(ch)));
    } catch (const std::bad_alloc&) {
        return errno_code(ENOMEM);
    }
}

}  // namespace xenhsa::xen::sim::client
