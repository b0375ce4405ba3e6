// `xenhsa-guest sequence`: the sequence fuzzer's guest, syzkaller-style. A seeded program
// of `--calls` typed calls over the guest library: each call takes its resources (MAPs,
// PINs, ALLOCs, LENDs, events, queues) from what earlier calls made, so whole command
// sequences run (MAP, PIN, MAP_TO_GPU, QUEUE_CREATE, dispatches, UNMAP_FROM_GPU, UNPIN,
// UNMAP, ...), and about one call in five is hostile: a forged or stale handle, a range
// outside any MAP, a double release, an UNMAP under a live PIN. Each call's answer is
// checked: a well-formed call on live resources succeeds (or meets a quota), a hostile one
// is refused with a status, never by breaking the session; the backend answers every one.
// At the end everything is given back and nothing of the guest's may be left.
// `--trace` prints each call as it runs (to replay a failing seed).
#include <fmt/core.h>
#include <xenhsa/hsa/builtin_kernels.h>

#include <algorithm>
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

namespace xenhsa::frontend::cli {

namespace {

constexpr uint32_t kSequenceMaxMapPages = 96;
constexpr uint32_t kFillWords = 1024;

struct MapRes {
    GuestBuffer buffer;
    Handle handle = 0;
    uint32_t pattern = 0;
    uint32_t pins = 0;
};
struct PinRes {
    Handle handle = 0;
    std::size_t map = 0;  // index into maps_
    uint64_t va = 0;
    uint64_t size = 0;
    bool gpu = false;
};
struct AllocRes {
    Handle handle = 0;
    bool gpu = false;
};

enum class Expect : uint8_t { ok, refused };

class Program {
public:
    Program(Harness& h, Report& report, uint32_t node, uint64_t seed, bool trace)
        : h_(h), report_(report), node_(node), rng_(seed), trace_(trace) {}

    bool setup() {
        auto arena =
            aql::GpuMemory::create(h_.client(), 2 + kFillWords * 4 / XENHSA_PAGE_SIZE, node_);
        if (!report_.check("sequence-arena", arena)) {
            return false;
        }
        arena_ = std::move(arena.value());
        auto fill = h_.client().find_kernel(XENHSA_KERNEL_NAME_FILL);
        if (!report_.check("sequence-kernel", fill && fill.value().has_value())) {
            return false;
        }
        fill_ = *fill.value();
        auto words = arena_.carve_array<uint32_t>(kFillWords);
        auto args = arena_.carve_array<xenhsa_kernarg_fill>(1);
        auto done = arena_.carve_array<amd_signal_t>(1);
        words_ = words ? words.value() : nullptr;
        args_ = args ? args.value() : nullptr;
        done_ = done ? done.value() : nullptr;
        return report_.check("sequence-carve", words_ && args_ && done_);
    }

    // One call of the program; false when its answer broke the rules.
    bool step(uint32_t i) {
        index_ = i;
        switch (rng_() % 20) {
            case 0:
            case 1:
                return map();
            case 2:
                return unmap();
            case 3:
            case 4:
                return pin();
            case 5:
                return unpin();
            case 6:
                return map_to_gpu();
            case 7:
                return unmap_from_gpu();
            case 8:
                return alloc();
            case 9:
                return free_alloc();
            case 10:
                return lend();
            case 11:
                return unlend();
            case 12:
                return events();
            case 13:
                return queue_create();
            case 14:
                return queue_destroy();
            case 15:
                return dispatch();
            case 16:
                return forged();
            case 17:
                return stale();
            case 18:
                return pin_outside();
            default:
                return unmap_pinned();
        }
    }

