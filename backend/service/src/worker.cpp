#include <spdlog/spdlog.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <csignal>
#include <limits>
#include <xenhsa/backend/service/control_messages.hpp>
#include <xenhsa/backend/service/cpu_groups.hpp>
#include <xenhsa/backend/service/line_channel.hpp>
#include <xenhsa/backend/service/logging.hpp>
#include <xenhsa/backend/service/store_pump.hpp>
#include <xenhsa/backend/service/worker.hpp>
#include <xenhsa/backend/service/xenbus_device.hpp>
#if XENHSA_TEST_HOOKS
#include <xenhsa/xen/faulty_platform.hpp>

#include "compromised_worker.hpp"
#endif

namespace xenhsa::backend::service {

namespace {

// The worker's loop and the objects on it, in construction order (destroyed in reverse:
// the device, and with it the connected guest, before the platform it uses).
class Worker {
public:
    Worker(const WorkerOptions& options, xen::Platform& platform, GuestConnector& factory)
        : options_(options),
          platform_(platform),
          factory_(factory),
          log_(spdlog::default_logger()),
          signals_(io_, SIGTERM, SIGINT),
          device_(io_, platform, factory, options.device, log_),
          pump_(
              io_, *platform.store, [this](const xen::WatchEvent& e) { device_.on_watch(e); },
              [this](std::error_code ec) {
                  log_->error("xenstore watch failed: {}", ec.message());
                  finish(1);
              }) {}

    int run() {
        if (options_.control_fd >= 0 && !open_channel()) {
            return 1;
        }
        signals_.async_wait([this](boost::system::error_code ec, int signo) {
            if (!ec) {
                log_->info("signal {}: revoking everything and ending", signo);
                finish(0);
            }
        });
        // What the guest still maps of its lends is read by the supervisor when the guest
        // reconnects, so the HELLO of the new connection reports a current LEND bound.
        device_.on_factory_wanted = [this] {
            if (channel_) {
                channel_->send({{"event", "ceilings-wanted"}});
            }
        };
        device_.on_state_change = [this](XenbusState state) {
            if (channel_ && state == XenbusState::closed) {
                factory_.ceilings_outdated();  // the supervisor answers with new ones
            }
            if (channel_) {
                channel_->send({{"event", "state"}, {"state", std::string(to_string(state))}});
            }
        };
        device_.on_store_failure = [this](std::error_code) {
            boost::asio::post(io_, [this] { finish(1); });
        };
        if (auto pumping = pump_.start(); !pumping) {
            log_->error("cannot wait for xenstore: {}", pumping.error().message());
            return 1;
        }
        // Confined before the device's first watch: libxenstore starts its reader thread
        // there, and a thread inherits its creator's filter, no_new_privs and credentials.
        if (!confine()) {
            return 1;
        }
        auto started = device_.start();
        if (!started) {
            if (started.error() == std::errc::no_such_file_or_directory) {
                log_->info("the device's backend directory is gone");
                return 0;
            }
            log_->error("cannot start the device: {}", started.error().message());
            return 1;
        }
        log_->info("serving {} ({})", to_string(options_.device), device_.backend_path());
        io_.run();
        return exit_code_;
    }

private:
    // Before the loop reads anything of the guest's (its xenstore keys included).
    bool confine() {
        if (!options_.confinement.enabled) {
            log_->warn("running unconfined (--worker-confinement off)");
            return true;
        }
        const ConfinementResult confined = confine_worker(options_.confinement);
        if (!confined.report) {
            log_->error("cannot confine the worker: {}", confined.error);
            return false;
        }
        const ConfinementReport& r = *confined.report;
        log_->info(
            "confined: uid {} gid {}, no capabilities, no new privileges, seccomp {} "
            "({} system calls allowed)",
            r.uid, r.gid, seccomp_mode_name(options_.confinement.seccomp), r.allowed_syscalls);
        for (const std::string& fd : r.fds) {
            log_->debug("open fd {}", fd);
        }
        return true;
    }

    bool open_channel() {
        boost::asio::local::stream_protocol::socket socket(io_);
        boost::system::error_code ec;
        socket.assign(boost::asio::local::stream_protocol(), options_.control_fd, ec);
        if (ec) {
            log_->error("bad --control-fd {}: {}", options_.control_fd, ec.message());
            return false;
        }
        channel_ = LineChannel::create(std::move(socket));
        channel_->start([this](const nlohmann::json& m) { on_request(m); },
                        [this](std::error_code) {
                            log_->info("the supervisor went away: revoking everything");
                            finish(0);
                        });
        return true;
    }

