#include "sweep_plan.hpp"

#include <algorithm>
#include <charconv>
#include <map>
#include <set>

namespace xenhsa::testing::faults {

namespace {

std::optional<int> parse_errno(std::string_view text) {
    int value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size() || value <= 0) {
        return std::nullopt;
    }
    return value;
}

}  // namespace

std::string PlannedFault::spec() const {
    return "fail=" + site + "#" + std::to_string(call) + ":" + std::to_string(error);
}

std::optional<std::vector<TracedCall>> parse_trace(std::string_view text) {
    std::vector<TracedCall> calls;
    while (!text.empty()) {
        const auto eol = text.find('\n');
        const std::string_view line = text.substr(0, eol);
        text = eol == std::string_view::npos ? std::string_view{} : text.substr(eol + 1);
        if (line.empty()) {
            continue;
        }
        const auto space = line.find(' ');
        if (space == 0 || space == std::string_view::npos) {
            return std::nullopt;
        }
        TracedCall call{std::string(line.substr(0, space)), {}};
        std::string_view list = line.substr(space + 1);
        while (!list.empty()) {
            const auto comma = list.find(',');
            const auto e = parse_errno(list.substr(0, comma));
            if (!e) {
                return std::nullopt;
            }
            call.errnos.push_back(*e);
            if (comma == std::string_view::npos) {
                break;
            }
            list = list.substr(comma + 1);
            if (list.empty()) {
                return std::nullopt;  // a trailing comma
            }
        }
        if (call.errnos.empty()) {
            return std::nullopt;
        }
        calls.push_back(std::move(call));
    }
    return calls;
}

std::vector<PlannedFault> plan_faults(const std::vector<TracedCall>& trace, Coverage coverage,
                                      CoveredPairs* covered, std::string_view scope) {
    if (coverage == Coverage::new_pairs) {
        std::vector<PlannedFault> planned;
        for (const auto& [site, error] : site_errno_pairs(trace)) {
            if (covered == nullptr || covered->emplace(std::string(scope) + site, error).second) {
                planned.push_back({site, 1, error});
            }
        }
        return planned;
    }
    std::map<std::string, uint64_t, std::less<>> total;
    for (const auto& call : trace) {
        ++total[call.site];
    }
    std::vector<PlannedFault> planned;
    CoveredPairs chosen_pairs;
    std::map<std::string, uint64_t, std::less<>> seen;
    for (const auto& call : trace) {
        const uint64_t k = ++seen[call.site];
        const bool chosen =
            coverage == Coverage::every_call || k <= kFirstCalls || k == total[call.site];
        if (!chosen) {
            continue;
        }
        const int error = call.errnos[(k - 1) % call.errnos.size()];
        planned.push_back({call.site, k, error});
        chosen_pairs.emplace(call.site, error);
    }
    for (const auto& [site, error] : site_errno_pairs(trace)) {
        if (!chosen_pairs.contains({site, error})) {
            planned.push_back({site, 1, error});
        }
    }
    return planned;
}

std::vector<std::pair<std::string, int>> site_errno_pairs(const std::vector<TracedCall>& trace) {
    std::vector<std::pair<std::string, int>> pairs;
    std::set<std::pair<std::string, int>> known;
    for (const auto& call : trace) {
        for (const int e : call.errnos) {
            if (known.emplace(call.site, e).second) {
                pairs.emplace_back(call.site, e);
            }
        }
    }
    return pairs;
}

}  // namespace xenhsa::testing::faults
