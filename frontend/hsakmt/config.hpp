// Where the guest libhsakmt finds its xenhsa device: the environment, else a JSON file
// (XENHSA_CONFIG, else /etc/xenhsa/guest.json). Read once, at hsaKmtOpenKFD.
//
//   XENHSA_SIM_DIR / "sim_dir"            the embedded hypervisor's directory (xenhsa-sim)
//   XENHSA_DOMID / "domid"                sim: this guest's domain (the toolstack made it)
//   XENHSA_XEN=1 / "xen": true            real Xen: this domain, its xenstore device path
//   XENHSA_DEVID / "devid"                device/xenhsa/<devid> (default 0)
//   XENHSA_BACKEND_DOMID / "backend_domid" used when the device has no backend-id (default 0)
//   XENHSA_WINDOW_GIB / "window_gib"      the VA window asked for in HELLO (default 64)
//   XENHSA_LOG_LEVEL / "log_level"        spdlog level name (default warn)
#ifndef XENHSA_FRONTEND_HSAKMT_CONFIG_HPP
#define XENHSA_FRONTEND_HSAKMT_CONFIG_HPP

#include <cstdint>
#include <optional>
#include <string>

namespace xenhsa::frontend::hsakmt {

struct GuestConfig {
    std::string sim_dir;
    std::optional<uint32_t> domid;
    bool xen = false;
    uint32_t devid = 0;
    uint32_t backend_domid = 0;
    uint64_t window_gib = 64;
    std::string log_level = "warn";
};

struct ConfigResult {
    std::optional<GuestConfig> config;
    std::string error;  // why there is none
};

// Environment over file over defaults. Exactly one of sim (sim_dir and domid) or xen.
ConfigResult load_config();

}  // namespace xenhsa::frontend::hsakmt

#endif