    // Everything back, in an order the backend must accept.
    bool finish() {
        bool ok = true;
        for (auto& q : queues_) {
            ok = expect("end-queue-destroy", q.destroy(), Expect::ok) && ok;
        }
        queues_.clear();
        for (Handle e : events_) {
            ok = expect("end-event-destroy", h_.client().event_destroy(e), Expect::ok) && ok;
        }
        events_.clear();
        for (auto& p : pins_) {
            if (p.gpu) {
                ok = expect("end-unmap-from-gpu", h_.client().unmap_from_gpu(p.handle),
                            Expect::ok) &&
                     ok;
            }
            ok = expect("end-unpin", h_.client().unpin(p.handle), Expect::ok) && ok;
        }
        pins_.clear();
        for (auto& a : allocs_) {
            if (a.gpu) {
                ok = expect("end-alloc-unmap", h_.client().unmap_from_gpu(a.handle), Expect::ok) &&
                     ok;
            }
            ok = expect("end-free", h_.client().free(a.handle), Expect::ok) && ok;
        }
        allocs_.clear();
        for (auto& m : maps_) {
            ok = check_pattern(m) && ok;
            ok = expect("end-unmap", h_.client().unmap(m.handle), Expect::ok) && ok;
            ok = expect("end-release", m.buffer.release(), Expect::ok) && ok;
        }
        maps_.clear();
        for (auto& l : lends_) {
            ok = expect("end-unlend", h_.client().unmap(l), Expect::ok) && ok;
        }
        lends_.clear();
        ok = report_.check("sequence-arena-release", arena_.release(h_.client())) && ok;
        return ok;
    }

    [[nodiscard]] uint32_t refused() const { return refused_; }
    [[nodiscard]] uint32_t succeeded() const { return succeeded_; }

private:
    template <class T>
    bool expect(std::string_view call, const Result<T>& result, Expect expected) {
        if (trace_) {
            report_.info(fmt::format("call {} {} -> {}", index_, call,
                                     result ? std::string("ok") : describe(result.error())));
        }
        if (h_.client().broken()) {
            return report_.check("sequence-session", false,
                                 fmt::format("call {} {} broke the session", index_, call));
        }
        if (result) {
            ++succeeded_;
            return expected == Expect::ok ||
                   report_.check("sequence-refused", false,
                                 fmt::format("call {} {} was accepted", index_, call));
        }
        const int64_t status = status_of(result.error());
        if (status < 0) {
            return report_.check(
                "sequence-answer", false,
                fmt::format("call {} {}: {}", index_, call, describe(result.error())));
        }
        ++refused_;
        // A well-formed call may still meet a limit of this guest or of the backend.
        const bool limit = status == XENHSA_STATUS_QUOTA || status == XENHSA_STATUS_NO_MEMORY;
        return expected == Expect::refused || limit ||
               report_.check("sequence-accepted", false,
                             fmt::format("call {} {}: {}", index_, call, describe(result.error())));
    }

    template <class Vec>
    std::optional<std::size_t> pick(const Vec& v) {
        if (v.empty()) {
            return std::nullopt;
        }
        return static_cast<std::size_t>(rng_() % v.size());
    }

    bool check_pattern(const MapRes& m) {
        return has_pattern(m.buffer.bytes(), m.pattern) ||
               report_.check("sequence-pattern", false, fmt::format("call {}", index_));
    }

    void retire(Handle h) { dead_.push_back(h); }

    bool map() {
        auto buffer = h_.client().allocate(1 + rng_() % kSequenceMaxMapPages, true);
        if (!expect("allocate", buffer, Expect::ok) || !buffer) {
            return bool(h_.client().broken()) == false;
        }
        MapRes m{std::move(buffer.value()), 0, static_cast<uint32_t>(rng_()), 0};
        fill_pattern(m.buffer.bytes(), m.pattern);
        auto handle = h_.client().map(m.buffer, true);
        if (!expect("map", handle, Expect::ok)) {
            return false;
        }
        if (handle) {
            m.handle = handle.value();
            maps_.push_back(std::move(m));
        }
        return true;
    }

    bool unmap() {
        auto i = pick(maps_);
        if (!i || maps_[*i].pins != 0) {
            return true;
        }
        MapRes& m = maps_[*i];
        bool ok = check_pattern(m) && expect("unmap", h_.client().unmap(m.handle), Expect::ok) &&
                  expect("release", m.buffer.release(), Expect::ok);
        retire(m.handle);
        for (auto& p : pins_) {
            p.map -= p.map > *i ? 1 : 0;
        }
        maps_.erase(maps_.begin() + static_cast<std::ptrdiff_t>(*i));
        return ok;
    }

