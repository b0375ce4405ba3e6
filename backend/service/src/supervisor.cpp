#include <spdlog/spdlog.h>
#include <sys/wait.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cerrno>
#include <csignal>
#include <limits>
#include <map>
#include <set>
#include <xenhsa/backend/service/control_messages.hpp>
#include <xenhsa/backend/service/control_server.hpp>
#include <xenhsa/backend/service/logging.hpp>
#include <xenhsa/backend/service/store_pump.hpp>
#include <xenhsa/backend/service/supervisor.hpp>
#include <xenhsa/backend/service/worker_process.hpp>
#include <xenhsa/backend/service/xenbus.hpp>

#include "worker_answers.hpp"

namespace xenhsa::backend::service {

namespace {

constexpr std::string_view kDevicesToken = "xenhsa-devices";
constexpr std::string_view kReleaseToken = "xenhsa-release";
constexpr std::string_view kFrontendTokenPrefix = "xenhsa-fe/";
constexpr uint64_t kMaxGuestDomId = 0x7FEF;  // below DOMID_FIRST_RESERVED
constexpr std::chrono::milliseconds kFirstRestartDelay{100};
constexpr std::chrono::milliseconds kMaxRestartDelay{5000};
constexpr int kTooManyGuests = EUSERS;

std::string frontend_token(const DeviceId& id) {
    return std::string(kFrontendTokenPrefix) + std::to_string(id.fe) + "/" +
           std::to_string(id.devid);
}

std::optional<DeviceId> parse_frontend_token(std::string_view token) {
    if (!token.starts_with(kFrontendTokenPrefix)) {
        return std::nullopt;
    }
    token.remove_prefix(kFrontendTokenPrefix.size());
    const auto slash = token.find('/');
    if (slash == std::string_view::npos) {
        return std::nullopt;
    }
    const auto fe = xen::parse_store_uint(token.substr(0, slash), kMaxGuestDomId);
    const auto devid =
        xen::parse_store_uint(token.substr(slash + 1), std::numeric_limits<uint32_t>::max());
    if (!fe || !devid) {
        return std::nullopt;
    }
    return DeviceId{static_cast<xen::DomId>(fe.value()), static_cast<uint32_t>(devid.value())};
}

std::string describe_exit(int status) {
    if (WIFEXITED(status)) {
        return "exit status " + std::to_string(WEXITSTATUS(status));
    }
    if (WIFSIGNALED(status)) {
        return std::string("signal ") + std::to_string(WTERMSIG(status));
    }
    return "status " + std::to_string(status);
}

struct Device {
    Device(boost::asio::io_context& io, DeviceId device) : id(device), restart(io), kill(io) {}

