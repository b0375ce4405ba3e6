#include "guest_report.hpp"

#include <sys/wait.h>

#include <child_process.hpp>

namespace xenhsa::testing::scenarios {

namespace {

// `line` without `prefix`, or nullopt when it does not start with it.
std::optional<std::string_view> after(std::string_view line, std::string_view prefix) {
    if (line.substr(0, prefix.size()) != prefix) {
        return std::nullopt;
    }
    return line.substr(prefix.size());
}

// The first word of `text` and the rest after one space.
std::pair<std::string_view, std::string_view> split_word(std::string_view text) {
    const auto space = text.find(' ');
    if (space == std::string_view::npos) {
        return {text, {}};
    }
    return {text.substr(0, space), text.substr(space + 1)};
}

std::string shown(const Output& run) {
    return "xenhsa-guest " +
           describe_status(run.status == -1 ? std::nullopt : std::optional<int>(run.status)) +
           ", its stdout:\n" + run.out;
}

}  // namespace

const GuestCheck* GuestReport::find(std::string_view name) const {
    for (const auto& c : checks) {
        if (c.name == name) {
            return &c;
        }
    }
    return nullptr;
}

std::optional<std::string> GuestReport::info_value(std::string_view key) const {
    for (const auto& line : infos) {
        if (auto v = word_value(line, key)) {
            return v;
        }
    }
    return std::nullopt;
}

std::optional<std::string> word_value(std::string_view line, std::string_view key) {
    while (!line.empty()) {
        auto [word, rest] = split_word(line);
        if (auto value = after(word, key); value && !value->empty() && value->front() == '=') {
            return std::string(value->substr(1));
        }
        line = rest;
    }
    return std::nullopt;
}

GuestReport parse_report(std::string_view out) {
    GuestReport report;
    while (!out.empty()) {
        const auto nl = out.find('\n');
        const std::string_view line = out.substr(0, nl);
        out = nl == std::string_view::npos ? std::string_view{} : out.substr(nl + 1);
        if (auto check = after(line, "check ")) {
            auto [name, rest] = split_word(*check);
            auto [verdict, detail] = split_word(rest);
            report.checks.push_back({std::string(name), verdict == "ok", std::string(detail)});
        } else if (auto info = after(line, "info ")) {
            report.infos.emplace_back(*info);
        } else if (auto summary = after(line, "summary ")) {
            report.summary_scenario = std::string(split_word(*summary).first);
            report.summary_result = word_value(*summary, "result").value_or("");
        }
    }
    return report;
}

::testing::AssertionResult scenario_passed(const Output& run) {
    const GuestReport report = parse_report(run.out);
    std::size_t ok = 0;
    std::string failed;
    for (const auto& c : report.checks) {
        ok += c.ok ? 1 : 0;
        if (!c.ok) {
            failed += " " + c.name;
        }
    }
    if (!run.ok()) {
        return ::testing::AssertionFailure() << "did not exit 0; " << shown(run);
    }
    if (!failed.empty()) {
        return ::testing::AssertionFailure() << "failed checks:" << failed << "; " << shown(run);
    }
    if (ok == 0) {
        return ::testing::AssertionFailure() << "no check ran; " << shown(run);
    }
    if (report.summary_result != "ok") {
        return ::testing::AssertionFailure() << "no 'summary ... result=ok'; " << shown(run);
    }
    return ::testing::AssertionSuccess();
}

::testing::AssertionResult check_held(const Output& run, std::string_view name) {
    const GuestReport report = parse_report(run.out);
    const GuestCheck* c = report.find(name);
    if (c == nullptr) {
        return ::testing::AssertionFailure() << "no check '" << name << "'; " << shown(run);
    }
    if (!c->ok) {  // scenario_passed() shows the whole output
        return ::testing::AssertionFailure() << "check '" << name << "' FAIL " << c->detail;
    }
    return ::testing::AssertionSuccess();
}

}  // namespace xenhsa::testing::scenarios
