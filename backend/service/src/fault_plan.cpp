#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <xenhsa/backend/service/fault_plan.hpp>

namespace xenhsa::backend::service {

namespace {

bool parse_number(std::string_view text, uint64_t& value) {
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    return ec == std::errc() && end == text.data() + text.size() && !text.empty();
}

struct Failure {
    std::string site;
    uint64_t call = 0;
    uint64_t value = 0;  // the errno, or the delay in ms
};

// "SITE#K:N", K >= 1, 1 <= N <= max.
std::optional<Failure> parse_failure(std::string_view text, uint64_t max) {
    const auto hash = text.find('#');
    if (hash == 0 || hash == std::string_view::npos) {
        return std::nullopt;
    }
    const auto colon = text.find(':', hash);
    if (colon == std::string_view::npos) {
        return std::nullopt;
    }
    uint64_t call = 0;
    uint64_t value = 0;
    if (!parse_number(text.substr(hash + 1, colon - hash - 1), call) || call == 0 ||
        !parse_number(text.substr(colon + 1), value) || value == 0 || value > max) {
        return std::nullopt;
    }
    return Failure{std::string(text.substr(0, hash)), call, value};
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
    uint64_t delay_ms = 0;
    if (spec.starts_with("trace=")) {
        const std::string path(spec.substr(6));
        trace_fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (trace_fd < 0) {
            return "cannot open the fault trace " + path + ": " + std::strerror(errno);
        }
    } else if (spec.starts_with("fail=") || spec.starts_with("delay=")) {
        const bool fail = spec.starts_with("fail=");
        auto parsed = parse_failure(spec.substr(fail ? 5 : 6), fail ? 4095 : 600000);
        if (!parsed) {
            return "bad fault plan \"" + std::string(spec) + "\" (" +
                   (fail ? "fail=SITE#K:ERRNO" : "delay=SITE#K:MS") + ")";
        }
        site = std::move(parsed->site);
        call = parsed->call;
        err = fail ? static_cast<int>(parsed->value) : 0;
        delay_ms = fail ? 0 : parsed->value;
    } else if (!spec.empty()) {
        return "bad fault plan \"" + std::string(spec) +
               "\" (trace=PATH, fail=SITE#K:ERRNO or delay=SITE#K:MS)";
    }
    const std::lock_guard lock(mutex_);
    close_trace();
    spec_ = spec;
    trace_fd_ = trace_fd;
    fail_site_ = std::move(site);
    fail_call_ = call;
    fail_errno_ = err;
    delay_ms_ = delay_ms;
    calls_.clear();
    return std::nullopt;
}

std::string FaultPlan::spec() const {
    const std::lock_guard lock(mutex_);
    return spec_;
}

int FaultPlan::before(std::string_view site, std::span<const int> errnos) noexcept {
    std::unique_lock lock(mutex_);
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
    if ((fail_errno_ == 0 && delay_ms_ == 0) || site != fail_site_) {
        return 0;
    }
    auto it = calls_.find(site);
    if (it == calls_.end()) {
        try {
            it = calls_.emplace(std::string(site), 0).first;
        } catch (...) {
            return 0;
        }
    }
    if (++it->second != fail_call_) {
        return 0;
    }
    if (delay_ms_ != 0) {
        const auto delay = std::chrono::milliseconds(delay_ms_);
        const uint64_t call = it->second;
        lock.unlock();
        spdlog::warn("injected fault: call {} of {} is made {} ms late", call, site, delay.count());
        std::this_thread::sleep_for(delay);  // as a hung driver call holds its thread
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
