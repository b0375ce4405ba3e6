// `xenhsa-guest churn`: mixed multi-step work in a loop, for the death soak (tests/soak).
// Each round MAPs a batch of pages and PINs it, LENDs a few pages and writes them, makes an
// event and waits on it twice (a timeout, then a set), and dispatches a batch of
// vector_add packets that stay in flight until the next round checks their results. The
// objects of a round are given back, in a random order, kKeep rounds later: a kill at any
// moment finds every kind of object live, requests in flight and dispatches running.
#include <fmt/core.h>
#include <xenhsa/hsa/builtin_kernels.h>

#include <algorithm>
#include <deque>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>
#include <xenhsa/frontend/aql_queue.hpp>
#include <xenhsa/frontend/errors.hpp>

#include "gpu_rig.hpp"
#include "harness.hpp"
#include "patterns.hpp"
#include "scenarios.hpp"
#include "stop_signal.hpp"

namespace xenhsa::frontend::cli {

namespace {

constexpr std::size_t kKeep = 3;            // rounds whose objects stay live
constexpr uint32_t kChurnMaxMapPages = 80;  // indirect MAPs too (beyond 52 pages)
constexpr uint32_t kMaxLendPages = 8;
constexpr uint32_t kElements = 4096;
constexpr uint32_t kBatch = 4;  // vector_add packets per round

// What one round made, given back by a later round.
struct Held {
    std::optional<GuestBuffer> buffer;
    uint32_t pattern = 0;
    Handle map = 0;
    Handle pin = 0;
    std::optional<LentBuffer> lend;
    Handle event = 0;
};

class Churn {
public:
    Churn(Harness& h, Report& report, GpuRig& rig, uint32_t seed)
        : h_(h), report_(report), rig_(rig), rng_(seed) {}

    bool setup() {
        kernel_ = rig_.kernel(XENHSA_KERNEL_NAME_VECTOR_ADD, sizeof(xenhsa_kernarg_vector_add));
        a_ = rig_.carve<float>(kElements);
        b_ = rig_.carve<float>(kElements);
        c_ = rig_.carve<float>(kElements);
        args_ = rig_.carve<xenhsa_kernarg_vector_add>(kBatch);
        done_ = rig_.signal(0);
        if (!kernel_ || !a_ || !b_ || !c_ || !args_ || !done_) {
            return report_.check("churn-setup", false);
        }
        const uint32_t slice = kElements / kBatch;
        for (uint32_t i = 0; i < kElements; ++i) {
            a_[i] = static_cast<float>(i);
            b_[i] = static_cast<float>(2 * i);
        }
        for (uint32_t k = 0; k < kBatch; ++k) {
            args_[k] = {reinterpret_cast<uintptr_t>(a_ + k * slice),
                        reinterpret_cast<uintptr_t>(b_ + k * slice),
                        reinterpret_cast<uintptr_t>(c_ + k * slice), slice};
        }
        return true;
    }

    // One round; false (with a failed check) when a step failed.
    bool round() {
        Held made;
        if (!map_batch(made) || !lend_pages(made) || !event_waits(made) || !dispatch()) {
            return false;
        }
        held_.push_back(std::move(made));
        while (held_.size() > kKeep) {
            if (!give_back(held_.front())) {
                return false;
            }
            held_.pop_front();
        }
        ++rounds_;
        return true;
    }

    // The last dispatches to their end, and everything given back.
    bool finish() {
        bool ok = finish_dispatches();
        while (ok && !held_.empty()) {
            ok = give_back(held_.front());
            held_.pop_front();
        }
        return ok;
    }

    [[nodiscard]] uint32_t rounds() const { return rounds_; }

private:
    bool fail(std::string_view step, const std::error_code& error) {
        return report_.check(fmt::format("churn-{}", step), false,
                             fmt::format("round {}: {}", rounds_, describe(error)));
    }

    uint32_t below(uint32_t bound) { return 1 + static_cast<uint32_t>(rng_() % bound); }

    bool map_batch(Held& made) {
        Client& client = h_.client();
        auto buffer = client.allocate(below(kChurnMaxMapPages));
        if (!buffer) {
            return fail("allocate", buffer.error());
        }
        made.pattern = static_cast<uint32_t>(rng_());
        fill_pattern(buffer.value().bytes(), made.pattern);
        auto map = client.map(buffer.value());
        if (!map) {
            return fail("map", map.error());
        }
        made.map = map.value();
        auto pin = client.pin(buffer.value().va(), buffer.value().size());
        made.buffer = std::move(buffer.value());
        if (!pin) {
            return fail("pin", pin.error());
        }
        made.pin = pin.value();
        return true;
    }

    bool lend_pages(Held& made) {
        auto lent = h_.client().lend(below(kMaxLendPages), true);
        if (!lent) {
            return fail("lend", lent.error());
        }
        fill_pattern({lent.value().data(), lent.value().size()}, made.pattern + 1);
        made.lend = std::move(lent.value());
        return true;
    }

