// xenhsa-doctor's checks of a host: what ROCm needs (an AMD GPU, PCIe AtomicOps up to the
// root port, /dev/kfd, the GPU's gfx target and XNACK mode, the IOMMU) and what the
// backend needs from Xen (the hypervisor, the domain's role, xenstore, gntdev, gntalloc
// and its limit against the LEND quota, evtchn, the memlock limit; in a driver domain its
// devices, the GPU passed through to it and the maptrack bound it cannot read). Everything is read
// from files under `root` (sysfs, /dev, /proc), so tests run on fake trees; nothing is
// written, config space included.
#ifndef XENHSA_BACKEND_SERVICE_DOCTOR_HOST_CHECKS_HPP
#define XENHSA_BACKEND_SERVICE_DOCTOR_HOST_CHECKS_HPP

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace xenhsa::backend::doctor {

enum class Status : uint8_t { pass, info, warn, fail };

struct Check {
    std::string name;
    Status status = Status::info;
    std::string detail;
    std::string remedy;  // empty: nothing to do
};

// The hypervisor's bounds on the backend domain's grants (xen/real/grant_limits.hpp):
// what Xen reports, which sysfs does not show.
struct XenGrantLimits {
    uint32_t grant_frames = 0;     // its grant table: pages it can lend, 512 per frame
    uint32_t maptrack_frames = 0;  // its maptrack table: pages it can map, 256 per frame
    bool maptrack_default = true;  // Xen's default, not set on its command line
};

struct BackendDevices {
    uint32_t guests = 0;
    uint32_t devices = 0;
};

struct DoctorOptions {
    std::filesystem::path root = "/";
    uint64_t lend_pages = 65536;  // the max_lend_pages quota a guest may use
    // The backend's shares (xenhsa-backend --max-guests, --map-pool-pages, max_map_pages).
    uint64_t max_guests = 16;
    uint64_t map_pages = 262144;
    uint64_t map_pool_pages = 4194304;
    // Read from Xen by xenhsa-doctor in dom0 (tests give them); nullopt: not known.
    std::optional<XenGrantLimits> grant_limits;
    // The xenhsa devices plugged with this domain as their backend (its xenstore
    // backend/xenhsa), read by xenhsa-doctor on Xen; nullopt: not known.
    std::optional<BackendDevices> backend_devices;
    // Xen on Arm (where Debian's hypervisor enforces XSM SILO by default).
#if defined(__aarch64__)
    bool xen_on_arm = true;
#else
    bool xen_on_arm = false;
#endif
};

std::vector<Check> run_checks(const DoctorOptions& options);

std::string_view status_name(Status status) noexcept;
// Whether a requirement failed (xenhsa-doctor's exit status).
bool any_failed(const std::vector<Check>& checks) noexcept;

}  // namespace xenhsa::backend::doctor

#endif