    void on_request(const nlohmann::json& request) {
        const auto op = json_string(request, "op");
        nlohmann::json reply = {{"ok", true}};
        if (op == op::status) {
            reply["status"] = to_json(device_.status());
        } else if (op == op::revoke) {
            if (const auto handle = json_uint(request, "handle")) {
                reply["revoked_handle"] = device_.revoke_handle(*handle);
            } else {
                device_.revoke_all();
            }
            reply["status"] = to_json(device_.status());
        } else if (op == op::quotas) {
            const auto settings = json_settings(request);
            uint64_t revoked = 0;
            const auto refused = settings ? device_.update_limits(*settings, revoked)
                                          : std::optional<std::string>("bad \"set\" list");
            if (refused) {
                reply["ok"] = false;
                reply["error"] = *refused;
            } else {
                reply["status"] = to_json(device_.status());
                reply["status"]["revoked"] = revoked;
            }
        } else if (op == op::ceilings) {
            constexpr uint64_t kMax32 = std::numeric_limits<uint32_t>::max();
            const auto map = json_uint(request, "max_map_pages");
            const auto lend = json_uint(request, "max_lend_pages");
            if (!map || !lend || *map > kMax32 || *lend > kMax32) {
                reply = error_reply("bad ceilings");
            } else {
                factory_.set_ceilings({static_cast<uint32_t>(*map), static_cast<uint32_t>(*lend)});
                uint64_t revoked = 0;
                (void)device_.update_limits({}, revoked);  // a connected guest gets them too
                device_.factory_ready();
            }
#if XENHSA_TEST_HOOKS
        } else if (op == op::test_forbidden_syscall) {
            log_->warn("test hook: making a system call the filter forbids");
            make_forbidden_syscall();
            reply = error_reply("the forbidden system call was allowed");
        } else if (op == op::test_attack) {
            log_->warn("test hook: attempting {}", json_string(request, "attempt").value_or("?"));
            reply = make_attack_attempt(request, platform_);
#endif
        } else if (op == op::shutdown) {
            log_->info("shutdown requested: revoking everything");
            finish(0);
            return;
        } else {
            reply = error_reply("unknown op");
        }
        if (const auto it = request.find("id"); it != request.end()) {
            reply["id"] = *it;
        }
        channel_->send(reply);
    }

    void finish(int code) {
        if (finished_) {
            return;
        }
        finished_ = true;
        exit_code_ = code;
        device_.shutdown();
        io_.stop();
    }

    const WorkerOptions& options_;
    xen::Platform& platform_;  // the test hook's attempts only
    GuestConnector& factory_;
    std::shared_ptr<spdlog::logger> log_;
    boost::asio::io_context io_;
    boost::asio::signal_set signals_;
    XenbusDevice device_;
    StorePump pump_;
    std::shared_ptr<LineChannel> channel_;
    bool finished_ = false;
    int exit_code_ = 0;
};

}  // namespace

int run_worker(const WorkerOptions& options) {
    setup_logging("worker " + to_string(options.device), options.log_level, options.device);
    std::signal(SIGPIPE, SIG_IGN);

    SeamFaultHook faults;
#if XENHSA_TEST_HOOKS
    if (!options.connector.fault_plan.empty()) {
        auto plan = std::make_shared<FaultPlan>();
        if (const auto bad = plan->arm(options.connector.fault_plan)) {
            spdlog::error("{}", *bad);
            return 1;
        }
        spdlog::warn("test build: injecting seam faults ({})", plan->spec());
        faults = FaultPlan::hook(plan);
    }
#endif
    if (!options.confinement.cpu_groups.empty()) {
        // Before the helpers a real-Xen worker forks (the grant broker does work the worker
        // asks for) and before any thread: all of it shares the guest's one CPU share.
        const auto groups = CpuGroups::at(options.confinement.cpu_groups);
        if (auto placed = groups.place(::getpid()); !placed) {
            spdlog::warn("no CPU group of its own in {}: {}",
                         options.confinement.cpu_groups.string(), placed.error().message());
        }
    }
    auto platform = open_platform(options.platform, PlatformRole::worker, options.device.fe);
    if (!platform) {
        spdlog::error("cannot open the hypervisor: {}", platform.error().message());
        return 1;
    }
#if XENHSA_TEST_HOOKS
    if (faults) {
        platform.value() = xen::with_faults(std::move(platform.value()), faults);
    }
#endif
    std::string error;
    auto factory = make_connector(options.connector, spdlog::default_logger(), error, faults);
    if (!factory) {
        spdlog::error("cannot set up sessions: {}", error);
        return 1;
    }
    int code = 1;
    {
        Worker worker(options, platform.value(), *factory);
        code = worker.run();
    }
    spdlog::info("worker ends ({})", code);
    return code;
}

}  // namespace xenhsa::backend::service
