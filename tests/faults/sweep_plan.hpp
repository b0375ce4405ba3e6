// Which faults a sweep injects, from a trace of one fault-free run (fault_plan.hpp's
// "trace=PATH": a line "SITE ERRNO,ERRNO,.." per seam call, in call order).
#ifndef XENHSA_TESTS_FAULTS_SWEEP_PLAN_HPP
#define XENHSA_TESTS_FAULTS_SWEEP_PLAN_HPP

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace xenhsa::testing::faults {

struct TracedCall {
    std::string site;
    std::vector<int> errnos;  // what the call may fail with
};

// nullopt when a line is malformed.
std::optional<std::vector<TracedCall>> parse_trace(std::string_view text);

// One injected fault: the `call`-th call at `site` (from 1) fails with `error`.
struct PlannedFault {
    std::string site;
    uint64_t call = 0;
    int error = 0;
    [[nodiscard]] std::string spec() const;  // "fail=SITE#CALL:ERRNO"
    friend bool operator==(const PlannedFault&, const PlannedFault&) = default;
};

enum class Coverage : uint8_t {
    // Every call of the trace fails once.
    every_call,
    // The first `kFirstCalls` calls at each site and its last one: a site called in a loop
    // (event channel pending/unmask/notify per ring pass) fails on its first passes and its
    // last, not on every pass.
    first_and_last,
    // Each (site, errno) pair of the trace not yet in `covered` fails the site's first
    // call once, and joins `covered`: over several scenarios in one process, every pair
    // any of them reaches fails once, in the first scenario that reaches it (what CI runs).
    new_pairs,
};
inline constexpr uint64_t kFirstCalls = 3;

// The faults to inject: for each chosen call the errnos rotate (the k-th call at a site
// fails with errnos[(k - 1) % n]); then every (site, errno) pair that no chosen call
// covered fails the site's first call. In trace order, pairs last.
// `covered` (only new_pairs reads and extends it): the pairs earlier plans failed, each
// site prefixed by `scope` (a worker's and the supervisor's sites are distinct).
using CoveredPairs = std::set<std::pair<std::string, int>>;
std::vector<PlannedFault> plan_faults(const std::vector<TracedCall>& trace, Coverage coverage,
                                      CoveredPairs* covered = nullptr, std::string_view scope = {});

// The distinct (site, errno) pairs of a trace.
std::vector<std::pair<std::string, int>> site_errno_pairs(const std::vector<TracedCall>& trace);

}  // namespace xenhsa::testing::faults

#endif
