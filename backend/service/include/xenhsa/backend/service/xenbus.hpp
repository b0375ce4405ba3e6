// Xenbus vocabulary of the service: device ids, states and the xenstore paths of one
// xenhsa device (docs/protocol.md §1.3–1.4).
#ifndef XENHSA_BACKEND_SERVICE_XENBUS_HPP
#define XENHSA_BACKEND_SERVICE_XENBUS_HPP

#include <compare>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <xenhsa/xen/store.hpp>
#include <xenhsa/xen/types.hpp>

namespace xenhsa::backend::service {

enum class XenbusState : uint8_t {
    unknown = 0,
    initialising = 1,
    init_wait = 2,
    initialised = 3,
    connected = 4,
    closing = 5,
    closed = 6,
    reconfiguring = 7,
    reconfigured = 8,
};

// "Initialising", "InitWait", ... as Xen's xenbus_strstate() names them.
std::string_view to_string(XenbusState state) noexcept;
// Strict: a value parse_store_uint accepts and that names a state; nullopt otherwise.
std::optional<XenbusState> parse_xenbus_state(std::string_view value) noexcept;
// The store's spelling: "1" for Initialising.
std::string state_value(XenbusState state);

// One guest device: a frontend domain and its device index.
struct DeviceId {
    xen::DomId fe = 0;
    uint32_t devid = 0;
    friend auto operator<=>(const DeviceId&, const DeviceId&) = default;
};

std::string to_string(const DeviceId& id);  // "3/0"

// /local/domain/<be>/backend/xenhsa
std::string backend_root(xen::DomId be);
// /local/domain/<be>/backend/xenhsa/<fe>/<devid>
std::string backend_dir(xen::DomId be, const DeviceId& id);
// /local/domain/<fe>/device/xenhsa/<devid>
std::string frontend_dir(const DeviceId& id);
// /local/domain/<fe>
std::string domain_home(xen::DomId domid);

// Reads the state node under `dir`: nullopt when it is missing; EINVAL when present but
// malformed (the node may be guest-written).
xen::Result<std::optional<XenbusState>> read_state(xen::Store& store, std::string_view dir);
xen::Result<void> write_state(xen::Store& store, std::string_view dir, XenbusState state);

// Writes `dir`/<key> = value for each pair only if `dir` still exists, in one
// transaction (so a removed device directory is not re-created). false when it is gone.
xen::Result<bool> write_if_present(
    xen::Store& store, std::string_view dir,
    std::span<const std::pair<std::string_view, std::string>> values);
xen::Result<bool> write_state_if_present(xen::Store& store, std::string_view dir,
                                         XenbusState state);

}  // namespace xenhsa::backend::service

#endif
