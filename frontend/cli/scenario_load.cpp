// `xenhsa-guest load`: one guest that keeps its worker as busy as a heavy, well-behaved
// ROCm program does, for the confinement tests (a worker must never be killed by its own
// filter, whatever the load). At once: `queues` AQL queues each running big fills (past
// the inline limit: the agent's worker pool), `waits` EVENT_WAITs pending (a waiting
// thread each), SDMA copies on `sdma_queues` queues, and a queue that faults. Every result
// is checked; the queues are then destroyed with their last fills still running.
#include <fmt/core.h>
#include <xenhsa/hsa/builtin_kernels.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <thread>
#include <vector>
#include <xenhsa/frontend/aql_queue.hpp>
#include <xenhsa/frontend/errors.hpp>
#include <xenhsa/frontend/sdma_queue.hpp>

#include "gpu_rig.hpp"
#include "harness.hpp"
#include "scenarios.hpp"

namespace xenhsa::frontend::cli {

namespace {

// A queue of big fills over its own arena.
struct FillLane {
    std::unique_ptr<GpuRig> rig;
    uint32_t* words = nullptr;
    xenhsa_kernarg_fill* args = nullptr;
    amd_signal_t* done = nullptr;
};

// An SDMA queue copying `src` to `dst`, and the word its fence writes.
struct CopyLane {
    aql::GpuMemory memory;
    sdma::SdmaQueue queue;
    uint32_t* src = nullptr;
    uint32_t* dst = nullptr;
    uint32_t* fence = nullptr;
};

class Load {
public:
    Load(Harness& h, Report& report, const LoadOptions& options, uint32_t node)
        : h_(h), report_(report), options_(options), node_(node) {}

    bool setup() {
        fill_ = rig_kernel();
        if (!fill_) {
            return false;
        }
        for (uint32_t q = 0; q < options_.queues; ++q) {
            FillLane lane;
            lane.rig = std::make_unique<GpuRig>(h_, report_);
            if (!lane.rig->setup(std::size_t{options_.elements} * 4 + 4096, node_)) {
                return false;
            }
            lane.words = lane.rig->carve<uint32_t>(options_.elements);
            lane.args = lane.rig->carve<xenhsa_kernarg_fill>(1);
            lane.done = lane.rig->signal(0);
            if (!report_.check("fill-carve", lane.words && lane.args && lane.done)) {
                return false;
            }
            fills_.push_back(std::move(lane));
        }
        for (uint32_t q = 0; q < options_.sdma_queues; ++q) {
            if (!add_copy_lane()) {
                return false;
            }
        }
        return true;
    }

    // `waits` EVENT_WAITs left pending on events nobody has set yet.
    bool start_waits() {
        Client& client = h_.client();
        for (uint32_t i = 0; i < options_.waits; ++i) {
            auto event = client.event_create(XENHSA_EVENT_SIGNAL, node_, 0);
            if (!report_.check("wait-event-create", event)) {
                return false;
            }
            events_.push_back(event.value().handle);
            auto seqno = client.event_wait_async(std::span(&events_.back(), 1), false, 60000);
            if (!report_.check("wait-pending", seqno)) {
                return false;
            }
            waits_.push_back(seqno.value());
        }
        return true;
    }

