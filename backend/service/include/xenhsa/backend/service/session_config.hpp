// How a worker builds its sessions: the GPU seam to use and the quota configuration.
// make_session_factory() is the one place that picks the core's implementation.
#ifndef XENHSA_BACKEND_SERVICE_SESSION_CONFIG_HPP
#define XENHSA_BACKEND_SERVICE_SESSION_CONFIG_HPP

#include <spdlog/logger.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>
#include <xenhsa/backend/service/device_session.hpp>
#include <xenhsa/backend/service/quota_ceilings.hpp>

namespace xenhsa::backend::service {

struct SessionConfig {
    std::string gpu_mode = "auto";      // auto | kfd | soft
    std::string soft_gfx = "gfx900";    // the software agent's ISA: gfx900 | 906 | 908 | 90a
    std::filesystem::path config_file;  // JSON quotas; empty: defaults
    std::vector<std::string> settings;  // "key=value" overrides, in order
    QuotaCeilings ceilings;             // applied after the file and the overrides
};

// A readable error for a software agent target (--soft-gfx) that does not exist, or
// nullopt.
std::optional<std::string> check_soft_gfx(std::string_view target);

// A readable description of what is wrong with `config`, or nullopt. Opens nothing: the
// supervisor checks its options with this before it starts any worker.
std::optional<std::string> check_session_config(const SessionConfig& config);

// Opens this worker's GPU seam instance and returns the factory of its sessions.
// nullptr with `error` set when that fails.
std::unique_ptr<SessionFactory> make_session_factory(const SessionConfig& config,
                                                     std::shared_ptr<spdlog::logger> log,
                                                     std::string& error);

}  // namespace xenhsa::backend::service

#endif
