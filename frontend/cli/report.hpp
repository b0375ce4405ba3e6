// Machine-readable scenario output, one line each, for script/demo and the tests:
//   check <name> ok [detail]
//   check <name> FAIL <detail>
//   info <key>=<value> ...
//   summary <scenario> checks=<n> failed=<m> result=ok|FAIL
#ifndef XENHSA_FRONTEND_CLI_REPORT_HPP
#define XENHSA_FRONTEND_CLI_REPORT_HPP

#include <string>
#include <string_view>
#include <system_error>
#include <xenhsa/frontend/result.hpp>

namespace xenhsa::frontend::cli {

// "ENOENT-like text" for an error code: category:value (message).
std::string describe(const std::error_code& ec);

class Report {
public:
    explicit Report(std::string scenario) : scenario_(std::move(scenario)) {}

    // Records one check; returns `held` so callers can stop early.
    bool check(std::string_view name, bool held, std::string_view detail = {});
    template <class T>
    bool check(std::string_view name, const Result<T>& result, std::string_view detail = {}) {
        return result ? check(name, true, detail) : check(name, false, describe(result.error()));
    }
    void info(std::string_view text);

    [[nodiscard]] int failed() const noexcept { return failed_; }
    [[nodiscard]] int checks() const noexcept { return checks_; }
    // Prints the summary; the process exit code (0 iff at least one check ran and all held).
    int finish();

private:
    std::string scenario_;
    int checks_ = 0;
    int failed_ = 0;
};

}  // namespace xenhsa::frontend::cli

#endif
