#include <xenhsa/backend/service/platform_open.hpp>

#if XENHSA_SERVICE_HAVE_SIM
#include <xenhsa/xen/sim/client.hpp>
#endif
#if XENHSA_SERVICE_HAVE_REAL
#include <xenhsa/backend/service/pool_shares.hpp>
#include <xenhsa/xen/real/authority.hpp>
#include <xenhsa/xen/real/platform.hpp>

#include "grant_broker.hpp"
#include "store_proxy.hpp"
#endif

namespace xenhsa::backend::service {

namespace {

#if XENHSA_SERVICE_HAVE_SIM
void restrict_to(xen::Platform& platform, PlatformRole role) noexcept {
    platform.foreign.reset();
    if (role == PlatformRole::supervisor) {
        platform.grants.reset();
        platform.sharer.reset();
        platform.events.reset();
    }
}
#endif

#if XENHSA_SERVICE_HAVE_REAL
xen::Result<xen::Platform> open_real(PlatformRole role, xen::DomId guest) {
    xen::real::RealOptions options;
    options.want_foreign_memory = false;
    if (role == PlatformRole::worker) {
        // Domain liveness is the supervisor's job: the worker reads its own domid from
        // xenstore and needs no hypercall privilege.
        options.want_domctl = false;
        // No privcmd, hypercall device or foreign memory either (confinement.hpp): the
        // sharer then cannot tell whether the guest still maps a lent page, and the
        // kernel keeps such pages out of use until it unmaps them.
        options.read_own_grant_table = false;
        options.restrict_to = guest;
        // Its xenstore through a proxy that lets only its guest's directories through
        // (store_proxy.hpp), sealed once the worker's connections are made.
        auto proxy = StoreProxy::start(guest);
        if (!proxy) {
            return proxy.error();
        }
        options.store_socket = proxy.value().path();
        auto platform = xen::real::open_real_platform(options);
        proxy.value().seal();
        if (!platform) {
            return platform.error();
        }
        // What names a domain or spends a shared pool goes through the broker, forked
        // while this process holds nothing of its guest's yet (grant_broker.hpp).
        const auto fds = xen::real::device_fds(platform.value());
        auto broker = start_grant_broker(fds, xen::real::direct_authority(fds),
                                         BrokerLimits{guest, kEventChannelsPerGuest});
        if (!broker) {
            return broker.error();
        }
        xen::real::use_authority(platform.value(), broker.value().authority);
        return platform;
    }
    xen::Platform platform;
    auto store = xen::real::open_store(options);
    if (!store) {
        return store.error();
    }
    auto own_store = xen::real::open_store(options);
    if (!own_store) {
        return own_store.error();
    }
    auto domains = xen::real::make_domains(std::move(own_store).value(), options);
    if (!domains) {
        return domains.error();
    }
    auto usage = xen::real::open_grant_usage();
    if (!usage) {
        return usage.error();
    }
    platform.store = std::move(store).value();
    platform.domains = std::move(domains).value();
    platform.usage = std::move(usage).value();
    return platform;
}
#endif

}  // namespace

xen::Result<xen::Platform> open_platform(const PlatformChoice& choice, PlatformRole role,
                                         xen::DomId guest) {
    if (choice.xen) {
#if XENHSA_SERVICE_HAVE_REAL
        return open_real(role, guest);
#else
        return xen::errc(std::errc::not_supported);
#endif
    }
#if XENHSA_SERVICE_HAVE_SIM
    // A worker's connections act for its guest only (the daemon enforces it), for good.
    auto platform = role == PlatformRole::worker
                        ? xen::sim::attach_acting_for(choice.sim_dir, 0, guest)
                        : xen::sim::attach(choice.sim_dir, 0);
    if (!platform) {
        return platform.error();
    }
    restrict_to(platform.value(), role);
    if (role == PlatformRole::supervisor) {
        auto usage = xen::sim::open_grant_usage(choice.sim_dir, 0);
        if (!usage) {
            return usage.error();
        }
        platform.value().usage = std::move(usage).value();
    }
    return platform;
#else
    (void)role;
    (void)guest;
    return xen::errc(std::errc::not_supported);
#endif
}

}  // namespace xenhsa::backend::service
