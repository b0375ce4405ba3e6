// Logging (spdlog) and the systemd service protocol. Under systemd (stderr is the
// journal stream named by JOURNAL_STREAM) log records go to the journal through
// sd_journal_send with their priority and the device they concern; otherwise to stderr.
// Without XENHSA_WITH_SYSTEMD everything goes to stderr and the notifications are no-ops.
#ifndef XENHSA_BACKEND_SERVICE_LOGGING_HPP
#define XENHSA_BACKEND_SERVICE_LOGGING_HPP

#include <spdlog/common.h>
#include <spdlog/logger.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <xenhsa/backend/service/xenbus.hpp>

namespace xenhsa::backend::service {

// True when stderr is the journal stream systemd set up for this service.
bool stderr_is_journal() noexcept;

// Installs the default logger for this process. `device`: the guest device a worker
// serves (journal fields XENHSA_DOMID, XENHSA_DEVID).
void setup_logging(std::string name, spdlog::level::level_enum level,
                   std::optional<DeviceId> device = std::nullopt);
// A logger with its own name and the default logger's sinks and level.
std::shared_ptr<spdlog::logger> make_logger(std::string name);

// sd_notify: READY=1 once serving, STOPPING=1 on shutdown.
void notify_ready() noexcept;
void notify_stopping() noexcept;

// "trace", "debug", "info", "warn", "error", "critical", "off".
std::optional<spdlog::level::level_enum> parse_log_level(std::string_view text) noexcept;

}  // namespace xenhsa::backend::service

#endif
