// The worker's seccomp filters (confinement.hpp, step 4): an allowlist of the system calls
// a worker's steady state makes, nothing that opens, executes, spawns a process, traces,
// mounts or creates a socket; and the arguments of those that can reach beyond the worker
// (ioctl by request type, fcntl by command, tgkill to itself), refused with EPERM.
#ifndef XENHSA_BACKEND_SERVICE_SRC_SYSCALL_FILTER_HPP
#define XENHSA_BACKEND_SERVICE_SRC_SYSCALL_FILTER_HPP

#include <cstddef>
#include <optional>
#include <string>
#include <xenhsa/backend/service/confinement.hpp>

namespace xenhsa::backend::service {

// Loads the filter for `mode` (not off). On success `allowed` is the number of system
// calls it allows; otherwise the text says why it could not be loaded.
std::optional<std::string> install_syscall_filter(SeccompMode mode, std::size_t& allowed);

// The grant broker's filter (grant_broker.hpp): its five ioctls by number, reading its
// requests, writing replies and log lines, allocating and ending; the kill for the rest.
std::optional<std::string> install_broker_filter();

}  // namespace xenhsa::backend::service

#endif
