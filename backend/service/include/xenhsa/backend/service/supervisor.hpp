// The supervisor `xenhsa-backend`: discovers xenhsa devices under
// /local/domain/<be>/backend/xenhsa/<fe-domid>/<devid>, runs one worker process per
// device, reaps workers and restarts them, watches @releaseDomain, and serves the
// control socket by asking its workers. It opens only the store and domain liveness: it
// never touches guest memory.
//
// A worker that ends while its device is still plugged in leaves the device Closed: the
// supervisor writes backend state Closed and waits for the frontend to go back to
// Initialising, then starts a fresh worker (after a growing delay when workers keep
// failing before they ever connect). A device whose backend directory goes away, or
// whose domain dies, gets its worker shut down and is forgotten.
//
// A worker killed by SIGSYS broke its seccomp filter: the supervisor logs a confinement
// violation, counts it in the device's status and treats it as any dead worker.
//
// Pools: at most `pools.max_guests` devices are served at once (a device beyond them is
// refused: error node and Closed); each worker's page quotas are bounded by its device's
// share of the backend's pools, and its LEND quota also by the pages its guest still
// holds from earlier connections (read through xen::GrantUsage when the worker starts and
// whenever it advertises the device for a new connection). See pool_shares.hpp.
//
// SIGTERM/SIGINT: stop accepting control requests, ask every worker to revoke
// everything and end (SIGKILL after `shutdown_grace`), reap them all, return 0.
#ifndef XENHSA_BACKEND_SERVICE_SUPERVISOR_HPP
#define XENHSA_BACKEND_SERVICE_SUPERVISOR_HPP

#include <spdlog/common.h>

#include <chrono>
#include <filesystem>
#include <xenhsa/backend/service/confinement.hpp>
#include <xenhsa/backend/service/connector_config.hpp>
#include <xenhsa/backend/service/platform_open.hpp>
#include <xenhsa/backend/service/pool_shares.hpp>
#include <xenhsa/backend/service/worker_uids.hpp>

namespace xenhsa::backend::service {

struct SupervisorOptions {
    PlatformChoice platform;
    std::filesystem::path control_socket;
    ConnectorConfig connector;       // handed to every worker
    ConfinementOptions confinement;  // likewise
    PoolOptions pools;
    // Workers started as root each get a uid of their own from this range, unless
    // confinement.user names a user for all of them.
    WorkerUidRange worker_uids;
    spdlog::level::level_enum log_level = spdlog::level::info;
    std::filesystem::path worker_exe;  // empty: this binary (/proc/self/exe)
    std::chrono::milliseconds shutdown_grace{10000};
    std::chrono::milliseconds worker_answer_timeout{5000};
    // Test builds: the supervisor's own seam faults, armed over the control socket.
    std::shared_ptr<FaultPlan> faults;
};

// A clean stop after a run in which a worker broke its seccomp filter.
inline constexpr int kExitConfinementViolated = 3;

// The process's exit status: 0 after SIGTERM/SIGINT (kExitConfinementViolated if a worker
// was killed by its seccomp filter meanwhile), 1 when it cannot start.
int run_supervisor(const SupervisorOptions& options);

// The argv (after argv[0]) that starts the worker of `device`.
std::vector<std::string> worker_arguments(const SupervisorOptions& options, DeviceId device);

}  // namespace xenhsa::backend::service

#endif
