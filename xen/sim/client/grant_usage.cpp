// GrantUsage of the simulated hypervisor: the daemon counts the caller's granted refs.
#include <new>

#include "components.hpp"

namespace xenhsa::xen::sim::client {

namespace {

class SimGrantUsage final : public GrantUsage {
public:
    explicit SimGrantUsage(Channel ch) noexcept : ch_(std::move(ch)) {}

    Result<uint32_t> held_by(DomId peer) noexcept override {
        if (peer >= kDomIdFirstReserved) return errno_code(EINVAL);
        auto usage = ask(peer);
        if (!usage) return usage.error();
        return usage.value().held;
    }

    Result<uint32_t> share_pool_pages() noexcept override {
        auto usage = ask(ch_.domid());
        if (!usage) return usage.error();
        return usage.value().capacity;
    }

private:
    Result<wire::UsageRep> ask(DomId peer) noexcept {
        try {
            const wire::DomainReq req{peer, {}};
            auto reply = ch_.call(wire::Op::grant_usage, wire::as_bytes(req));
            if (!reply) return reply.error();
            if (auto ok = check(reply.value()); !ok) return ok.error();
            if (!reply.value().body_is<wire::UsageRep>()) return errno_code(EPROTO);
            return reply.value().body_as<wire::UsageRep>();
        } catch (const std::bad_alloc&) {
            return errno_code(ENOMEM);
        }
    }

    Channel ch_;
};

}  // namespace

Result<std::unique_ptr<GrantUsage>> make_grant_usage(Channel ch) {
    try {
        return std::unique_ptr<GrantUsage>(std::make_unique<SimGrantUsage>(std::move(ch)));
    } catch (const std::bad_alloc&) {
        return errno_code(ENOMEM);
    }
}

}  // namespace xenhsa::xen::sim::client
