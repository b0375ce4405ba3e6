// xenhsa-backend: the supervisor, or (with the hidden --worker) one guest device's worker.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <string>
#include <xenhsa/backend/service/logging.hpp>
#include <xenhsa/backend/service/supervisor.hpp>
#include <xenhsa/backend/service/worker.hpp>

namespace {

constexpr const char* kDefaultRealSocket = "/run/xenhsa/backend.sock";

}  // namespace

int main(int argc, char** argv) {
    using namespace xenhsa::backend::service;

    CLI::App app{"xenhsa-backend: serves xenhsa guest devices (one worker process per device)"};
    std::string sim_dir;
    bool xen = false;
    std::string control_socket;
    ConnectorConfig connector;
    std::string log_level = "info";
    auto* sim_opt = app.add_option("--sim-dir", sim_dir,
                                   "use the simulated hypervisor whose daemon runs in DIR")
                        ->type_name("DIR");
    auto* xen_opt = app.add_flag("--xen", xen, "use real Xen (libxen*)");
    sim_opt->excludes(xen_opt);
    app.add_option("--control-socket", control_socket,
                   std::string("control socket (default DIR/backend.sock, or ") +
                       kDefaultRealSocket + " with --xen)")
        ->type_name("PATH");
    app.add_option("--gpu", connector.gpu_mode,
                   "GPU seam: kfd (libhsakmt), soft (software agent), auto (kfd when "
                   "/dev/kfd opens, else soft)")
        ->check(CLI::IsMember({"auto", "kfd", "soft"}))
        ->capture_default_str();
    app.add_option("--soft-gfx", connector.soft_gfx,
                   "the ISA the software agent reports to guests: gfx900, gfx906, gfx908 or "
                   "gfx90a")
        ->type_name("TARGET")
        ->check([](const std::string& target) {
            return check_soft_gfx(target)
                       ? "unknown target \"" + target + "\" (gfx900, gfx906, gfx908 or gfx90a)"
                       : std::string();
        })
        ->capture_default_str();
    app.add_option("--agent-threads", connector.agent_threads,
                   "the software agent's workgroup workers per worker (big grids; small "
                   "dispatches run on their queue's thread); 0: the CPUs shared out among "
                   "the workers live when it starts")
        ->check(CLI::Range(0u, 256u))
        ->capture_default_str();
    app.add_option("--ring-spin-us", connector.ring_spin_us,
                   "how long a worker polls its guest's ring after serving it before it "
                   "sleeps until a kick (0: never polls)")
        ->check(CLI::Range(0u, 1000u))
        ->capture_default_str();
    app.add_option("--config", connector.config_file, "JSON file of per-guest quotas")
        ->type_name("FILE")
        ->check(CLI::ExistingFile);
    app.add_option("--set", connector.settings, "override one quota: key=value (repeatable)")
        ->type_name("KEY=VALUE")
        ->take_all();
    ConfinementOptions confinement;
    std::string seccomp = "kill";
    std::string confine = "on";
    app.add_option("--worker-user", confinement.user,
                   "the user a worker becomes when the backend runs as root (default: "
                   "\"xenhsa\" if it exists, else \"nobody\")")
        ->type_name("USER");
    std::string worker_uids;
    app.add_option("--worker-uids", worker_uids,
                   "the uids workers started as root get, one each (and the gid of the same "
                   "number), unless --worker-user names one user for all")
        ->type_name("FIRST:COUNT")
        ->default_str(std::to_string(WorkerUidRange::kDefaultFirst) + ":" +
                      std::to_string(WorkerUidRange::kDefaultCount))
        ->check([](const std::string& text) {
            return parse_worker_uids(text)
                       ? std::string()
                       : "a range FIRST:COUNT of uids from 1000 up, below 4294967295";
        });
    app.add_option("--worker-seccomp", seccomp,
                   "workers' system-call filter: kill (a call outside the allowlist kills the "
                   "worker), log (the kernel logs it), off")
        ->check(CLI::IsMember({"kill", "log", "off"}))
        ->capture_default_str();
    app.add_option("--worker-confinement", confine,
                   "off: workers keep the backend's user and capabilities (debugging only)")
        ->check(CLI::IsMember({"on", "off"}))
        ->capture_default_str();
    app.add_option("--log-level", log_level, "trace, debug, info, warn, error, critical, off")
        ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}))
        ->capture_default_str();

    PoolOptions pools;
    app.add_option("--max-guests", pools.max_guests,
                   "guest devices served at once; each gets 1/N of every shared pool, and a "
                   "device beyond N is refused")
        ->check(CLI::Range(1u, 0x7FEFu))
        ->capture_default_str();
    app.add_option("--lend-pool-pages", pools.lend_pages,
                   "pages all guests may borrow (LEND) together (default: gntalloc's limit "
                   "on Xen, dom0's grant table on the simulated hypervisor)")
        ->type_name("PAGES")
        ->check(CLI::Range(uint64_t{1}, uint64_t{UINT32_MAX}));
    app.add_option("--map-pool-pages", pools.map_pages, "pages all guests may have MAPped together")
        ->type_name("PAGES")
        ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40))
        ->capture_default_str();
    app.add_option("--event-channel-pool", pools.event_channels,
                   "event channels of the backend domain xenhsa may use")
        ->type_name("N")
        ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 32))
        ->capture_default_str();
    app.add_option("--watch-pool", pools.store_watches,
                   "xenstore watches of the backend domain xenhsa may use")
        ->type_name("N")
        ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 32))
        ->capture_default_str();

    // The worker's entry point: started by the supervisor, not by hand.
    bool worker = false;
    unsigned fe_domid = 0;
    unsigned devid = 0;
    int control_fd = -1;
    app.add_flag("--worker", worker)->group("");
    app.add_option("--fe-domid", fe_domid)->group("")->check(CLI::Range(1u, 0x7FEFu));
    app.add_option("--devid", devid)->group("");
    app.add_option("--control-fd", control_fd)->group("")->check(CLI::Range(0, 1 << 20));
    app.add_option("--map-ceiling", connector.ceilings.max_map_pages)->group("");
    app.add_option("--lend-ceiling", connector.ceilings.max_lend_pages)->group("");
    app.add_option("--worker-uid", confinement.uid)
        ->group("")
        ->check(CLI::Range(1000u, 0xFFFFFFFEu));
    app.add_option("--worker-cpu-groups", confinement.cpu_groups)->group("");