    bool event_waits(Held& made) {
        Client& client = h_.client();
        auto event = client.event_create(XENHSA_EVENT_SIGNAL, node_, 0);
        if (!event) {
            return fail("event-create", event.error());
        }
        made.event = event.value().handle;
        const Handle events[] = {made.event};
        auto early = client.event_wait(events, false, 1);
        if (early) {
            return report_.check("churn-wait-times-out", false, fmt::format("round {}", rounds_));
        }
        if (auto set = client.event_set(made.event); !set) {
            return fail("event-set", set.error());
        }
        if (auto fired = client.event_wait(events, false, 1000); !fired) {
            return fail("event-wait", fired.error());
        }
        return true;
    }

    // Checks the previous round's batch, then starts this round's and leaves it running.
    bool dispatch() {
        if (!finish_dispatches()) {
            return false;
        }
        std::fill(c_, c_ + kElements, -1.0f);
        aql::signal_store(*done_, kBatch);
        in_flight_ = true;
        for (uint32_t k = 0; k < kBatch; ++k) {
            const auto& slice = args_[k];
            auto sent = rig_.queue().dispatch(rig_.dispatch_spec(*kernel_, &slice, slice.n, done_),
                                              h_.timeout());
            if (!sent) {
                return fail("dispatch", sent.error());
            }
        }
        return true;
    }

    bool finish_dispatches() {
        if (!in_flight_) {
            return true;
        }
        in_flight_ = false;
        if (auto v = aql::signal_wait(*done_, HSA_SIGNAL_CONDITION_LT, 1, h_.timeout()); !v) {
            return fail("dispatch-wait", v.error());
        }
        for (uint32_t i = 0; i < kElements; ++i) {
            if (c_[i] != static_cast<float>(3 * i)) {
                return report_.check("churn-result", false,
                                     fmt::format("round {}: c[{}] = {}", rounds_, i, c_[i]));
            }
        }
        return true;
    }

    // Gives back one round's objects in a random order; checks the MAPped pages first.
    bool give_back(Held& held) {
        Client& client = h_.client();
        if (held.buffer && !has_pattern(held.buffer->bytes(), held.pattern)) {
            return report_.check("churn-pattern", false, fmt::format("round {}", rounds_));
        }
        std::vector<std::function<Result<void>()>> steps;
        if (held.event != 0) {
            steps.emplace_back([&] { return client.event_destroy(held.event); });
        }
        if (held.lend) {
            steps.emplace_back([&] { return client.unmap(*held.lend); });
        }
        // The PIN goes before its MAP, and the pages are given back after both.
        steps.emplace_back([&]() -> Result<void> {
            if (held.pin != 0) {
                if (auto r = client.unpin(held.pin); !r) {
                    return r;
                }
            }
            if (held.map != 0) {
                if (auto r = client.unmap(held.map); !r) {
                    return r;
                }
            }
            if (held.buffer) {
                return held.buffer->release();
            }
            return boost::outcome_v2::success();
        });
        std::shuffle(steps.begin(), steps.end(), rng_);
        for (auto& step : steps) {
            if (auto r = step(); !r) {
                return fail("give-back", r.error());
            }
        }
        held = Held{};
        return true;
    }

    Harness& h_;
    Report& report_;
    GpuRig& rig_;
    std::mt19937 rng_;
    uint32_t node_ = 0;
    std::optional<xenhsa_kernel_info> kernel_;
    float* a_ = nullptr;
    float* b_ = nullptr;
    float* c_ = nullptr;
    xenhsa_kernarg_vector_add* args_ = nullptr;
    amd_signal_t* done_ = nullptr;
    bool in_flight_ = false;
    std::deque<Held> held_;
    uint32_t rounds_ = 0;

public:
    void set_node(uint32_t node) { node_ = node; }
};

}  // namespace

int run_churn(const GlobalOptions& options, const ChurnOptions& churn) {
    Report report("churn");
    catch_stop_signals();
    Harness h(options, report);
    const auto node = open_gpu(h, report, GpuOptions{});
    if (!node || !h.require(XENHSA_FEATURE_LEND, "lend")) {
        return report.finish();
    }
    GpuRig rig(h, report);
    if (rig.setup(3 * std::size_t{kElements} * sizeof(float) + 1024, *node)) {
        Churn work(h, report, rig, churn.seed);
        work.set_node(*node);
        bool ok = work.setup();
        while (ok && !stop_requested() && (churn.rounds == 0 || work.rounds() < churn.rounds)) {
            ok = work.round();
            if (ok && work.rounds() == 1) {
                report.info(fmt::format("churning domid={} seed={}", h.guest().domid, churn.seed));
            }
        }
        ok = work.finish() && ok;
        report.check("churn", ok, fmt::format("rounds={}", work.rounds()));
    }
    rig.teardown();
    return report.finish();
}

}  // namespace xenhsa::frontend::cli
