// Domains of the simulated hypervisor: liveness as the daemon's domain table says it.
#include <new>

#include "components.hpp"

namespace xenhsa::xen::sim::client {

namespace {

class SimDomains final : public Domains {
public:
    explicit SimDomains(Channel ch) noexcept : ch_(std::move(ch)) {}

    [[nodiscard]] DomId self() const noexcept override { return ch_.domid(); }

    Result<bool> alive(DomId domid) override {
        if (domid >= kDomIdFirstReserved) return errno_code(EINVAL);
        const wire::DomainReq req{domid, {}};
        auto reply = ch_.call(wire::Op::domain_alive, wire::as_bytes(req));
        if (!reply) return reply.error();
        if (auto ok = check(reply.value()); !ok) return ok.error();
        if (!reply.value().body_is<wire::AliveRep>()) return errno_code(EPROTO);
        return reply.value().body_as<wire::AliveRep>().alive != 0;
    }

private:
    Channel ch_;
};

}  // namespace

Result<std::unique_ptr<Domains>> make_domains(Channel ch) {
    try {
        return std::unique_ptr<Domains>(std::make_unique<SimDomains>(std::move(ch)));
    } catch (const std::bad_alloc&) {
        return errno_code(ENOMEM);
    }
}

}  // namespace xenhsa::xen::sim::client