    bool pin() {
        auto i = pick(maps_);
        if (!i) {
            return true;
        }
        MapRes& m = maps_[*i];
        const std::size_t pages = m.buffer.pages();
        const std::size_t first = rng_() % pages;
        const std::size_t count = 1 + rng_() % (pages - first);
        const uint64_t va = m.buffer.va() + first * XENHSA_PAGE_SIZE;
        const uint64_t size = count * XENHSA_PAGE_SIZE;
        // One PIN per page (protocol 5.7): an overlapping one is refused.
        const bool overlapping = std::any_of(pins_.begin(), pins_.end(), [&](const PinRes& p) {
            return va < p.va + p.size && p.va < va + size;
        });
        auto handle = h_.client().pin(va, size);
        if (!expect(overlapping ? "pin-overlapping" : "pin", handle,
                    overlapping ? Expect::refused : Expect::ok)) {
            return false;
        }
        if (handle) {
            ++m.pins;
            pins_.push_back({handle.value(), *i, va, size, false});
        }
        return true;
    }

    bool unpin() {
        auto i = pick(pins_);
        if (!i) {
            return true;
        }
        PinRes p = pins_[*i];
        if (p.gpu && !expect("unmap-from-gpu", h_.client().unmap_from_gpu(p.handle), Expect::ok)) {
            return false;
        }
        const bool ok = expect("unpin", h_.client().unpin(p.handle), Expect::ok);
        --maps_[p.map].pins;
        retire(p.handle);
        pins_.erase(pins_.begin() + static_cast<std::ptrdiff_t>(*i));
        return ok;
    }

    bool map_to_gpu() {
        const uint64_t mask = uint64_t{1} << node_;
        if (rng_() % 2 == 0) {
            auto i = pick(pins_);
            if (i && !pins_[*i].gpu) {
                auto r = h_.client().map_to_gpu(pins_[*i].handle, mask);
                pins_[*i].gpu = bool(r);
                return expect("map-to-gpu", r, Expect::ok);
            }
        } else if (auto i = pick(allocs_); i && !allocs_[*i].gpu) {
            auto r = h_.client().map_to_gpu(allocs_[*i].handle, mask);
            allocs_[*i].gpu = bool(r);
            return expect("alloc-map-to-gpu", r, Expect::ok);
        }
        return true;
    }

    bool unmap_from_gpu() {
        if (auto i = pick(pins_); i && pins_[*i].gpu) {
            pins_[*i].gpu = false;
            return expect("unmap-from-gpu", h_.client().unmap_from_gpu(pins_[*i].handle),
                          Expect::ok);
        }
        if (auto i = pick(allocs_); i && allocs_[*i].gpu) {
            allocs_[*i].gpu = false;
            return expect("alloc-unmap-from-gpu", h_.client().unmap_from_gpu(allocs_[*i].handle),
                          Expect::ok);
        }
        return true;
    }

    bool alloc() {
        const uint64_t size = (1 + rng_() % 64) * XENHSA_PAGE_SIZE;
        auto r = h_.client().alloc(size, node_, 0);
        if (!expect("alloc", r, Expect::ok)) {
            return false;
        }
        if (r) {
            allocs_.push_back({r.value().handle, false});
        }
        return true;
    }

    bool free_alloc() {
        auto i = pick(allocs_);
        if (!i) {
            return true;
        }
        AllocRes a = allocs_[*i];
        if (a.gpu &&
            !expect("alloc-unmap-from-gpu", h_.client().unmap_from_gpu(a.handle), Expect::ok)) {
            return false;
        }
        retire(a.handle);
        allocs_.erase(allocs_.begin() + static_cast<std::ptrdiff_t>(*i));
        return expect("free", h_.client().free(a.handle), Expect::ok);
    }

