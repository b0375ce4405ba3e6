#include "report.hpp"

#include <fmt/core.h>

#include <cstdio>

namespace xenhsa::frontend::cli {

std::string describe(const std::error_code& ec) {
    return fmt::format("{}:{}({})", ec.category().name(), ec.value(), ec.message());
}

bool Report::check(std::string_view name, bool held, std::string_view detail) {
    ++checks_;
    failed_ += held ? 0 : 1;
    if (detail.empty()) {
        fmt::print("check {} {}\n", name, held ? "ok" : "FAIL");
    } else {
        fmt::print("check {} {} {}\n", name, held ? "ok" : "FAIL", detail);
    }
    std::fflush(stdout);
    return held;
}

void Report::info(std::string_view text) {
    fmt::print("info {}\n", text);
    std::fflush(stdout);
}

int Report::finish() {
    const bool ok = checks_ > 0 && failed_ == 0;
    fmt::print("summary {} checks={} failed={} result={}\n", scenario_, checks_, failed_,
               ok ? "ok" : "FAIL");
    std::fflush(stdout);
    return ok ? 0 : 1;
}

}  // namespace xenhsa::frontend::cli
