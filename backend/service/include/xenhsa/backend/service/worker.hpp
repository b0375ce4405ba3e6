// A worker process: everything of one guest device on one Boost.Asio io_context. It is
// the same binary as the supervisor, started as
//   xenhsa-backend --worker --fe-domid N --devid D --control-fd 3 (--sim-dir DIR | --xen)
// and talks to the supervisor over the inherited socket (control_messages.hpp). Once its
// guest's objects are open it confines itself (confinement.hpp): unprivileged user, no
// capabilities, no new privileges, a seccomp allowlist. It ends
// on SIGTERM/SIGINT, on the supervisor's "shutdown" or when the supervisor goes away:
// each of them revokes everything the guest holds, in order, and writes the backend
// state Closed.
#ifndef XENHSA_BACKEND_SERVICE_WORKER_HPP
#define XENHSA_BACKEND_SERVICE_WORKER_HPP

#include <spdlog/common.h>

#include <xenhsa/backend/service/confinement.hpp>
#include <xenhsa/backend/service/connector_config.hpp>
#include <xenhsa/backend/service/platform_open.hpp>
#include <xenhsa/backend/service/xenbus.hpp>

namespace xenhsa::backend::service {

struct WorkerOptions {
    PlatformChoice platform;
    DeviceId device;
    int control_fd = -1;  // -1: no supervisor (run by hand)
    ConnectorConfig connector;
    spdlog::level::level_enum log_level = spdlog::level::info;
    // Applied once the device is set up, before the first byte of guest input is read.
    ConfinementOptions confinement;
};

// The process's exit status: 0 after an orderly end, 1 when the worker failed.
int run_worker(const WorkerOptions& options);

}  // namespace xenhsa::backend::service

#endif
