// The supervisor's state, and where each of its parts lives: finding devices in xenstore
// (supervisor_discovery.cpp), their worker processes (supervisor_workers.cpp), the control
// socket (supervisor_control.cpp), start and shutdown (supervisor.cpp). Internal to the
// service; run_supervisor() in supervisor.hpp is its entry point.
#ifndef XENHSA_BACKEND_SERVICE_SRC_SUPERVISOR_IMPL_HPP
#define XENHSA_BACKEND_SERVICE_SRC_SUPERVISOR_IMPL_HPP

#include <spdlog/logger.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cerrno>
#include <chrono>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>
#include <xenhsa/backend/service/control_server.hpp>
#include <xenhsa/backend/service/cpu_groups.hpp>
#include <xenhsa/backend/service/pool_shares.hpp>
#include <xenhsa/backend/service/store_pump.hpp>
#include <xenhsa/backend/service/supervisor.hpp>
#include <xenhsa/backend/service/worker_process.hpp>
#include <xenhsa/backend/service/worker_uids.hpp>

namespace xenhsa::backend::service::supervision {

inline constexpr std::string_view kDevicesToken = "xenhsa-devices";
inline constexpr std::string_view kReleaseToken = "xenhsa-release";
inline constexpr uint64_t kMaxGuestDomId = 0x7FEF;  // below DOMID_FIRST_RESERVED

// The watch token of a device's frontend state, and back.
std::string frontend_token(const DeviceId& id);
std::optional<DeviceId> parse_frontend_token(std::string_view token);

struct Device {
    Device(boost::asio::io_context& io, DeviceId device) : id(device), restart(io), kill(io) {}

    DeviceId id;
    std::unique_ptr<WorkerProcess> worker;
    bool removing = false;           // unplugged or its domain died: forget after the worker
    bool domain_gone = false;        // its backend directory goes with it (forget())
    bool watching_frontend = false;  // waiting for Initialising to restart
    bool restart_pending = false;
    unsigned failures = 0;                // workers in a row that ended before connecting
    unsigned confinement_violations = 0;  // workers of this device seccomp killed
    bool refused = false;                 // beyond max_guests: waits for a slot or its frontend
    bool frontend_left = false;           // refused, and its frontend left Initialising since
    uint64_t held_pages = 0;              // lent pages its guest held when this connection began
    std::optional<uid_t> uid;             // its worker's own uid (WorkerUids)
    QuotaCeilings ceilings;
    boost::asio::steady_timer restart;
    boost::asio::steady_timer kill;
};

class Supervisor {
public:
    Supervisor(const SupervisorOptions& options, xen::Platform& platform,
               std::filesystem::path worker_exe, const PoolShares& shares);

    int run();

private:
    // --- discovery (supervisor_discovery.cpp) --------------------------------------------
    void on_watch(const xen::WatchEvent& event);
    std::set<DeviceId> scan();
    void rescan();
    void add_device(const DeviceId& id);
    void domains_released();
    // Whether the guest of `id` lives. A driver domain may not read /local/domain/<fe>
    // (xenstored answers EACCES whether or not it exists): there the device's frontend
    // directory, which the toolstack lets the backend read and removes with the domain,
    // tells.
    xen::Result<bool> guest_alive(const DeviceId& id);

    // Ends the device's worker and forgets the device.
    void retire(const DeviceId& id);

    // The device is gone: its slot goes to a refused device, if one waits.
    void forget(const DeviceId& id);
    // Its guest died: the backend's directory of the device, and the guest's level once
    // empty.
    void remove_backend_dir(const DeviceId& id);

    // --- workers (supervisor_workers.cpp) ------------------------------------------------
    void start_worker(Device& dev);

    // Every slot is taken: the device is refused the xenbus way, and tried again when a
    // slot frees or its frontend comes back to Initialising.
    void refuse(Device& dev);

    // Lent pages `fe` still maps: they stay out of the LEND pool until it unmaps them.
    uint64_t held_pages(xen::DomId fe);

    // The guest reconnects (a worker serves every connection of its device): the LEND
    // bound of the new connection follows what the guest still maps of earlier ones. The
    // worker holds the frontend before InitWait, and lends nothing, until this arrives.
    void send_ceilings(const DeviceId& id);

    // The options a worker of `domid` starts with: quota changes included.
    SupervisorOptions options_for(xen::DomId domid) const;
    void stop_worker(Device& dev);
    void wait_children();
    void reap();
    // `status`: the wait status, nullopt for an adopted worker (not a child).
    void worker_ended(Device& dev, std::optional<int> status);
    // Workers a crashed supervisor left, handed back by the service manager
    // (worker_fd_store.hpp): each serves its device on.
    void adopt_workers();
    // Whether workers get CPU shares of their own, where, or why not (for `status`).
    [[nodiscard]] nlohmann::json cpu_groups_status() const;
    void adopted_worker_ended(const DeviceId& id);

    // The device has no worker: make the frontend see Closed (only while the device's
    // backend directory exists, and only if the worker did not write it already).
    void mark_closed(const DeviceId& id);
    void watch_frontend(Device& dev);
    void unwatch_frontend(Device& dev);
    void frontend_changed(const DeviceId& id);
    static std::chrono::milliseconds restart_delay(unsigned failures);

    // --- control (supervisor_control.cpp) ------------------------------------------------
    void on_control(const nlohmann::json& request, ControlServer::Reply reply);

    // The operator's quota change: checked as a whole first, then remembered for later
    // workers and sent to the running ones, which enforce it at once.
    void change_quotas(const nlohmann::json& request, ControlServer::Reply reply);
#if XENHSA_TEST_HOOKS
    void set_fault_plan(const nlohmann::json& request, ControlServer::Reply reply);
#endif

    // Sends `request` to the worker of every device (of `domid` only, when given) and
    // answers with {"ok":..., <key>: [device status...]}.
    void ask_workers(std::optional<xen::DomId> domid, const nlohmann::json& request,
                     const char* key, ControlServer::Reply reply);

    // A device's status as the supervisor sees it, without asking its worker.
    nlohmann::json offline_status(const Device& dev);

    // --- shutdown (supervisor.cpp) -------------------------------------------------------
    void begin_shutdown();
    void maybe_finish();

    SupervisorOptions options_;  // connector.settings grows with `xenhsa-ctl quota`
    std::map<xen::DomId, std::vector<std::string>> domain_settings_;
    xen::Platform& platform_;
    std::filesystem::path worker_exe_;
    std::shared_ptr<spdlog::logger> log_;
    xen::DomId be_;
    std::string root_;
    boost::asio::io_context io_;
    boost::asio::signal_set stop_signals_;
    boost::asio::signal_set child_signal_;
    boost::asio::steady_timer grace_;
    StorePump pump_;
    ControlServer control_;
    std::map<DeviceId, Device> devices_;
    PoolShares shares_;
    uint32_t cpus_ = usable_cpus();  // agent threads are shared out of these
    CpuGroups cpu_groups_;           // a CPU share per worker (opened by run())
    WorkerUids worker_uids_;         // a uid per worker (when they start as root)
    bool usage_warned_ = false;
    uint64_t confinement_violations_ = 0;  // workers killed by their seccomp filter, in all
    bool shutting_down_ = false;
    int exit_code_ = 0;
};

}  // namespace xenhsa::backend::service::supervision

#endif
