// The command line a worker is started with: what it needs of the supervisor's options.
#include <spdlog/spdlog.h>

#include <string>
#include <vector>
#include <xenhsa/backend/service/supervisor.hpp>
#include <xenhsa/backend/service/worker_process.hpp>

namespace xenhsa::backend::service {

namespace {

// spdlog's name of a level, as --log-level takes it.
std::string level_name(spdlog::level::level_enum level) {
    const auto sv = spdlog::level::to_string_view(level);
    std::string name(sv.data(), sv.size());
    return name == "warning" ? "warn" : name;
}

}  // namespace

std::vector<std::string> worker_arguments(const SupervisorOptions& options, DeviceId device) {
    std::vector<std::string> args = {"--worker",
                                     "--fe-domid",
                                     std::to_string(device.fe),
                                     "--devid",
                                     std::to_string(device.devid),
                                     "--control-fd",
                                     std::to_string(kWorkerControlFd)};
    if (options.platform.xen) {
        args.emplace_back("--xen");
    } else {
        args.emplace_back("--sim-dir");
        args.push_back(options.platform.sim_dir.string());
    }
    args.emplace_back("--gpu");
    args.push_back(options.connector.gpu_mode);
    args.emplace_back("--soft-gfx");
    args.push_back(options.connector.soft_gfx);
    if (options.connector.agent_threads != 0) {
        args.emplace_back("--agent-threads");
        args.push_back(std::to_string(options.connector.agent_threads));
    }
    args.emplace_back("--ring-spin-us");
    args.push_back(std::to_string(options.connector.ring_spin_us));
    if (!options.connector.config_file.empty()) {
        args.emplace_back("--config");
        args.push_back(options.connector.config_file.string());
    }
    for (const auto& setting : options.connector.settings) {
        args.emplace_back("--set");
        args.push_back(setting);
    }
    if (const auto& map = options.connector.ceilings.max_map_pages) {
        args.emplace_back("--map-ceiling");
        args.push_back(std::to_string(*map));
    }
    if (const auto& lend = options.connector.ceilings.max_lend_pages) {
        args.emplace_back("--lend-ceiling");
        args.push_back(std::to_string(*lend));
    }
    if (!options.connector.fault_plan.empty()) {
        args.emplace_back("--fault-plan");
        args.push_back(options.connector.fault_plan);
    }
    args.emplace_back("--log-level");
    args.push_back(level_name(options.log_level));
    if (!options.confinement.enabled) {
        args.emplace_back("--worker-confinement");
        args.emplace_back("off");
    }
    if (!options.confinement.user.empty()) {
        args.emplace_back("--worker-user");
        args.push_back(options.confinement.user);
    }
    if (options.confinement.uid) {
        args.emplace_back("--worker-uid");
        args.push_back(std::to_string(*options.confinement.uid));
    }
    if (!options.confinement.cpu_groups.empty()) {
        args.emplace_back("--worker-cpu-groups");
        args.push_back(options.confinement.cpu_groups.string());
    }
    args.emplace_back("--worker-seccomp");
    args.emplace_back(seccomp_mode_name(options.confinement.seccomp));
    return args;
}

}  // namespace xenhsa::backend::service
