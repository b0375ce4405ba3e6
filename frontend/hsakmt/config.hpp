// Where the guest libhsakmt finds its xenhsa device: the environment, else a JSON file
// (XENHSA_CONFIG, else /etc/xenhsa/guest.json). Read once, at hsaKmtOpenKFD.
//
//   XENHSA_SIM_DIR / "sim_dir"            the embedded hypervisor's directory (xenhsa-sim)
//   XENHSA_DOMID / "domid"                sim: this guest's domain (the toolstack made it)
//   XENHSA_XEN=1 / "xen": true            real Xen: this domain, its xenstore device path
//   XENHSA_DEVID / "devid"                device/xenhsa/<devid> only (default: the lowest
//                                         device of this domain no other process holds)
//   XENHSA_LOCK_DIR / "lock_dir"          where the devices' claims are locked (default
//                                         /run/xenhsa-guest; sim: SIM_DIR/guest-locks)
//   XENHSA_BACKEND_DOMID / "backend_domid" used when the device has no backend-id (default 0)
//   XENHSA_WINDOW_GIB / "window_gib"      the VA window asked for in HELLO (default 64)
//   XENHSA_WINDOW_BASE / "window_base"    where the window is asked for (decimal, or hex
//                                         after 0x; default 0: the backend proposes one).
//                                         Fixed, every process of a program gets its GPU
//                                         addresses there, as the real thunk's fixed
//                                         aperture hints give on a host
//   XENHSA_REQUEST_TIMEOUT_MS /           how long a request waits for its answer (default
//     "request_timeout_ms"                10000, at most 600000); a request that changes
//                                         the backend's objects and times out ends the
//                                         session, as a GPU reset
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
    std::optional<uint32_t> devid;
    std::string lock_dir;
    uint32_t backend_domid = 0;
    uint64_t window_gib = 64;
    uint64_t window_base = 0;
    uint64_t request_timeout_ms = 10000;
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