    // Every queue fills its arena with a value of this round while the SDMA queues copy.
    bool round(uint32_t n, bool check) {
        for (uint32_t q = 0; q < fills_.size(); ++q) {
            FillLane& lane = fills_[q];
            *lane.args = {reinterpret_cast<uintptr_t>(lane.words), options_.elements, value(n, q),
                          0};
            aql::signal_store(*lane.done, 1);
            if (!lane.rig->submit("fill", lane.rig->dispatch_spec(*fill_, lane.args,
                                                                  options_.elements, lane.done))) {
                return false;
            }
        }
        for (uint32_t q = 0; q < copies_.size(); ++q) {
            if (!copy(copies_[q], value(n, q) ^ 0x5a5a5a5a, n + 1)) {
                return false;
            }
        }
        if (!check) {
            return true;  // left running for the teardown
        }
        uint32_t wrong = 0;
        for (uint32_t q = 0; q < fills_.size(); ++q) {
            if (!fills_[q].rig->wait("fill", *fills_[q].done)) {
                return false;
            }
            const uint32_t* w = fills_[q].words;
            wrong += static_cast<uint32_t>(std::count_if(
                w, w + options_.elements, [&](uint32_t x) { return x != value(n, q); }));
        }
        for (uint32_t q = 0; q < copies_.size(); ++q) {
            if (!copied(copies_[q], value(n, q) ^ 0x5a5a5a5a, n + 1)) {
                return false;
            }
        }
        return report_.check("round", wrong == 0,
                             fmt::format("round={} queues={} sdma={} wrong={}", n, fills_.size(),
                                         copies_.size(), wrong));
    }

    // A queue of its own reads far out of bounds while the others run.
    bool fault() {
        GpuRig rig(h_, report_);
        bool notified = false;
        if (rig.setup(4096, node_) && rig.submit_oob_read()) {
            notified = report_.check("gpu-fault-notified", h_.client().wait_notification(
                                                               XENHSA_NOTIFY_GPU_FAULT,
                                                               rig.queue().handle(), h_.timeout()));
        }
        rig.teardown(live_handles_outside());
        return notified;
    }

    // Sets the events: every pending wait ends with its event.
    bool end_waits() {
        Client& client = h_.client();
        uint32_t ended = 0;
        for (std::size_t i = 0; i < waits_.size(); ++i) {
            if (!report_.check("wait-event-set", client.event_set(events_[i]))) {
                return false;
            }
        }
        for (uint32_t seqno : waits_) {
            auto fired = client.finish_wait(seqno);
            ended += fired && fired.value() == 1u ? 1 : 0;
        }
        waits_.clear();
        return report_.check("waits-ended", ended == events_.size(),
                             fmt::format("{} of {}", ended, events_.size()));
    }

    // The queues go with work still running on them, then everything else.
    void teardown() {
        (void)round(options_.rounds, false);
        for (CopyLane& lane : copies_) {
            report_.check("sdma-queue-destroy", lane.queue.destroy());
            report_.check("sdma-memory-release", lane.memory.release(h_.client()));
        }
        copies_.clear();
        for (FillLane& lane : fills_) {
            lane.rig->teardown(live_handles_outside());
        }
        fills_.clear();
        for (Handle event : events_) {
            report_.check("wait-event-destroy", h_.client().event_destroy(event));
        }
        events_.clear();
        report_.check("handles-released", h_.client().live_handles() == 0,
                      fmt::format("live={}", h_.client().live_handles()));
    }

private:
    static uint32_t value(uint32_t round, uint32_t queue) {
        return 0x01000000u * (round + 1) + queue + 1;
    }

    std::optional<xenhsa_kernel_info> rig_kernel() {
        GpuRig probe(h_, report_);
        return probe.kernel(XENHSA_KERNEL_NAME_FILL, sizeof(xenhsa_kernarg_fill));
    }

    // The handles left once a rig is torn down: a rig holds 5 (its arena's MAP and PIN,
    // its ring's MAP and PIN, its queue).
    std::size_t live_handles_outside() const { return h_.client().live_handles() - 5; }