    DeviceId id;
    std::unique_ptr<WorkerProcess> worker;
    bool removing = false;           // unplugged or its domain died: forget after the worker
    bool watching_frontend = false;  // waiting for Initialising to restart
    bool restart_pending = false;
    unsigned failures = 0;                // workers in a row that ended before connecting
    unsigned confinement_violations = 0;  // workers of this device seccomp killed
    bool refused = false;                 // beyond max_guests: waits for a slot or its frontend
    bool frontend_left = false;           // refused, and its frontend left Initialising since
    uint64_t held_pages = 0;              // lent pages its guest held when this connection began
    QuotaCeilings ceilings;
    boost::asio::steady_timer restart;
    boost::asio::steady_timer kill;
};

class Supervisor {
public:
    Supervisor(const SupervisorOptions& options, xen::Platform& platform,
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
          shares_(shares) {}

    int run() {
        stop_signals_.async_wait([this](boost::system::error_code ec, int signo) {
            if (!ec) {
                log_->info("signal {}: shutting down", signo);
                begin_shutdown();
            }
        });
        wait_children();
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

private:
    // --- discovery --------------------------------------------------------------------

    void on_watch(const xen::WatchEvent& event) {
        if (shutting_down_) {
            return;
        }
        if (event.token == kDevicesToken) {
            rescan();
        } else if (event.token == kReleaseToken) {
            domains_released();
        } else if (const auto id = parse_frontend_token(event.token)) {
            frontend_changed(*id);
        }
    }

    std::set<DeviceId> scan() {
        std::set<DeviceId> found;
        auto domains = platform_.store->directory(xen::kNoTx, root_);
        if (!domains) {
            if (domains.error() != std::errc::no_such_file_or_directory) {
                log_->warn("cannot list {}: {}", root_, domains.error().message());
            }
            return found;
        }
        for (const auto& fe_name : domains.value()) {
            const auto fe = xen::parse_store_uint(fe_name, kMaxGuestDomId);
            if (!fe) {
                log_->warn("ignoring {}/{}: not a guest domain id", root_, fe_name);
                continue;
            }
            auto devids = platform_.store->directory(xen::kNoTx, root_ + "/" + fe_name);
            if (!devids) {
                continue;  // removed meanwhile
            }
            for (const auto& dev_name : devids.value()) {
                const auto devid =
                    xen::parse_store_uint(dev_name, std::numeric_limits<uint32_t>::max());
                if (!devid) {
                    log_->warn("ignoring {}/{}/{}: not a device id", root_, fe_name, dev_name);
                    continue;
                }
                found.insert(DeviceId{static_cast<xen::DomId>(fe.value()),
                                      static_cast<uint32_t>(devid.value())});
            }
        }
        return found;
    }

    void rescan() {
        const auto found = scan();
        for (const auto& id : found) {
            if (!devices_.contains(id)) {
                add_device(id);
            }
        }
        std::vector<DeviceId> gone;
        for (const auto& [id, dev] : devices_) {
            if (!found.contains(id) && !dev.removing) {
                gone.push_back(id);
            }
        }
        for (const auto& id : gone) {
            log_->info("device {} unplugged", to_string(id));
            retire(id);
        }
    }

    void add_device(const DeviceId& id) {
        const auto alive = platform_.domains->alive(id.fe);
        if (alive && !alive.value()) {
            log_->debug("ignoring device {}: domain {} is gone", to_string(id), id.fe);
            return;
        }
        log_->info("new device {}", to_string(id));
        auto& dev = devices_.try_emplace(id, io_, id).first->second;
        start_worker(dev);
    }

    void domains_released() {
        std::vector<DeviceId> dead;
        std::set<xen::DomId> checked;
        for (const auto& [id, dev] : devices_) {
            if (dev.removing) {
                continue;
            }
            const auto alive = platform_.domains->alive(id.fe);
            if (alive && !alive.value()) {
                dead.push_back(id);
                if (checked.insert(id.fe).second) {
                    log_->info("domain {} is gone", id.fe);
                }
            }
        }
        for (const auto& id : dead) {
            retire(id);
        }
        // A later domain with the same id starts from the global quotas.
        for (auto it = domain_settings_.begin(); it != domain_settings_.end();) {
            const auto alive = platform_.domains->alive(it->first);
            it = alive && !alive.value() ? domain_settings_.erase(it) : std::next(it);
        }
    }

    // Ends the device's worker and forgets the device.
    void retire(const DeviceId& id) {
        const auto it = devices_.find(id);
        if (it == devices_.end()) {
            return;
        }
        Device& dev = it->second;
        dev.removing = true;
        dev.restart.cancel();
        unwatch_frontend(dev);
        if (!dev.worker) {
            forget(id);
            return;
        }
        stop_worker(dev);
    }

    // The device is gone: its slot goes to a refused device, if one waits.
    void forget(const DeviceId& id) {
        devices_.erase(id);
        const bool had_slot = shares_.admitted(id);
        shares_.leave(id);
        if (!had_slot || shutting_down_) {
            return;
        }
        for (auto& [other, dev] : devices_) {
            if (dev.refused && !dev.removing && !dev.worker) {
                log_->info("device {}: a guest slot is free", to_string(other));
                unwatch_frontend(dev);
                start_worker(dev);
                return;
            }
        }
    }

    // --- workers ------------------------------------------------------------------------

    void start_worker(Device& dev) {
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
        auto worker = WorkerProcess::spawn(io_, worker_exe_, worker_arguments(options, dev.id));
        if (!worker) {
            log_->error("cannot start a worker for {}: {}", to_string(dev.id),
                        worker.error().message());
            ++dev.failures;
            mark_closed(dev.id);
            watch_frontend(dev);
            return;
        }
        dev.worker = std::move(worker).value();
        dev.worker->on_ceilings_wanted = [this, id = dev.id] { send_ceilings(id); };
        log_->info(
            "device {}: worker {} started (max_map_pages <= {}, max_lend_pages <= {}, "
            "{} lent page(s) still held)",
            to_string(dev.id), dev.worker->pid(), *dev.ceilings.max_map_pages,
            *dev.ceilings.max_lend_pages, dev.held_pages);
    }

    // Every slot is taken: the device is refused the xenbus way, and tried again when a
    // slot frees or its frontend comes back to Initialising.
    void refuse(Device& dev) {
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

    // Lent pages `fe` still maps: they stay out of the LEND pool until it unmaps them.
    uint64_t held_pages(xen::DomId fe) {
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

    // The guest reconnects (a worker serves every connection of its device): the LEND
    // bound of the new connection follows what the guest still maps of earlier ones. The
    // worker holds the frontend before InitWait, and lends nothing, until this arrives.
    void send_ceilings(const DeviceId& id) {
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

    // The options a worker of `domid` starts with: quota changes included.
    SupervisorOptions options_for(xen::DomId domid) const {
        SupervisorOptions options = options_;
        if (const auto it = domain_settings_.find(domid); it != domain_settings_.end()) {
            auto& settings = options.connector.settings;
            settings.insert(settings.end(), it->second.begin(), it->second.end());
        }
        return options;
    }

    void stop_worker(Device& dev) {
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

    void wait_children() {
        child_signal_.async_wait([this](boost::system::error_code ec, int) {
            if (ec) {
                return;
            }
            reap();
            wait_children();
        });
    }

    void reap() {
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

    void worker_ended(Device& dev, int status) {
        dev.worker->reaped();
        const bool connected = dev.worker->ever_connected();
        const pid_t pid = dev.worker->pid();
        dev.worker.reset();
        dev.kill.cancel();
        const bool clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
        if (clean) {
            log_->info("device {}: worker {} ended", to_string(dev.id), pid);
        } else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS) {
            ++dev.confinement_violations;
            ++confinement_violations_;
            log_->error(
                "device {}: worker {} was killed by its seccomp filter: a confinement "
                "violation (a system call outside the allowlist)",
                to_string(dev.id), pid);
        } else {
            log_->warn("device {}: worker {} died ({})", to_string(dev.id), pid,
                       describe_exit(status));
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

    // The device has no worker: make the frontend see Closed (only while the device's
    // backend directory exists, and only if the worker did not write it already).
    void mark_closed(const DeviceId& id) {
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

    void watch_frontend(Device& dev) {
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

    void unwatch_frontend(Device& dev) {
        if (!dev.watching_frontend) {
            return;
        }
        dev.watching_frontend = false;
        (void)platform_.store->unwatch(frontend_dir(dev.id) + "/state", frontend_token(dev.id));
    }

    void frontend_changed(const DeviceId& id) {
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

    static std::chrono::milliseconds restart_delay(unsigned failures) {
        if (failures == 0) {
            return std::chrono::milliseconds(0);
        }
        const unsigned shift = std::min(failures - 1, 8u);
        return std::min(kFirstRestartDelay * (1u << shift), kMaxRestartDelay);
    }

    // --- control ------------------------------------------------------------------------

    void on_control(const nlohmann::json& request, ControlServer::Reply reply) {
        const auto op = json_string(request, "op");
        if (shutting_down_) {
            reply(error_reply("the backend is shutting down"));
        } else if (op == op::status) {
            ask_workers(std::nullopt, nlohmann::json{{"op", op::status}}, "domains",
                        [reply = std::move(reply),
                         total = confinement_violations_](nlohmann::json answer) mutable {
                            answer["confinement_violations"] = total;
                            reply(std::move(answer));
                        });
        } else if (op == op::revoke) {
            const auto domid = json_uint(request, "domid");
            if (!domid || *domid > kMaxGuestDomId) {
                reply(error_reply("revoke needs a guest domid"));
                return;
            }
            nlohmann::json ask = {{"op", op::revoke}};
            if (request.contains("handle")) {
                const auto handle = json_uint(request, "handle");
                if (!handle) {
                    reply(error_reply("bad handle"));
                    return;
                }
                ask["handle"] = *handle;
                log_->info("operator revoke of handle {:#x} of domain {}", *handle, *domid);
            } else {
                log_->info("operator revoke of domain {}", *domid);
            }
            ask_workers(static_cast<xen::DomId>(*domid), ask, "revoked", std::move(reply));
        } else if (op == op::quotas) {
            change_quotas(request, std::move(reply));
#if XENHSA_TEST_HOOKS
        } else if (op == op::test_forbidden_syscall) {
            const auto domid = json_uint(request, "domid");
            auto found = std::find_if(devices_.begin(), devices_.end(), [&](const auto& d) {
                return domid && d.first.fe == *domid && d.second.worker;
            });
            if (found == devices_.end()) {
                reply(error_reply("no running worker of that domain"));
                return;
            }
            log_->warn("test hook: asking worker {} to break its filter",
                       found->second.worker->pid());
            found->second.worker->request({{"op", op::test_forbidden_syscall}},
                                          options_.worker_answer_timeout,
                                          [](std::optional<nlohmann::json>) {});
            reply({{"ok", true}});
#endif
        } else {
            reply(error_reply("unknown op"));
        }
    }

    // The operator's quota change: checked as a whole first, then remembered for later
    // workers and sent to the running ones, which enforce it at once.
    void change_quotas(const nlohmann::json& request, ControlServer::Reply reply) {
        const auto settings = json_settings(request);
        if (!settings || settings->empty()) {
            reply(error_reply("quotas needs a \"set\" list of key=value strings"));
            return;
        }
        std::optional<xen::DomId> domid;
        if (request.contains("domid")) {
            const auto value = json_uint(request, "domid");
            if (!value || *value > kMaxGuestDomId) {
                reply(error_reply("bad domid"));
                return;
            }
            domid = static_cast<xen::DomId>(*value);
            const bool known = std::any_of(devices_.begin(), devices_.end(),
                                           [&](const auto& d) { return d.first.fe == *domid; });
            if (!known) {
                reply(error_reply("domain " + std::to_string(*domid) + " has no device"));
                return;
            }
        }
        SupervisorOptions probe = options_for(domid.value_or(0));
        probe.connector.settings.insert(probe.connector.settings.end(), settings->begin(),
                                        settings->end());
        if (const auto problem = check_connector_config(probe.connector)) {
            reply(error_reply(*problem));
            return;
        }
        auto& remembered = domid ? domain_settings_[*domid] : options_.connector.settings;
        remembered.insert(remembered.end(), settings->begin(), settings->end());
        log_->info("operator quota change{}", domid ? " of domain " + std::to_string(*domid) : "");
        ask_workers(domid, nlohmann::json{{"op", op::quotas}, {"set", *settings}}, "updated",
                    std::move(reply));
    }

    // Sends `request` to the worker of every device (of `domid` only, when given) and
    // answers with {"ok":..., <key>: [device status...]}.
    void ask_workers(std::optional<xen::DomId> domid, const nlohmann::json& request,
                     const char* key, ControlServer::Reply reply) {
        if (domid && std::none_of(devices_.begin(), devices_.end(),
                                  [&](const auto& d) { return d.first.fe == *domid; })) {
            reply(error_reply("domain " + std::to_string(*domid) + " has no device"));
            return;
        }
        const bool report = request.value("op", "") == op::status;
        auto answers = std::make_shared<WorkerAnswers>(key, request.contains("handle"), report,
                                                       std::move(reply));
        for (auto& [id, dev] : devices_) {
            if (domid && id.fe != *domid) {
                continue;
            }
            const std::size_t index = answers->add(offline_status(dev));
            if (!dev.worker) {
                continue;
            }
            answers->expect();
            const pid_t pid = dev.worker->pid();
            dev.worker->request(request, options_.worker_answer_timeout,
                                [answers, index, id = id, pid](std::optional<nlohmann::json> a) {
                                    answers->answer(index, id, pid, a);
                                });
        }
        answers->done();
    }

    // A device's status as the supervisor sees it, without asking its worker.
    nlohmann::json offline_status(const Device& dev) {
        DeviceStatus s;
        s.id = dev.id;
        if (dev.worker && dev.worker->reported_state()) {
            s.state = *dev.worker->reported_state();
        } else {
            const auto state = read_state(*platform_.store, backend_dir(be_, dev.id));
            s.state = state && state.value() ? *state.value() : XenbusState::unknown;
        }
        nlohmann::json j = to_json(s);
        if (dev.worker) {
            j["worker_pid"] = dev.worker->pid();
        }
        if (dev.confinement_violations != 0) {
            j["confinement_violations"] = dev.confinement_violations;
        }
        if (shares_.admitted(dev.id)) {
            j["lend_share"] = shares_.lend_share();
            j["map_share"] = shares_.map_share();
            j["held_pages"] = dev.held_pages;
        }
        return j;
    }

    // --- shutdown -----------------------------------------------------------------------

    void begin_shutdown() {
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
                    log_->warn("device {}: worker {} did not end in time: killing it",
                               to_string(id), dev.worker->pid());
                    dev.worker->kill();
                }
            }
        });
        maybe_finish();
    }

    void maybe_finish() {
        if (shutting_down_ && devices_.empty()) {
            grace_.cancel();
            child_signal_.cancel();
            io_.stop();
        }
    }

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
    bool usage_warned_ = false;
    uint64_t confinement_violations_ = 0;  // workers killed by their seccomp filter, in all
    bool shutting_down_ = false;
    int exit_code_ = 0;
};

}  // namespace

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
    Supervisor supervisor(options, platform.value(), std::move(exe), shares);
    return supervisor.run();
}

}  // namespace xenhsa::backend::service
