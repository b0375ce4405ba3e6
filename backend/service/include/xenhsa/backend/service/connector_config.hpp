// How a worker builds its sessions: the GPU seam to use and the quota configuration.
// make_connector() is the one place that picks the core's implementation.
#ifndef XENHSA_BACKEND_SERVICE_CONNECTOR_CONFIG_HPP
#define XENHSA_BACKEND_SERVICE_CONNECTOR_CONFIG_HPP

#include <spdlog/logger.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>
#include <xenhsa/backend/service/fault_plan.hpp>
#include <xenhsa/backend/service/guest_connector.hpp>
#include <xenhsa/backend/service/quota_ceilings.hpp>

namespace xenhsa::backend::service {

struct ConnectorConfig {
    std::string gpu_mode = "auto";      // auto | kfd | soft
    std::string soft_gfx = "gfx900";    // the software agent's ISA: gfx900 | 906 | 908 | 90a
    std::filesystem::path config_file;  // JSON quotas; empty: defaults
    std::vector<std::string> settings;  // "key=value" overrides, in order
    QuotaCeilings ceilings;             // applied after the file and the overrides
    // The software agent's workgroup workers; 0: sized when the worker starts (below).
    uint32_t agent_threads = 0;
    // How long a worker polls its ring after a pass before it sleeps (GuestOptions).
    uint32_t ring_spin_us = 50;
    // Test builds: the seam faults a worker injects (fault_plan.hpp); empty: none.
    std::string fault_plan;
};

// Workgroup workers for a worker started while `live_workers` (itself included) run on
// `cpus` CPUs: the CPUs shared out, at least 1, so that many guests do not oversubscribe
// the host. `configured` other than 0 wins.
uint32_t agent_threads_for(uint32_t configured, std::size_t live_workers, uint32_t cpus) noexcept;

// The CPUs this process may run on.
uint32_t usable_cpus() noexcept;

// A readable error for a software agent target (--soft-gfx) that does not exist, or
// nullopt.
std::optional<std::string> check_soft_gfx(std::string_view target);

// A readable description of what is wrong with `config`, or nullopt. Opens nothing: the
// supervisor checks its options with this before it starts any worker.
std::optional<std::string> check_connector_config(const ConnectorConfig& config);

// Opens this worker's GPU seam instance and returns the factory of its sessions.
// nullptr with `error` set when that fails. Test builds: `gpu_faults`, when set, wraps the
// GPU seam in hsa::with_faults.
std::unique_ptr<GuestConnector> make_connector(const ConnectorConfig& config,
                                               std::shared_ptr<spdlog::logger> log,
                                               std::string& error,
                                               const SeamFaultHook& gpu_faults = {});

}  // namespace xenhsa::backend::service

#endif
