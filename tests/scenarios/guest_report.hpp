// What `xenhsa-guest` printed on stdout, parsed (frontend/cli/report.hpp):
//   check <name> ok|FAIL [detail]
//   info <key>=<value> ...
//   summary <scenario> checks=<n> failed=<m> result=ok|FAIL
#ifndef XENHSA_TESTS_SCENARIOS_GUEST_REPORT_HPP
#define XENHSA_TESTS_SCENARIOS_GUEST_REPORT_HPP

#include <gtest/gtest.h>

#include <optional>
#include <spawned_process.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace xenhsa::testing::scenarios {

struct GuestCheck {
    std::string name;
    bool ok = false;
    std::string detail;
};

struct GuestReport {
    std::vector<GuestCheck> checks;
    std::vector<std::string> infos;  // the text after "info "
    std::string summary_scenario;    // empty: no summary line
    std::string summary_result;      // "ok" or "FAIL"

    // The first check called `name`, or null.
    [[nodiscard]] const GuestCheck* find(std::string_view name) const;
    // The value of the first `key=value` word of an info line, e.g. info_value("domid").
    [[nodiscard]] std::optional<std::string> info_value(std::string_view key) const;
};

GuestReport parse_report(std::string_view out);

// The value of the `key=value` word in `line`, if any.
std::optional<std::string> word_value(std::string_view line, std::string_view key);

// The scenario passed: exit 0, a summary with result=ok, at least one `check ... ok` and
// no `check ... FAIL`. The message holds the guest's output.
::testing::AssertionResult scenario_passed(const Output& run);
// The check `name` ran and held (the output is shown only when it did not run).
::testing::AssertionResult check_held(const Output& run, std::string_view name);

}  // namespace xenhsa::testing::scenarios

#endif
