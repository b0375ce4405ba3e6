#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <xenhsa/backend/service/control_messages.hpp>
#include <xenhsa/backend/service/xenbus.hpp>

#include "supervisor_impl.hpp"
#include "worker_fd_store.hpp"

namespace xenhsa::backend::service::supervision {

namespace {

constexpr std::chrono::milliseconds kFirstRestartDelay{100};
constexpr std::chrono::milliseconds kMaxRestartDelay{5000};
constexpr int kTooManyGuests = EUSERS;

std::string describe_exit(int status) {
    if (WIFEXITED(status)) {
        return "exit status " + std::to_string(WEXITSTATUS(status));
    }
    if (WIFSIGNALED(status)) {
        return std::string("signal ") + std::to_string(WTERMSIG(status));
    }
    return "status " + std::to_string(status);
}

}  // namespace

void Supervisor::start_worker(Device& dev) {
    dev.restart_pending = false;
    if (!shares_.admit(dev.id)) {
        refuse(dev);
        return;
    }
    dev.refused = false;
    dev.held_pages = held_pages(dev.id.fe);
    dev.ceilings = shares_.ceilings(dev.held_pages);
    SupervisorOptions options = options_for(dev.id.fe);
    options.connector.ceilings = dev.ceilings;
    options.connector.agent_threads =
        agent_threads_for(options.connector.agent_threads, shares_.guests(), cpus_);
    const auto cannot_start = [&](const std::string& why) {
        log_->error("cannot start a worker for {}: {}", to_string(dev.id), why);
        ++dev.failures;
        mark_closed(dev.id);
        watch_frontend(dev);
    };
    // A worker started as root becomes a uid of its own, unless one user was named for all.
    const bool own_uid =
        ::geteuid() == 0 && options.confinement.enabled && options.confinement.user.empty();
    if (own_uid) {
        options.confinement.uid = worker_uids_.take();
        if (!options.confinement.uid) {
            const WorkerUidRange& range = worker_uids_.range();
            cannot_start(fmt::format(
                "all {} worker uids from {} are in use (--worker-uids FIRST:COUNT widens the "
                "range)",
                range.count, range.first));
            return;
        }
    }
    if (cpu_groups_.enabled()) {
        options.confinement.cpu_groups = cpu_groups_.dir();
    }
    auto worker = WorkerProcess::spawn(io_, worker_exe_, worker_arguments(options, dev.id));
    // Test builds: a fault plan is for one worker, so that the device's next worker, started
    // after the fault, shows how the guest recovers.
    options_.connector.fault_plan.clear();
    if (!worker) {
        if (options.confinement.uid) {
            worker_uids_.give_back(*options.confinement.uid);
        }
        cannot_start(worker.error().message());
        return;
    }
    dev.worker = std::move(worker).value();
    dev.uid = options.confinement.uid;
    if (cpu_groups_.enabled()) {
        if (auto placed = cpu_groups_.place(dev.worker->pid()); !placed) {
            log_->warn("device {}: worker {} has no CPU share of its own: {}", to_string(dev.id),
                       dev.worker->pid(), placed.error().message());
        }
    }
    dev.worker->on_ceilings_wanted = [this, id = dev.id] { send_ceilings(id); };
    if (WorkerFdStore::keep(dev.id, dev.worker->pid(), dev.worker->channel_fd())) {
        log_->debug("device {}: worker {}'s channel kept by the service manager", to_string(dev.id),
                    dev.worker->pid());
    }
    log_->info(
        "device {}: worker {} started{} (max_map_pages <= {}, max_lend_pages <= {}, "
        "{} lent page(s) still held)",
        to_string(dev.id), dev.worker->pid(),
        dev.uid ? " as uid " + std::to_string(*dev.uid) : std::string(),
        *dev.ceilings.max_map_pages, *dev.ceilings.max_lend_pages, dev.held_pages);
}

void Supervisor::refuse(Device& dev) {
    log_->warn("device {}: refused, {} guest devices are served already (--max-guests)",
               to_string(dev.id), shares_.max_guests());
    dev.refused = true;
    dev.frontend_left = false;
    const std::pair<std::string_view, std::string> values[] = {
        {"error", std::to_string(kTooManyGuests) + " the backend serves at most " +
                      std::to_string(shares_.max_guests()) + " guest devices"},
        {"state", state_value(XenbusState::closed)},
    };
    if (auto written = write_if_present(*platform_.store, backend_dir(be_, dev.id), values);
        !written) {
        log_->warn("device {}: cannot write the refusal: {}", to_string(dev.id),
                   written.error().message());
    }
    watch_frontend(dev);
}

uint64_t Supervisor::held_pages(xen::DomId fe) {
    if (!platform_.usage) {
        return 0;
    }
    auto held = platform_.usage->held_by(fe);
    if (!held) {
        if (!usage_warned_) {
            usage_warned_ = true;
            log_->warn(
                "cannot tell which lent pages a guest still maps ({}): counting "
                "none against its LEND share",
                held.error().message());
        }
        return 0;
    }
    return held.value();
}

void Supervisor::send_ceilings(const DeviceId& id) {
    const auto it = devices_.find(id);
    if (it == devices_.end() || !it->second.worker || shutting_down_) {
        return;
    }
    Device& dev = it->second;
    dev.held_pages = held_pages(id.fe);
    dev.ceilings = shares_.ceilings(dev.held_pages);
    if (dev.held_pages != 0) {
        log_->info("device {}: {} lent page(s) still held, max_lend_pages <= {}", to_string(id),
                   dev.held_pages, *dev.ceilings.max_lend_pages);
    }
    dev.worker->request({{"op", op::ceilings},
                         {"max_map_pages", *dev.ceilings.max_map_pages},
                         {"max_lend_pages", *dev.ceilings.max_lend_pages}},
                        options_.worker_answer_timeout, [](std::optional<nlohmann::json>) {});
}

SupervisorOptions Supervisor::options_for(xen::DomId domid) const {
    SupervisorOptions options = options_;
    if (const auto it = domain_settings_.find(domid); it != domain_settings_.end()) {
        auto& settings = options.connector.settings;
        settings.insert(settings.end(), it->second.begin(), it->second.end());
    }
    return options;
}

void Supervisor::stop_worker(Device& dev) {
    dev.worker->shutdown();
    dev.kill.expires_after(options_.shutdown_grace);
    dev.kill.async_wait([this, id = dev.id](boost::system::error_code ec) {
        const auto it = devices_.find(id);
        if (ec || it == devices_.end() || !it->second.worker) {
            return;
        }
        log_->warn("device {}: worker {} did not end in time: killing it", to_string(id),
                   it->second.worker->pid());
        it->second.worker->kill();
    });
}

void Supervisor::wait_children() {
    child_signal_.async_wait([this](boost::system::error_code ec, int) {
        if (ec) {
            return;
        }
        reap();
        wait_children();
    });
}

void Supervisor::reap() {
    for (;;) {
        int status = 0;
        const pid_t pid = ::waitpid(-1, &status, WNOHANG);
        if (pid <= 0) {
            break;
        }
        const auto it = std::find_if(devices_.begin(), devices_.end(), [pid](auto& entry) {
            return entry.second.worker && entry.second.worker->pid() == pid;
        });
        if (it != devices_.end()) {
            worker_ended(it->second, status);
        }
    }
    maybe_finish();
}

void Supervisor::adopt_workers() {
    for (const StoredWorker& stored : WorkerFdStore::take()) {
        auto worker = WorkerProcess::adopt(io_, stored.pid, stored.fd);
        if (!worker) {
            log_->info("device {}: worker {} of the previous run is gone", to_string(stored.device),
                       stored.pid);
            WorkerFdStore::drop(stored.device, stored.pid);
            continue;
        }
        if (devices_.contains(stored.device)) {
            // One worker per device: a second stored one (never expected) is not trusted.
            log_->warn("device {}: worker {} of the previous run is a second worker; killing it",
                       to_string(stored.device), stored.pid);
            WorkerFdStore::drop(stored.device, stored.pid);
            continue;  // its WorkerProcess kills it on leaving scope
        }
        Device& dev = devices_.try_emplace(stored.device, io_, stored.device).first->second;
        (void)shares_.admit(dev.id);  // it had its slot in the previous run
        dev.held_pages = held_pages(dev.id.fe);
        dev.ceilings = shares_.ceilings(dev.held_pages);
        dev.worker = std::move(worker).value();
        if (const auto uid = assigned_worker_uid(stored.pid);
            uid && worker_uids_.range().contains(*uid)) {
            worker_uids_.hold(*uid);
            dev.uid = uid;
        }
        dev.worker->on_ceilings_wanted = [this, id = dev.id] { send_ceilings(id); };
        dev.worker->on_exit = [this, id = dev.id] { adopted_worker_ended(id); };
        // Only a supervisor that crashed leaves workers behind.
        log_->warn("device {}: adopted worker {}, which served it before this supervisor started",
                   to_string(dev.id), stored.pid);
    }
}

void Supervisor::adopted_worker_ended(const DeviceId& id) {
    const auto it = devices_.find(id);
    if (it != devices_.end() && it->second.worker) {
        worker_ended(it->second, std::nullopt);
    }
    maybe_finish();
}

void Supervisor::worker_ended(Device& dev, std::optional<int> wait_status) {
    dev.worker->reaped();
    const bool connected = dev.worker->ever_connected();
    const pid_t pid = dev.worker->pid();
    dev.worker.reset();
    dev.kill.cancel();
    WorkerFdStore::drop(dev.id, pid);
    cpu_groups_.remove(pid);
    cpu_groups_.sweep();  // a group its helpers were still leaving a moment ago
    if (dev.uid) {
        worker_uids_.give_back(*dev.uid);
        dev.uid.reset();
    }
    const int status = wait_status.value_or(0);
    const bool clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (!wait_status) {
        log_->info("device {}: adopted worker {} ended", to_string(dev.id), pid);
    } else if (clean) {
        log_->info("device {}: worker {} ended", to_string(dev.id), pid);
    } else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS) {
        ++dev.confinement_violations;
        ++confinement_violations_;
        log_->error(
            "device {}: worker {} was killed by its seccomp filter: a confinement "
            "violation (a system call outside the allowlist)",
            to_string(dev.id), pid);
    } else {
        log_->warn("device {}: worker {} died ({})", to_string(dev.id), pid, describe_exit(status));
    }
    mark_closed(dev.id);
    if (shutting_down_ || dev.removing) {
        const DeviceId id = dev.id;
        forget(id);
        return;
    }
    dev.failures = connected ? 0 : dev.failures + 1;
    watch_frontend(dev);
}

