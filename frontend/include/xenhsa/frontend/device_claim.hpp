// A process's claim on one of its domain's xenhsa devices. The toolstack plugs as many
// devices for a guest as the operator lets it run ROCm processes at once; each process
// claims a free one before its handshake: an exclusive flock on that device's lock file,
// which the kernel drops when the process dies (and which an exec'd program does not
// inherit). So two processes never share a device, a process never resets another's
// connection, and no process needs to be told which device is its own.
#ifndef XENHSA_FRONTEND_DEVICE_CLAIM_HPP
#define XENHSA_FRONTEND_DEVICE_CLAIM_HPP

#include <boost/outcome/result.hpp>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <system_error>
#include <xenhsa/xen/store.hpp>

namespace xenhsa::frontend {

class DeviceClaim {
public:
    DeviceClaim() = default;
    DeviceClaim(int fd, uint32_t devid) noexcept : fd_(fd), devid_(devid) {}
    DeviceClaim(DeviceClaim&& other) noexcept;
    DeviceClaim& operator=(DeviceClaim&& other) noexcept;
    DeviceClaim(const DeviceClaim&) = delete;
    DeviceClaim& operator=(const DeviceClaim&) = delete;
    ~DeviceClaim();

    [[nodiscard]] uint32_t devid() const noexcept { return devid_; }
    [[nodiscard]] bool held() const noexcept { return fd_ >= 0; }
    // Gives the claim up (in a forked child: the parent keeps its own).
    void release() noexcept;

private:
    int fd_ = -1;
    uint32_t devid_ = 0;
};

struct ClaimOptions {
    std::filesystem::path lock_dir;  // created if missing
    std::optional<uint32_t> devid;   // this device only; else the lowest free one
};

// Why no device was claimed: `code` is ENODEV (none plugged, or not that one), EBUSY
// (every one, or the one asked for, is another process's) or what the store or the lock
// directory answered; `text` says it for a user, with what raises the limit.
struct ClaimError {
    std::error_code code;
    std::string text;
};

// Narrow observers: look at has_value() first.
using ClaimResult = boost::outcome_v2::unchecked<DeviceClaim, ClaimError>;

// Claims a device of domain `self` (its /local/domain/<self>/device/xenhsa/<devid>
// directories with a backend key).
ClaimResult claim_device(xen::Store& store, xen::DomId self, const ClaimOptions& options);

// The lock file of a device.
std::filesystem::path claim_lock_path(const std::filesystem::path& lock_dir, xen::DomId self,
                                      uint32_t devid);

}  // namespace xenhsa::frontend

#endif
