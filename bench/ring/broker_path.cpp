#include "broker_path.hpp"

#include <sched.h>
#include <sys/wait.h>

#include <string>
#include <system_error>
#include <vector>

#include "grant_broker.hpp"

namespace xenhsa::bench {

namespace {

constexpr xen::DomId kGuest = 1;

// Answers at once: the broker's own cost is what is measured.
class InstantAuthority final : public xen::real::Authority {
public:
    xen::Result<uint64_t> map_grants(xen::DomId, std::span<const xen::GrantRef> refs) override {
        return uint64_t{refs.size()} * 4096;
    }
    xen::Result<void> notify_on_unmap(uint64_t, bool, std::optional<xen::Port>) override {
        return boost::outcome_v2::success();
    }
    xen::Result<uint64_t> grant_pages(xen::DomId, bool, std::span<xen::GrantRef>) override {
        return uint64_t{0};
    }
    xen::Result<xen::Port> bind_interdomain(xen::DomId, xen::Port) override { return 1; }
    xen::Result<void> unbind(xen::Port) override { return boost::outcome_v2::success(); }
};

}  // namespace

struct BrokerPath::State {
    backend::service::BrokerProcess broker;
};

BrokerPath::BrokerPath() {
    auto started = backend::service::start_grant_broker({}, std::make_unique<InstantAuthority>(),
                                                        backend::service::BrokerLimits{kGuest, 1});
    if (!started) {
        throw std::system_error(started.error(), "starting a grant broker");
    }
    state_ = std::make_unique<State>(State{std::move(started).value()});
}

BrokerPath::~BrokerPath() {
    const pid_t pid = state_->broker.pid;
    state_->broker.authority.reset();  // the broker ends
    (void)::waitpid(pid, nullptr, 0);
}

void BrokerPath::pin_broker(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (::sched_setaffinity(state_->broker.pid, sizeof set, &set) != 0) {
        throw std::system_error(errno, std::generic_category(), "pinning the grant broker");
    }
}

RoundTrips BrokerPath::measure_map(uint32_t refs, uint32_t iterations, uint32_t warmup) {
    std::vector<xen::GrantRef> batch(refs);
    for (uint32_t i = 0; i < refs; ++i) {
        batch[i] = i + 8;
    }
    auto& authority = *state_->broker.authority;
    return time_round_trips("grant_broker_map" + std::to_string(refs), iterations, warmup, [&] {
        if (!authority.map_grants(kGuest, batch)) {
            throw std::runtime_error("the grant broker refused a map");
        }
    });
}

}  // namespace xenhsa::bench
