// The composition root's choice of hypervisor: the simulated one (--sim-dir DIR) or real
// Xen (--xen), opened with only what each process needs.
#ifndef XENHSA_BACKEND_SERVICE_PLATFORM_OPEN_HPP
#define XENHSA_BACKEND_SERVICE_PLATFORM_OPEN_HPP

#include <filesystem>
#include <xenhsa/xen/platform.hpp>

namespace xenhsa::backend::service {

struct PlatformChoice {
    std::filesystem::path sim_dir;  // simulated hypervisor, when not `xen`
    bool xen = false;
};

enum class PlatformRole : uint8_t {
    // Store, domain liveness and the grant usage of the backend's own table (which pages
    // a guest still holds): the supervisor never touches guest memory.
    supervisor,
    // Everything one guest device needs, without foreign memory (a worker serves a
    // guest through grants only) and, on Xen, without privcmd, the hypercall device or
    // libxenctrl (the grant sharer does not read dom0's own grant table), with its event
    // channel handle restricted to the guest's domain.
    worker,
};

// ENOTSUP when this build has no implementation of the chosen hypervisor. `guest`: the
// frontend domain a worker serves (unused for the supervisor).
xen::Result<xen::Platform> open_platform(const PlatformChoice& choice, PlatformRole role,
                                         xen::DomId guest = 0);

}  // namespace xenhsa::backend::service

#endif
