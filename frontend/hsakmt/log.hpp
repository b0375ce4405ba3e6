// The library's logger ("xenhsa-hsakmt", stderr) and the once-per-function notice for
// calls that xenhsa does not support.
#ifndef XENHSA_FRONTEND_HSAKMT_LOG_HPP
#define XENHSA_FRONTEND_HSAKMT_LOG_HPP

#include <spdlog/spdlog.h>

#include <string_view>

namespace xenhsa::frontend::hsakmt {

spdlog::logger& log();
void set_log_level(std::string_view level) noexcept;
// Says once, at `level`, that `function` is refused, and why.
void refused_once(const char* function, std::string_view why,
                  spdlog::level::level_enum level = spdlog::level::warn) noexcept;

}  // namespace xenhsa::frontend::hsakmt

#endif