void Supervisor::mark_closed(const DeviceId& id) {
    const std::string dir = backend_dir(be_, id);
    const auto state = read_state(*platform_.store, dir);
    if (state && state.value() == XenbusState::closed) {
        return;
    }
    const auto written = write_state_if_present(*platform_.store, dir, XenbusState::closed);
    if (!written) {
        log_->warn("device {}: cannot write state Closed: {}", to_string(id),
                   written.error().message());
    }
}

void Supervisor::watch_frontend(Device& dev) {
    if (dev.watching_frontend) {
        return;
    }
    // Fires once now: a frontend already back at Initialising restarts at once.
    const auto watched =
        platform_.store->watch(frontend_dir(dev.id) + "/state", frontend_token(dev.id));
    if (!watched) {
        log_->warn("device {}: cannot watch the frontend: {}", to_string(dev.id),
                   watched.error().message());
        return;
    }
    dev.watching_frontend = true;
}

void Supervisor::unwatch_frontend(Device& dev) {
    if (!dev.watching_frontend) {
        return;
    }
    dev.watching_frontend = false;
    (void)platform_.store->unwatch(frontend_dir(dev.id) + "/state", frontend_token(dev.id));
}

void Supervisor::frontend_changed(const DeviceId& id) {
    const auto it = devices_.find(id);
    if (it == devices_.end()) {
        return;
    }
    Device& dev = it->second;
    if (dev.worker || dev.removing || dev.restart_pending || !dev.watching_frontend) {
        return;
    }
    const auto state = read_state(*platform_.store, frontend_dir(id));
    const bool initialising = state && state.value() == XenbusState::initialising;
    if (dev.refused && !initialising) {
        dev.frontend_left = true;
    }
    // A refused frontend still at Initialising has not seen the refusal yet.
    if (!initialising || (dev.refused && !dev.frontend_left)) {
        return;
    }
    unwatch_frontend(dev);
    const auto delay = restart_delay(dev.failures);
    if (delay.count() == 0) {
        log_->info("device {}: frontend reconnecting", to_string(id));
        start_worker(dev);
        return;
    }
    log_->info("device {}: frontend reconnecting; worker starts in {} ms", to_string(id),
               delay.count());
    dev.restart_pending = true;
    dev.restart.expires_after(delay);
    dev.restart.async_wait([this, id](boost::system::error_code ec) {
        const auto found = devices_.find(id);
        if (ec || shutting_down_ || found == devices_.end() || found->second.removing ||
            found->second.worker) {
            return;
        }
        start_worker(found->second);
    });
}

std::chrono::milliseconds Supervisor::restart_delay(unsigned failures) {
    if (failures == 0) {
        return std::chrono::milliseconds(0);
    }
    const unsigned shift = std::min(failures - 1, 8u);
    return std::min(kFirstRestartDelay * (1u << shift), kMaxRestartDelay);
}

}  // namespace xenhsa::backend::service::supervision
