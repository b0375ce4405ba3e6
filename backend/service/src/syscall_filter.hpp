// The worker's seccomp filters (confinement.hpp, step 4): an allowlist of the system calls
// a worker's steady state makes, nothing that opens, executes, spawns a process, traces,
// mounts or creates a socket; and the arguments of those that can reach beyond the worker
// (ioctl by request type, fcntl by command, tgkill to itself), refused with EPERM.
#ifndef XENHSA_BACKEND_SERVICE_SRC_SYSCALL_FILTER_HPP
#define XENHSA_BACKEND_SERVICE_SRC_SYSCALL_FILTER_HPP

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <xenhsa/backend/service/confinement.hpp>

namespace xenhsa::backend::service {

// Loads the filter for `mode` (not off). On success `allowed` is the number of system
// calls it allows; otherwise the text says why it could not be loaded.
std::optional<std::string> install_syscall_filter(SeccompMode mode, std::size_t& allowed);

// A real-Xen worker's helpers' filter: reading requests, writing replies and log lines,
// waiting, allocating, signals to itself and ending, and for the grant broker
// (grant_broker.hpp) its five ioctls by number; the kill for the rest. The store proxy
// (store_proxy.hpp) makes no ioctl.
enum class HelperKind : uint8_t { grant_broker, store_proxy };
std::optional<std::string> install_helper_filter(HelperKind kind);

}  // namespace xenhsa::backend::service

#endif
