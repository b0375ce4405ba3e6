#include "fatal.hpp"

#include <spdlog/spdlog.h>

#include <cstdlib>

namespace xenhsa::hsa::detail {

void fatal(const char* what, uint64_t object, const std::error_code& error) noexcept {
    spdlog::critical("gpu context: {} {:#x} failed on a release path: {} ({}); aborting", what,
                     object, error.message(), error.value());
    spdlog::default_logger_raw()->flush();
    std::abort();
}

}  // namespace xenhsa::hsa::detail
