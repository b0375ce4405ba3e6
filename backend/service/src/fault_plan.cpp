#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <string>
#include <xenhsa/backend/service/fault_plan.hpp>

namespace xenhsa::backend::service {

namespace {

std::optional<uint64_t> number(std::string_view text) {
    uint64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size() || text.empty()) {
        return std::nullopt;
    }
    return value;
}

}  // namespace

FaultPlan::~FaultPlan() { close_trace(); }

void FaultPlan::close_trace() noexcept {
    if (trace_fd_ >= 0) {
        ::close(trace_fd_);
        trace_fd_ = -1;
    }
}

std::optional<std::string> FaultPlan::arm(std::string_view spec) {
    int trace_fd = -1;
    std::string site;
    uint64_t call = 0;
    int err = 0;
    if (spec.starts_with("trace=")) {
        const std::string path(spec.substr(6));
        trace_fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (trace_fd < 0) {
            return "cannot open the fault trace " + path + ": " + std::strerror(errno);
        }
    } else if (spec.starts_with("fail=")) {
        const std::string_view rest = spec.substr(5);
        const auto hash = rest.find('#');
        const auto colon = rest.find(':', hash == std::string_view::npos ? 0 : hash);
        const auto k = hash == std::string_view::npos || colon == std::string_view::npos
                           ? std::nullopt
                           : number(rest.substr(hash + 1, colon - hash - 1));
        const auto e =
            colon == std::string_view::npos ? std::nullopt : number(rest.substr(colon + 1));
        if (hash == 0 || !k || *k == 0 || !e || *e == 0 || *e > 4095) {
            return "bad fault plan \"" + std::string(spec) + "\" (fail=SITE#K:ERRNO)";
        }
        site = std::string(rest.substr(0, hash));
        call = *k;
        err = static_cast<int>(*e);
    } else if (!spec.empty()) {
        return "bad fault plan \"" + std::string(spec) + "\" (trace=PATH or fail=SITE#K:ERRNO)";
    }
    const std::lock_guard lock(mutex_);
    close_trace();
    spec_ = spec;
    trace_fd_ = trace_fd;
    fail_site_ = std::move(site);
    fail_call_ = call;
    fail_errno_ = err;
    calls_.clear();
    return std::nullopt;
}

std::string FaultPlan::spec() const {
    const std::lock_guard lock(mutex_);
    return spec_;
}

int FaultPlan::before(std::string_view site, std::span<const int> errnos) noexcept {
    const std::lock_guard lock(mutex_);
    if (trace_fd_ >= 0) {
        std::string line(site);
        for (std::size_t i = 0; i < errnos.size(); ++i) {
            line += i == 0 ? ' ' : ',';
            line += std::to_string(errnos[i]);
        }
        line += '\n';
        // One write per line, O_APPEND: lines of concurrent callers never interleave.
        (void)!::write(trace_fd_, line.data(), line.size());
        return 0;
    }
    if (fail_errno_ == 0 || site != fail_site_) {
        return 0;
    }
    auto it = calls_.find(site);
    if (it == calls_.end()) {
        it = calls_.emplace(std::string(site), 0).first;
    }
    if (++it->second != fail_call_) {
        return 0;
    }
    spdlog::warn("injected fault: call {} of {} fails with {} ({})", fail_call_, site, fail_errno_,
                 std::strerror(fail_errno_));
    return fail_errno_;
}

SeamFaultHook FaultPlan::hook(const std::shared_ptr<FaultPlan>& plan) {
    return [plan](std::string_view site, std::span<const int> errnos) {
        return plan->before(site, errnos);
    };
}

}  // namespace xenhsa::backend::service
