#include <spdlog/spdlog.h>

#include <csignal>
#include <xenhsa/backend/service/control_messages.hpp>
#include <xenhsa/backend/service/logging.hpp>
#include <xenhsa/backend/service/supervisor.hpp>

#include "supervisor_impl.hpp"
#if XENHSA_TEST_HOOKS
#include <xenhsa/xen/faulty_platform.hpp>
#endif

namespace xenhsa::backend::service::supervision {

Supervisor::Supervisor(const SupervisorOptions& options, xen::Platform& platform,
                       std::filesystem::path worker_exe, const PoolShares& shares)
    : options_(options),
      platform_(platform),
      worker_exe_(std::move(worker_exe)),
      log_(spdlog::default_logger()),
      be_(platform.domains->self()),
      root_(backend_root(be_)),
      stop_signals_(io_, SIGTERM, SIGINT),
      child_signal_(io_, SIGCHLD),
      grace_(io_),
      pump_(
          io_, *platform.store, [this](const xen::WatchEvent& e) { on_watch(e); },
          [this](std::error_code ec) {
              log_->error("xenstore watch failed: {}", ec.message());
              exit_code_ = 1;
              begin_shutdown();
          }),
      control_(io_, options.control_socket,
               [this](const nlohmann::json& r, ControlServer::Reply reply) {
                   on_control(r, std::move(reply));
               }),
      shares_(shares),
      worker_uids_(options.worker_uids) {}

int Supervisor::run() {
    stop_signals_.async_wait([this](boost::system::error_code ec, int signo) {
        if (!ec) {
            log_->info("signal {}: shutting down", signo);
            begin_shutdown();
        }
    });
    wait_children();
    cpu_groups_ = CpuGroups::open();
    if (cpu_groups_.enabled()) {
        log_->info("each worker gets an equal CPU share of its own under {}",
                   cpu_groups_.dir().string());
        cpu_groups_.sweep();
    } else {
        log_->warn(
            "CPU is not shared out per guest (one guest's threads can crowd out the "
            "others): {}",
            cpu_groups_.why_disabled());
    }
    adopt_workers();
    if (auto listening = control_.listen(); !listening) {
        log_->error("cannot serve the control socket {}: {}", options_.control_socket.string(),
                    listening.error().message());
        return 1;
    }
    if (auto watched = platform_.store->watch(root_, kDevicesToken); !watched) {
        log_->error("cannot watch {}: {}", root_, watched.error().message());
        return 1;
    }
    // A driver domain may not be allowed to; a dead guest's frontend directory going
    // away still closes its device then.
    if (auto watched = platform_.store->watch("@releaseDomain", kReleaseToken); !watched) {
        log_->warn("cannot watch @releaseDomain: {}", watched.error().message());
    }
    if (auto pumping = pump_.start(); !pumping) {
        log_->error("cannot wait for xenstore: {}", pumping.error().message());
        return 1;
    }
    log_->info("serving backend domain {} ({}), control socket {}", be_, root_,
               options_.control_socket.string());
    notify_ready();
    io_.run();
    devices_.clear();  // kills and reaps anything left (only after a failure)
    if (exit_code_ == 0 && confinement_violations_ != 0) {
        log_->error("{} worker(s) were killed by their seccomp filter during this run",
                    confinement_violations_);
        return kExitConfinementViolated;
    }
    return exit_code_;
}

void Supervisor::begin_shutdown() {
    if (shutting_down_) {
        return;
    }
    shutting_down_ = true;
    notify_stopping();
    control_.close();
    stop_signals_.cancel();
    std::vector<DeviceId> idle;
    for (auto& [id, dev] : devices_) {
        dev.restart.cancel();
        unwatch_frontend(dev);
        if (dev.worker) {
            dev.worker->shutdown();
        } else {
            idle.push_back(id);
        }
    }
    for (const auto& id : idle) {
        forget(id);
    }
    log_->info("revoking every guest's resources: {} worker(s) to end", devices_.size());
    grace_.expires_after(options_.shutdown_grace);
    grace_.async_wait([this](boost::system::error_code ec) {
        if (ec) {
            return;
        }
        for (auto& [id, dev] : devices_) {
            if (dev.worker) {
                log_->warn("device {}: worker {} did not end in time: killing it", to_string(id),
                           dev.worker->pid());
                dev.worker->kill();
            }
        }
    });
    maybe_finish();
}

void Supervisor::maybe_finish() {
    if (shutting_down_ && devices_.empty()) {
        grace_.cancel();
        child_signal_.cancel();
        io_.stop();
    }
}

}  // namespace xenhsa::backend::service::supervision

namespace xenhsa::backend::service {

// The pools' sizes: the options, and the LEND pool from the platform unless given.
// nullopt (logged) when the given LEND pool is larger than the platform's.
std::optional<PoolSizes> pool_sizes(const PoolOptions& options, xen::Platform& platform) {
    PoolSizes pools{0, options.map_pages, options.event_channels, options.store_watches};
    const auto platform_pool = platform.usage
                                   ? platform.usage->share_pool_pages()
                                   : xen::Result<uint32_t>(xen::errc(std::errc::not_supported));
    if (options.lend_pages) {
        if (platform_pool && *options.lend_pages > platform_pool.value()) {
            spdlog::error("--lend-pool-pages {} is larger than the hypervisor's pool ({} pages)",
                          *options.lend_pages, platform_pool.value());
            return std::nullopt;
        }
        pools.lend_pages = *options.lend_pages;
    } else if (platform_pool) {
        pools.lend_pages = platform_pool.value();
    } else {
        spdlog::warn(
            "cannot read the LEND pool's size ({}): assuming {} pages (give "
            "--lend-pool-pages)",
            platform_pool.error().message(), kFallbackLendPoolPages);
        pools.lend_pages = kFallbackLendPoolPages;
    }
    return pools;
}

int run_supervisor(const SupervisorOptions& options) {
    setup_logging("supervisor", options.log_level);
    std::signal(SIGPIPE, SIG_IGN);

    std::error_code ec;
    std::filesystem::path exe = options.worker_exe;
    if (exe.empty()) {
        exe = std::filesystem::read_symlink("/proc/self/exe", ec);
        if (ec) {
            spdlog::error("cannot find this binary: {}", ec.message());
            return 1;
        }
    }
    if (const auto problem = check_connector_config(options.connector)) {
        spdlog::error("{}", *problem);
        return 1;
    }
    auto platform = open_platform(options.platform, PlatformRole::supervisor);
    if (!platform) {
        spdlog::error("cannot open the hypervisor: {}", platform.error().message());
        return 1;
    }
    SupervisorOptions armed = options;
#if XENHSA_TEST_HOOKS
    armed.faults = std::make_shared<FaultPlan>();
    platform.value() = xen::with_faults(std::move(platform.value()), FaultPlan::hook(armed.faults));
#endif
    const auto pools = pool_sizes(options.pools, platform.value());
    if (!pools) {
        return 1;
    }
    if (const auto problem = PoolShares::check(*pools, options.pools.max_guests)) {
        spdlog::error("{}", *problem);
        return 1;
    }
    const PoolShares shares(*pools, options.pools.max_guests);
    spdlog::info(
        "pools: {} LEND pages, {} map pages for at most {} guest devices: {} and {} "
        "pages each",
        pools->lend_pages, pools->map_pages, shares.max_guests(), shares.lend_share(),
        shares.map_share());
    supervision::Supervisor supervisor(armed, platform.value(), std::move(exe), shares);
    return supervisor.run();
}

}  // namespace xenhsa::backend::service
