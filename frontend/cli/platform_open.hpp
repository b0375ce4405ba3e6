// The CLI's composition root for the hypervisor seam: the simulator (--sim-dir) or, when
// built with the libxen* adapters, real Xen (--xen). Nothing else in xenhsa-guest knows
// which one it runs on.
#ifndef XENHSA_FRONTEND_CLI_PLATFORM_OPEN_HPP
#define XENHSA_FRONTEND_CLI_PLATFORM_OPEN_HPP

#include <xenhsa/frontend/result.hpp>
#include <xenhsa/xen/platform.hpp>

#include "options.hpp"

namespace xenhsa::frontend::cli {

struct GuestPlatform {
    xen::Platform platform;
    xen::DomId domid = 0;
};

// Sim: attaches to --domid, or creates a domain "guest-<pid>" and attaches to it; unless
// --no-toolstack, plugs the device first (a child process attached to dom0 writes the
// toolstack's xenstore keys). Xen: opens the real adapters. ENOTSUP for a mode this
// build lacks, EINVAL when neither is chosen.
Result<GuestPlatform> open_platform(const GlobalOptions& options);

}  // namespace xenhsa::frontend::cli

#endif
