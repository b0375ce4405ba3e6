#include "platform_open.hpp"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#if XENHSA_GUEST_HAVE_SIM
#include <xenhsa/xen/sim/client.hpp>

#include "sim_toolstack.hpp"
#endif
#if XENHSA_GUEST_HAVE_XEN
#include <xenhsa/xen/real/platform.hpp>
#endif

namespace xenhsa::frontend::cli {

namespace {

std::error_code sys_error(int e) { return {e, std::generic_category()}; }

#if XENHSA_GUEST_HAVE_SIM
Result<GuestPlatform> open_sim(const GlobalOptions& options) {
    xen::DomId domid = 0;
    if (options.domid) {
        domid = static_cast<xen::DomId>(*options.domid);
    } else {
        auto created = xen::sim::create_domain(options.sim_dir, "guest-" + std::to_string(getpid()),
                                               options.ram_pages);
        if (!created) {
            return created.error();
        }
        domid = created.value();
        spdlog::info("created domain {} (guest-{})", domid, getpid());
    }
    // A domain we created and could not attach to would live on: destroy it.
    auto undo = [&](std::error_code err) -> std::error_code {
        if (!options.domid) {
            (void)xen::sim::destroy_domain(options.sim_dir, domid);
        }
        return err;
    };
    if (options.toolstack) {
        if (auto plugged =
                plug_sim_device(options.sim_dir, static_cast<xen::DomId>(options.backend_domid),
                                domid, options.devid);
            !plugged) {
            return undo(plugged.error());
        }
    }
    auto platform = xen::sim::attach(options.sim_dir, domid);
    if (!platform) {
        return undo(platform.error());
    }
    return GuestPlatform{std::move(platform.value()), domid};
}
#endif

}  // namespace

Result<GuestPlatform> open_platform(const GlobalOptions& options) {
    if (!options.sim_dir.empty()) {
#if XENHSA_GUEST_HAVE_SIM
        return open_sim(options);
#else
        return sys_error(ENOTSUP);
#endif
    }
    if (options.xen) {
#if XENHSA_GUEST_HAVE_XEN
        xen::real::RealOptions real;
        real.want_domctl = false;
        real.quiet = true;
        auto platform = xen::real::open_real_platform(real);
        if (!platform) {
            return platform.error();
        }
        const xen::DomId self = platform.value().domains->self();
        return GuestPlatform{std::move(platform.value()), self};
#else
        return sys_error(ENOTSUP);
#endif
    }
    return sys_error(EINVAL);
}

}  // namespace xenhsa::frontend::cli