    bool lend() {
        auto r = h_.client().lend(static_cast<uint32_t>(1 + rng_() % 8), true);
        if (!expect("lend", r, Expect::ok)) {
            return false;
        }
        if (r) {
            fill_pattern({r.value().data(), r.value().size()}, index_);
            lends_.push_back(std::move(r.value()));
        }
        return true;
    }

    bool unlend() {
        auto i = pick(lends_);
        if (!i) {
            return true;
        }
        retire(lends_[*i].handle);
        const bool ok = expect("unlend", h_.client().unmap(lends_[*i]), Expect::ok);
        lends_.erase(lends_.begin() + static_cast<std::ptrdiff_t>(*i));
        return ok;
    }

    bool events() {
        Client& client = h_.client();
        auto i = pick(events_);
        switch (rng_() % 5) {
            case 0: {
                auto e = client.event_create(XENHSA_EVENT_SIGNAL, node_, rng_() % 4);
                if (e) {
                    events_.push_back(e.value().handle);
                }
                return expect("event-create", e, Expect::ok);
            }
            case 1:
                return !i || expect("event-set", client.event_set(events_[*i]), Expect::ok);
            case 2:
                return !i || expect("event-reset", client.event_reset(events_[*i]), Expect::ok);
            case 3: {
                if (!i) {
                    return true;
                }
                const Handle wait[] = {events_[*i]};
                auto r = client.event_wait(wait, false, static_cast<uint32_t>(rng_() % 3));
                const bool timed_out = !r && status_of(r.error()) == XENHSA_STATUS_TIMEOUT;
                return timed_out || expect("event-wait", r, Expect::ok);
            }
            default: {
                if (!i) {
                    return true;
                }
                const Handle e = events_[*i];
                events_.erase(events_.begin() + static_cast<std::ptrdiff_t>(*i));
                retire(e);
                return expect("event-destroy", client.event_destroy(e), Expect::ok);
            }
        }
    }

    bool queue_create() {
        if (queues_.size() >= 4) {
            return true;
        }
        aql::QueueOptions options;
        options.node = node_;
        options.packets = 64u << (rng_() % 3);
        auto q = aql::AqlQueue::create(h_.client(), options);
        if (!expect("queue-create", q, Expect::ok)) {
            return false;
        }
        if (q) {
            queues_.push_back(std::move(q.value()));
        }
        return true;
    }

    bool queue_destroy() {
        auto i = pick(queues_);
        if (!i) {
            return true;
        }
        retire(queues_[*i].handle());
        const bool ok = expect("queue-destroy", queues_[*i].destroy(), Expect::ok);
        queues_.erase(queues_.begin() + static_cast<std::ptrdiff_t>(*i));
        return ok;
    }

    // fill on a live queue, waited for and checked.
    bool dispatch() {
        auto i = pick(queues_);
        if (!i) {
            return true;
        }
        const uint32_t words = 1 + static_cast<uint32_t>(rng_() % kFillWords);
        const auto value = static_cast<uint32_t>(rng_());
        *args_ = {reinterpret_cast<uintptr_t>(words_), words, value, 0};
        aql::signal_init(*done_, 1);
        aql::DispatchSpec spec;
        spec.kernel_object = fill_.kernel_object;
        spec.kernarg_address = reinterpret_cast<uintptr_t>(args_);
        spec.completion_signal = aql::signal_handle(*done_);
        spec.grid[0] = (words + kWorkgroup - 1) / kWorkgroup * kWorkgroup;
        spec.workgroup[0] = kWorkgroup;
        if (!expect("dispatch", queues_[*i].dispatch(spec, h_.timeout()), Expect::ok) ||
            !expect("dispatch-wait",
                    aql::signal_wait(*done_, HSA_SIGNAL_CONDITION_LT, 1, h_.timeout()),
                    Expect::ok)) {
            return false;
        }
        for (uint32_t w = 0; w < words; ++w) {
            if (words_[w] != value) {
                return report_.check("sequence-fill", false,
                                     fmt::format("call {}: word {} of {}", index_, w, words));
            }
        }
        return true;
    }

