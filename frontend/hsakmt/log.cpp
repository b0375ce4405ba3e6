#include "log.hpp"

#include <spdlog/sinks/stdout_sinks.h>

#include <mutex>
#include <set>
#include <string>

namespace xenhsa::frontend::hsakmt {

spdlog::logger& log() {
    // Not registered with spdlog: the application may use spdlog itself.
    static const auto logger = [] {
        auto made = std::make_shared<spdlog::logger>(
            "xenhsa-hsakmt", std::make_shared<spdlog::sinks::stderr_sink_mt>());
        made->set_level(spdlog::level::warn);
        made->set_pattern("%n: %l: %v");
        return made;
    }();
    return *logger;
}

void set_log_level(std::string_view level) noexcept {
    try {
        log().set_level(spdlog::level::from_str(std::string(level)));
    } catch (...) {
    }
}

void refused_once(const char* function, std::string_view why,
                  spdlog::level::level_enum level) noexcept {
    static std::mutex mutex;
    static std::set<std::string> told;
    try {
        std::lock_guard lock(mutex);
        if (told.insert(function).second) {
            log().log(level,
                      "{}: not supported over xenhsa ({}); returning "
                      "HSAKMT_STATUS_NOT_SUPPORTED",
                      function, why);
        }
    } catch (...) {
    }
}

}  // namespace xenhsa::frontend::hsakmt
