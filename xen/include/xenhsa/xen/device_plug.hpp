// The toolstack's step for one paravirtual device, as libxl takes it for the devices it
// knows (xl knows nothing of xenhsa): plug_device() creates both xenstore directories,
// unplug_device() sets the device offline, waits for its backend to close it, and
// removes both directories. Over the Store seam: the same on Xen and on xenhsa-sim.
#ifndef XENHSA_XEN_DEVICE_PLUG_HPP
#define XENHSA_XEN_DEVICE_PLUG_HPP

#include <chrono>
#include <cstdint>
#include <string>
#include <xenhsa/xen/store.hpp>

namespace xenhsa::xen {

struct PvDevice {
    DomId backend = 0;
    DomId frontend = 0;
    std::string type;  // the device type, e.g. "xenhsa"
    uint32_t devid = 0;

    // /local/domain/<backend>/backend/<type>/<frontend>/<devid>
    [[nodiscard]] std::string backend_dir() const;
    // /local/domain/<frontend>/device/<type>/<devid>
    [[nodiscard]] std::string frontend_dir() const;
};

// Both directories in one transaction: `state` Initialising in each, `online` 1 in the
// backend's, each owned by its domain and readable by the other end only. Returns false,
// and writes nothing, when the frontend's directory exists already.
Result<bool> plug_device(Store& store, const PvDevice& device);

// libxl's order: `online` 0 and the backend's `state` Closing in one transaction; then up
// to `timeout` for the backend to reach Closed; then both directories removed in one
// transaction, whether it did or not (libxl's forced removal). Returns whether the backend
// closed in time; ENOENT when the backend's directory does not exist.
Result<bool> unplug_device(Store& store, const PvDevice& device, std::chrono::milliseconds timeout);

}  // namespace xenhsa::xen

#endif