    // A handle the backend never issued, on a call that takes one.
    bool forged() {
        const Handle h = (rng_() << 1) | 1;
        Client& client = h_.client();
        switch (rng_() % 6) {
            case 0:
                return expect("forged-unmap", client.unmap(h), Expect::refused);
            case 1:
                return expect("forged-unpin", client.unpin(h), Expect::refused);
            case 2:
                return expect("forged-map-to-gpu", client.map_to_gpu(h, 1), Expect::refused);
            case 3:
                return expect("forged-free", client.free(h), Expect::refused);
            case 4:
                return expect("forged-event-set", client.event_set(h), Expect::refused);
            default:
                return expect("forged-queue-destroy", client.queue_destroy(h), Expect::refused);
        }
    }

    // A handle this program already gave back: never reused, so refused.
    bool stale() {
        auto i = pick(dead_);
        if (!i) {
            return true;
        }
        const Handle h = dead_[*i];
        Client& client = h_.client();
        switch (rng_() % 4) {
            case 0:
                return expect("stale-unmap", client.unmap(h), Expect::refused);
            case 1:
                return expect("stale-unpin", client.unpin(h), Expect::refused);
            case 2:
                return expect("stale-event-destroy", client.event_destroy(h), Expect::refused);
            default:
                return expect("stale-free", client.free(h), Expect::refused);
        }
    }

    // PIN of a range no MAP covers: past the window, or a misaligned piece of a MAP.
    bool pin_outside() {
        if (auto i = pick(maps_); i && rng_() % 2 == 0) {
            const uint64_t va = maps_[*i].buffer.va() + 1 + rng_() % (XENHSA_PAGE_SIZE - 1);
            return expect("pin-misaligned", h_.client().pin(va, XENHSA_PAGE_SIZE), Expect::refused);
        }
        const uint64_t va = (rng_() % (uint64_t{1} << 40)) & ~uint64_t{XENHSA_PAGE_SIZE - 1};
        return expect("pin-unmapped", h_.client().pin(va, XENHSA_PAGE_SIZE), Expect::refused);
    }

    // UNMAP of a MAP under a live PIN: BAD_STATE (protocol 5.5).
    bool unmap_pinned() {
        if (pins_.empty()) {
            return true;
        }
        const PinRes& p = pins_[rng_() % pins_.size()];
        return expect("unmap-pinned", h_.client().unmap(maps_[p.map].handle), Expect::refused);
    }

    Harness& h_;
    Report& report_;
    uint32_t node_;
    std::mt19937_64 rng_;
    bool trace_;
    uint32_t index_ = 0;
    uint32_t refused_ = 0;
    uint32_t succeeded_ = 0;
    aql::GpuMemory arena_;
    xenhsa_kernel_info fill_{};
    uint32_t* words_ = nullptr;
    xenhsa_kernarg_fill* args_ = nullptr;
    amd_signal_t* done_ = nullptr;
    std::vector<MapRes> maps_;
    std::vector<PinRes> pins_;
    std::vector<AllocRes> allocs_;
    std::vector<LentBuffer> lends_;
    std::vector<Handle> events_;
    std::vector<aql::AqlQueue> queues_;
    std::vector<Handle> dead_;
};

}  // namespace

int run_sequence(const GlobalOptions& options, const SequenceOptions& sequence) {
    Report report("sequence");
    Harness h(options, report);
    const auto node = open_gpu(h, report, GpuOptions{});
    if (!node || !h.require(XENHSA_FEATURE_LEND, "lend")) {
        return report.finish();
    }
    Program program(h, report, *node, sequence.seed, sequence.trace);
    if (program.setup()) {
        bool ok = true;
        uint32_t i = 0;
        for (; ok && i < sequence.calls; ++i) {
            ok = program.step(i);
        }
        ok = program.finish() && ok;
        report.check("sequence", ok,
                     fmt::format("seed={} calls={} accepted={} refused={}", sequence.seed, i,
                                 program.succeeded(), program.refused()));
        report.check("handles-released", h.client().live_handles() == 0,
                     fmt::format("live={}", h.client().live_handles()));
    }
    return report.finish();
}

}  // namespace xenhsa::frontend::cli
