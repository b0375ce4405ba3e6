// The seam faults one backend process injects, in test builds (XENHSA_TEST_HOOKS): the
// hook of the seams' fault decorators (xen::with_faults, hsa::with_faults). A plan is
//   ""                    no fault
//   "trace=PATH"          every call is made; each appends "SITE ERRNO,ERRNO,..\n" to PATH
//                         (the errnos the call may fail with)
//   "fail=SITE#K:ERRNO"   the K-th call at SITE (from 1) fails with ERRNO (a number), the
//                         others are made
//   "delay=SITE#K:MS"     the K-th call at SITE is made MS ms late (at most 600000), its
//                         thread held meanwhile as a hung driver call holds it
// The fault sweep (tests/faults) traces a scenario once, then fails each call in turn.
#ifndef XENHSA_BACKEND_SERVICE_FAULT_PLAN_HPP
#define XENHSA_BACKEND_SERVICE_FAULT_PLAN_HPP

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace xenhsa::backend::service {

using SeamFaultHook = std::function<int(std::string_view site, std::span<const int> errnos)>;

class FaultPlan {
public:
    FaultPlan() = default;
    FaultPlan(const FaultPlan&) = delete;
    FaultPlan& operator=(const FaultPlan&) = delete;
    ~FaultPlan();

    // Replaces the plan and restarts the call counts; a readable error when `spec` is bad
    // (the plan is then unchanged).
    std::optional<std::string> arm(std::string_view spec);
    [[nodiscard]] std::string spec() const;

    // 0: make the call; else the errno to fail it with. Any thread.
    int before(std::string_view site, std::span<const int> errnos) noexcept;

    // A hook that keeps this plan alive.
    static SeamFaultHook hook(const std::shared_ptr<FaultPlan>& plan);

private:
    void close_trace() noexcept;

    mutable std::mutex mutex_;
    std::string spec_;
    int trace_fd_ = -1;
    std::string fail_site_;
    uint64_t fail_call_ = 0;
    int fail_errno_ = 0;
    uint64_t delay_ms_ = 0;
    std::map<std::string, uint64_t, std::less<>> calls_;
};

}  // namespace xenhsa::backend::service

#endif