    bool add_copy_lane() {
        Client& client = h_.client();
        CopyLane lane;
        const std::size_t bytes = options_.sdma_bytes;
        auto memory = aql::GpuMemory::create(client, 2 * bytes / XENHSA_PAGE_SIZE + 2, node_);
        if (!report_.check("sdma-memory", memory)) {
            return false;
        }
        lane.memory = std::move(memory.value());
        auto src = lane.memory.carve_array<uint32_t>(bytes / 4, XENHSA_PAGE_SIZE);
        auto dst = lane.memory.carve_array<uint32_t>(bytes / 4, XENHSA_PAGE_SIZE);
        auto fence = lane.memory.carve_array<uint32_t>(1);
        sdma::QueueOptions q;
        q.node = node_;
        auto queue = sdma::SdmaQueue::create(client, q);
        if (!report_.check("sdma-queue-create", queue) || !src || !dst || !fence) {
            (void)lane.memory.release(client);
            return false;
        }
        lane.queue = std::move(queue.value());
        lane.src = src.value();
        lane.dst = dst.value();
        lane.fence = fence.value();
        copies_.push_back(std::move(lane));
        return true;
    }

    bool copy(CopyLane& lane, uint32_t pattern, uint32_t fence_value) {
        const std::size_t words = options_.sdma_bytes / 4;
        std::fill(lane.src, lane.src + words, pattern);
        return report_.check("sdma-copy", lane.queue.copy(reinterpret_cast<uintptr_t>(lane.dst),
                                                          reinterpret_cast<uintptr_t>(lane.src),
                                                          options_.sdma_bytes, h_.timeout())) &&
               report_.check("sdma-fence", lane.queue.fence(reinterpret_cast<uintptr_t>(lane.fence),
                                                            fence_value, h_.timeout()));
    }

    bool copied(const CopyLane& lane, uint32_t pattern, uint32_t fence_value) {
        const auto deadline = std::chrono::steady_clock::now() + h_.timeout();
        while (__atomic_load_n(lane.fence, __ATOMIC_ACQUIRE) != fence_value) {
            if (std::chrono::steady_clock::now() >= deadline) {
                return report_.check("sdma-fenced", false, "timeout");
            }
            std::this_thread::sleep_for(std::chrono::microseconds(200));
        }
        const std::size_t words = options_.sdma_bytes / 4;
        const auto wrong =
            std::count_if(lane.dst, lane.dst + words, [&](uint32_t x) { return x != pattern; });
        return report_.check("sdma-result", wrong == 0, fmt::format("wrong={}", wrong));
    }

    Harness& h_;
    Report& report_;
    const LoadOptions& options_;
    uint32_t node_;
    std::optional<xenhsa_kernel_info> fill_;
    std::vector<FillLane> fills_;
    std::vector<CopyLane> copies_;
    std::vector<Handle> events_;
    std::vector<uint32_t> waits_;
};

}  // namespace

int run_load(const GlobalOptions& options, const LoadOptions& load) {
    Report report("load");
    Harness h(options, report);
    if (!h.open(XENHSA_FEATURES_V1 | XENHSA_FEATURE_SDMA) ||
        !h.require(XENHSA_FEATURE_GPU, "gpu") ||
        (load.sdma_queues != 0 && !h.require(XENHSA_FEATURE_SDMA, "sdma"))) {
        return report.finish();
    }
    auto node = aql::find_gpu_node(h.client());
    if (!report.check("gpu-node", node && node.value().has_value())) {
        return report.finish();
    }
    Load run(h, report, load, *node.value());
    bool ok = run.setup() && run.start_waits();
    for (uint32_t n = 0; ok && n < load.rounds; ++n) {
        ok = run.round(n, true);
        if (ok && n == 0) {
            report.info(fmt::format("loaded domid={}", h.guest().domid));
            std::this_thread::sleep_for(std::chrono::milliseconds(load.pause_ms));
        }
    }
    ok = ok && (!load.fault || run.fault()) && run.end_waits();
    run.teardown();
    report.check("backend-alive", h.device().check_backend());
    report.info(fmt::format("load domid={} queues={} waits={} sdma={} rounds={} elements={}",
                            h.guest().domid, load.queues, load.waits, load.sdma_queues, load.rounds,
                            load.elements));
    return report.finish();
}

}  // namespace xenhsa::frontend::cli
