#include "platform_open.hpp"

#include <xenhsa/frontend/toolstack.hpp>

#include <spdlog/spdlog.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string>

#if XENHSA_GUEST_HAVE_SIM
#include <xenhsa/xen/sim/client.hpp>
#endif
#if XENHSA_GUEST_HAVE_XEN
#include <xenhsa/xen/real/platform.hpp>
#endif

namespace xenhsa::frontend::cli {

namespace {

std::error_code sys_error(int e)
{
    return {e, std::generic_category()};
}

#if XENHSA_GUEST_HAVE_SIM
// The toolstack step runs in a child attached to dom0: the guest process must not hold
// dom0's rights (and a process attached to dom0 is also immune to destroy_domain).
Result<void> plug_device_as_toolstack(const GlobalOptions &options, xen::DomId fe)
{
    const pid_t child = fork();
    if (child < 0) {
        return sys_error(errno);
    }
    if (child == 0) {
        int code = 1;
        if (auto dom0 = xen::sim::attach(options.sim_dir, 0); !dom0) {
            std::fprintf(stderr, "toolstack: attach to dom0: %s\n", dom0.error().message().c_str());
        } else {
            auto added =
                add_device(*dom0.value().store, static_cast<xen::DomId>(options.backend_domid), fe,
                           options.devid);
            if (!added) {
                std::fprintf(stderr, "toolstack: add device: %s\n",
                             added.error().message().c_str());
            }
            code = added ? 0 : 2;
        }
        std::fflush(stderr);
        _exit(code);
    }
    int status = 0;
    while (waitpid(child, &status, 0) < 0) {
        if (errno != EINTR) {
            return sys_error(errno);
        }
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        return sys_error(EIO);
    }
    return boost::outcome_v2::success();
}

Result<GuestPlatform> open_sim(const GlobalOptions &options)
{
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
        if (auto plugged = plug_device_as_toolstack(options, domid); !plugged) {
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

Result<GuestPlatform> open_platform(const GlobalOptions &options)
{
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
