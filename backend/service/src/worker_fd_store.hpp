// Workers that outlive a supervisor crash: the supervisor's end of each worker's channel,
// kept in systemd's file-descriptor store (sd_pid_notify_with_fds, FDSTORE=1, named
// "worker-<fe>-<devid>-<pid>"). While systemd holds that fd, a worker whose supervisor
// dies sees no hang-up and goes on serving its guest; after Restart=on-failure the new
// supervisor gets the fds back (sd_listen_fds_with_names) and adopts the workers. Without
// a service manager (no $NOTIFY_SOCKET, or a build without libsystemd) nothing is stored,
// and a supervisor crash ends every worker as before.
#ifndef XENHSA_BACKEND_SERVICE_SRC_WORKER_FD_STORE_HPP
#define XENHSA_BACKEND_SERVICE_SRC_WORKER_FD_STORE_HPP

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>
#include <xenhsa/backend/service/xenbus.hpp>

namespace xenhsa::backend::service {

// A worker a previous supervisor left: its device, pid and the channel's fd (owned by
// the receiver).
struct StoredWorker {
    DeviceId device;
    pid_t pid = 0;
    int fd = -1;
};

class WorkerFdStore {
public:
    // Whether a service manager keeps what is stored.
    static bool available() noexcept;
    // Keeps a dup of `fd` under the worker's name; false when it could not.
    static bool keep(const DeviceId& device, pid_t pid, int fd) noexcept;
    // Drops the worker's fd from the store (it ended).
    static void drop(const DeviceId& device, pid_t pid) noexcept;
    // The workers handed to this process at its start; other fds passed are closed.
    static std::vector<StoredWorker> take();

    // "worker-<fe>-<devid>-<pid>", and back.
    static std::string name(const DeviceId& device, pid_t pid);
    static std::optional<StoredWorker> parse(std::string_view name);
};

}  // namespace xenhsa::backend::service

#endif