#if XENHSA_TEST_HOOKS
    // Test builds: the seam faults the workers inject (fault_plan.hpp).
    app.add_option("--fault-plan", connector.fault_plan)->group("");
#endif

    CLI11_PARSE(app, argc, argv);

    if (sim_dir.empty() && !xen) {
        std::fprintf(stderr, "xenhsa-backend: give --sim-dir DIR or --xen\n");
        return 2;
    }
    const auto level = parse_log_level(log_level).value_or(spdlog::level::info);
    const PlatformChoice platform{sim_dir, xen};
    confinement.seccomp = parse_seccomp_mode(seccomp).value_or(SeccompMode::kill);
    confinement.enabled = confine == "on";

    if (worker) {
        if (fe_domid == 0) {
            std::fprintf(stderr, "xenhsa-backend: --worker needs --fe-domid\n");
            return 2;
        }
        WorkerOptions options;
        options.platform = platform;
        options.device = {static_cast<xenhsa::xen::DomId>(fe_domid), devid};
        options.control_fd = control_fd;
        options.connector = connector;
        options.log_level = level;
        options.confinement = confinement;
        return run_worker(options);
    }

    SupervisorOptions options;
    options.platform = platform;
    options.connector = connector;
    options.confinement = confinement;
    options.log_level = level;
    options.pools = pools;
    if (!worker_uids.empty()) {
        options.worker_uids = *parse_worker_uids(worker_uids);
    }
    if (!control_socket.empty()) {
        options.control_socket = control_socket;
    } else if (xen) {
        options.control_socket = kDefaultRealSocket;
        std::error_code ec;
        std::filesystem::create_directories(options.control_socket.parent_path(), ec);
    } else {
        options.control_socket = std::filesystem::path(sim_dir) / "backend.sock";
    }
    return run_supervisor(options);
}
