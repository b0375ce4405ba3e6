// `xenhsa-guest hostile --mode M`: a guest that breaks the rules on purpose. The backend
// must answer with the right status (or disconnect, for ring-level violations) and keep
// serving; every reply is still checked by the Client.
#include <fmt/core.h>

#include <array>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <thread>
#include <xenhsa/frontend/errors.hpp>
#include <xenhsa/frontend/gpu_memory.hpp>
#include <xenhsa/frontend/grant_list.hpp>
#include <xenhsa/frontend/queue_memory.hpp>

#include "harness.hpp"
#include "scenarios.hpp"

namespace xenhsa::frontend::cli {

namespace {

using Clock = std::chrono::steady_clock;

std::string status_text(const Result<Reply>& reply) {
    return reply ? xenhsa_status_name(reply.value().status) : describe(reply.error());
}

// One request that must be answered with `want`.
bool expect_status(Report& report, Client& client, std::string_view name, uint32_t cmd,
                   std::span<const std::byte> payload, uint32_t want) {
    auto reply = client.call(cmd, payload);
    return report.check(
        name, reply && reply.value().status == want,
        fmt::format("want={} got={}", xenhsa_status_name(want), status_text(reply)));
}

template <class Wire>
bool expect_status(Report& report, Client& client, std::string_view name, uint32_t cmd,
                   const Wire& wire, uint32_t want) {
    return expect_status(report, client, name, cmd, std::as_bytes(std::span(&wire, 1)), want);
}

void check_survives(Report& report, Harness& h) {
    report.check("session-survives", h.client().query_version());
    report.check("backend-alive", h.device().check_backend());
}

void overflow(Report& report, Harness& h) {
    FrontRing& ring = h.device().ring();
    const uint32_t forced = ring.published() + ring.slots() + 5;
    report.info(fmt::format("forcing req_prod={} slots={}", forced, ring.slots()));
    ring.force_req_prod(forced);
    (void)h.device().kick();
    // RING_REQUEST_PROD_OVERFLOW: the backend must cut this guest off (2.6).
    const auto deadline = Clock::now() + h.timeout();
    Result<void> alive = boost::outcome_v2::success();
    while (Clock::now() < deadline) {
        alive = h.device().wait(std::chrono::milliseconds(100));
        if (!alive) {
            break;
        }
    }
    report.check("backend-disconnects", !alive && alive.error() == Errc::backend_gone,
                 alive ? "still connected" : describe(alive.error()));
    auto state = h.device().read_backend_state();
    report.info(fmt::format("backend-state={} be-alive={}", state ? state.value() : 0u,
                            h.device().be_alive()));
}

void garbage(Report& report, Harness& h, const HostileOptions& hostile) {
    Client& client = h.client();
    std::mt19937 rng(hostile.seed);
    std::map<uint32_t, uint32_t> statuses;
    uint32_t failed = 0;
    std::string first;
    for (uint32_t i = 0; i < hostile.count && !client.broken(); ++i) {
        xenhsa_req_slot slot;
        for (std::size_t b = 0; b < sizeof slot; b += 4) {
            const uint32_t r = rng();
            std::memcpy(reinterpret_cast<std::byte*>(&slot) + b, &r, 4);
        }
        const uint32_t pick = rng() % 8;
        // Mostly known commands with the right length, so the payload checks run too.
        slot.hdr.cmd = pick < 6 ? 1 + rng() % (XENHSA_CMD_COUNT_ - 1) : slot.hdr.cmd;
        if (pick < 5 && xenhsa_req_len(slot.hdr.cmd) != XENHSA_LEN_UNKNOWN) {
            slot.hdr.len = xenhsa_req_len(slot.hdr.cmd);
        } else if (pick == 5) {
            slot.hdr.len %= XENHSA_SLOT_PAYLOAD_MAX + 16;
        }
        slot.hdr.pad = rng() % 4 == 0 ? slot.hdr.pad : 0;
        auto reply = client.call_raw(slot);
        if (!reply) {
            if (failed++ == 0) {
                first = fmt::format("request {} cmd={:#x}: {}", i, slot.hdr.cmd,
                                    describe(reply.error()));
            }
            continue;
        }
        ++statuses[reply.value().status];
    }
    std::string tally;
    for (auto [status, n] : statuses) {
        tally += fmt::format("{}{}={}", tally.empty() ? "" : ",", xenhsa_status_name(status), n);
    }
    report.info(fmt::format("statuses {}", tally));
    report.check("garbage-answered", failed == 0 && !client.broken(),
                 failed == 0 ? fmt::format("count={}", hostile.count) : first);
    check_survives(report, h);
}

void forged_handles(Report& report, Harness& h, const HostileOptions& hostile) {
    Client& client = h.client();
    const bool gpu = client.granted(XENHSA_FEATURE_GPU);
    const uint32_t gpu_status =
        gpu ? uint32_t{XENHSA_STATUS_BAD_HANDLE} : uint32_t{XENHSA_STATUS_UNSUPPORTED};
    std::mt19937_64 rng(hostile.seed);
    const std::array<std::pair<uint32_t, bool>, 8> releases{{
        {XENHSA_CMD_UNMAP, false},
        {XENHSA_CMD_UNPIN, true},
        {XENHSA_CMD_UNMAP_FROM_GPU, true},
        {XENHSA_CMD_FREE, true},
        {XENHSA_CMD_QUEUE_DESTROY, true},
        {XENHSA_CMD_EVENT_DESTROY, true},
        {XENHSA_CMD_EVENT_SET, true},
        {XENHSA_CMD_EVENT_RESET, true},
    }};
    for (auto [cmd, needs_gpu] : releases) {
        const xenhsa_handle_req zero{0};
        expect_status(report, client, fmt::format("zero-handle-{}", xenhsa_cmd_name(cmd)), cmd,
                      zero, XENHSA_STATUS_BAD_HANDLE);
        const xenhsa_handle_req forged{rng() | 1};
        expect_status(report, client, fmt::format("forged-handle-{}", xenhsa_cmd_name(cmd)), cmd,
                      forged, needs_gpu ? gpu_status : uint32_t{XENHSA_STATUS_BAD_HANDLE});
    }
    // A real MAP handle used as another kind, then used after it was released.
    auto buffer = client.allocate(2);
    if (!report.check("allocate", buffer)) {
        return;
    }
    auto map = client.map(buffer.value());
    if (!report.check("map", map)) {
        return;
    }
    const xenhsa_handle_req as_other{map.value()};
    for (uint32_t cmd :
         {XENHSA_CMD_UNPIN, XENHSA_CMD_FREE, XENHSA_CMD_QUEUE_DESTROY, XENHSA_CMD_EVENT_SET}) {
        expect_status(report, client, fmt::format("map-handle-as-{}", xenhsa_cmd_name(cmd)), cmd,
                      as_other, gpu_status);
    }
    const xenhsa_map_to_gpu_req to_gpu{map.value(), 1, 0, 0};
    expect_status(report, client, "map-handle-to-gpu", XENHSA_CMD_MAP_TO_GPU, to_gpu, gpu_status);
    report.check("unmap", client.unmap(map.value()));
    expect_status(report, client, "stale-handle-unmap", XENHSA_CMD_UNMAP, as_other,
                  XENHSA_STATUS_BAD_HANDLE);
    report.check("end-access", buffer.value().release());
    check_survives(report, h);
}

void bad_grefs(Report& report, Harness& h) {
    Client& client = h.client();
    auto buffer = client.allocate(4);
    auto read_only = client.allocate(2, false);
    if (!report.check("allocate", buffer && read_only)) {
        return;
    }
    const auto refs = buffer.value().refs();
    std::vector<GrantRef> bogus(refs.begin(), refs.end());
    for (GrantRef& r : bogus) {
        r += 1000000;
    }
    auto all_bad = make_map_req(buffer.value().va(), bogus, true, {});
    expect_status(report, client, "map-ungranted-refs", XENHSA_CMD_MAP, all_bad.value(),
                  XENHSA_STATUS_GRANT_FAILED);
    std::vector<GrantRef> one_bad(refs.begin(), refs.end());
    one_bad[3] += 1000000;
    auto partly = make_map_req(buffer.value().va(), one_bad, true, {});
    expect_status(report, client, "map-one-bad-ref", XENHSA_CMD_MAP, partly.value(),
                  XENHSA_STATUS_GRANT_FAILED);
    // Nothing of the failed MAPs stayed mapped: the same range maps now.
    auto good = client.map(buffer.value());
    if (report.check("map-after-failures", good)) {
        report.check("unmap", client.unmap(good.value()));
    }
    // A read-only grant mapped writable.
    auto rw_over_ro = make_map_req(read_only.value().va(), read_only.value().refs(), true, {});
    expect_status(report, client, "map-read-only-grant-writable", XENHSA_CMD_MAP,
                  rw_over_ro.value(), XENHSA_STATUS_GRANT_FAILED);
    if (client.granted(XENHSA_FEATURE_INDIRECT)) {
        auto big = client.allocate(60);
        auto indirect = client.allocate(1, false);
        if (report.check("allocate-indirect", big && indirect)) {
            auto packed = pack_indirect(big.value().refs(), indirect.value().bytes());
            auto req =
                make_map_req(big.value().va(), big.value().refs(), true, indirect.value().refs());
            if (packed && req) {
                // The tail past npages must be zero (5.4 step 9).
                const GrantRef junk = 77;
                std::memcpy(indirect.value().data() + XENHSA_PAGE_SIZE - 4, &junk, 4);
                expect_status(report, client, "indirect-dirty-tail", XENHSA_CMD_MAP, req.value(),
                              XENHSA_STATUS_BAD_PAD);
                auto req_bad = req.value();
                req_bad.gref[0] += 1000000;
                expect_status(report, client, "indirect-page-ungranted", XENHSA_CMD_MAP, req_bad,
                              XENHSA_STATUS_GRANT_FAILED);
            }
        }
    }
    report.check("end-access", buffer.value().release() && read_only.value().release());
    check_survives(report, h);
}

void va_outside(Report& report, Harness& h) {
    Client& client = h.client();
    auto buffer = client.allocate(2);
    if (!report.check("allocate", buffer)) {
        return;
    }
    const Session& s = *client.session();
    auto below = make_map_req(s.va_base - 2 * XENHSA_PAGE_SIZE, buffer.value().refs(), true, {});
    expect_status(report, client, "map-below-window", XENHSA_CMD_MAP, below.value(),
                  XENHSA_STATUS_BAD_ADDRESS);
    auto straddle =
        make_map_req(s.va_base + s.va_size - XENHSA_PAGE_SIZE, buffer.value().refs(), true, {});
    expect_status(report, client, "map-straddling-window-end", XENHSA_CMD_MAP, straddle.value(),
                  XENHSA_STATUS_BAD_ADDRESS);
    auto map = client.map(buffer.value());
    if (report.check("map", map)) {
        auto again = make_map_req(buffer.value().va(), buffer.value().refs(), true, {});
        expect_status(report, client, "map-overlapping", XENHSA_CMD_MAP, again.value(),
                      XENHSA_STATUS_BAD_ADDRESS);
        if (client.granted(XENHSA_FEATURE_LEND)) {
            const xenhsa_lend_req over{buffer.value().va(), 1, XENHSA_MAP_RW};
            expect_status(report, client, "lend-overlapping", XENHSA_CMD_LEND, over,
                          XENHSA_STATUS_BAD_ADDRESS);
        }
        report.check("unmap", client.unmap(map.value()));
    }
    report.check("end-access", buffer.value().release());
    check_survives(report, h);
}

void doorbell_garbage(Report& report, Harness& h, const HostileOptions& hostile) {
    std::mt19937_64 rng(hostile.seed);
    xenhsa_doorbell_page& page = h.device().doorbell_page();
    for (uint32_t round = 0; round < std::max<uint32_t>(hostile.count / 50, 1); ++round) {
        for (uint32_t i = 0; i < XENHSA_DOORBELLS_PER_PAGE; ++i) {
            xenhsa_doorbell_ring(&page, i, rng());
        }
        (void)h.device().kick();
    }
    report.check("doorbells-scribbled", true, fmt::format("rounds={}", hostile.count / 50));
    check_survives(report, h);
}

// `count` thousand kicks as fast as it can, `before_each(i)` ahead of kick i.
template <class F>
void kick_flood(Report& report, Harness& h, const HostileOptions& hostile, F&& before_each) {
    const uint64_t kicks = uint64_t{std::max<uint32_t>(hostile.count, 1)} * 1000;
    const auto start = Clock::now();
    uint64_t sent = 0;
    for (; sent < kicks; ++sent) {
        before_each(sent);
        if (!h.device().kick()) {
            break;
        }
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    report.check("kicks-sent", sent == kicks,
                 fmt::format("kicks={} seconds={:.3f} kicks_per_s={:.0f}", sent, seconds,
                             seconds > 0 ? static_cast<double>(sent) / seconds : 0.0));
}

// Kicks without work, as fast as it can (XSA-332): the backend slows this guest's wake-ups
// down and keeps serving it.
void event_flood(Report& report, Harness& h, const HostileOptions& hostile) {
    kick_flood(report, h, hostile, [](uint64_t) {});
    check_survives(report, h);
}

// Kicks that each move a queue's doorbell but bring no packet: the backend counts them as
// spurious too (a doorbell is work only when the GPU takes packets behind it).
void doorbell_flood(Report& report, Harness& h, const HostileOptions& hostile) {
    Client& client = h.client();
    auto node = aql::find_gpu_node(client);
    if (!report.check("gpu-node", node && node.value().has_value())) {
        return;
    }
    QueueSpec spec;
    spec.node = *node.value();
    spec.ring_bytes = XENHSA_QUEUE_RING_MIN;
    auto queue = QueueMemory::create(client, spec);
    if (!report.check("queue-create", queue)) {
        return;
    }
    xenhsa_doorbell_page& page = h.device().doorbell_page();
    const uint32_t doorbell = queue.value().doorbell_index();
    kick_flood(report, h, hostile,
               [&](uint64_t i) { xenhsa_doorbell_ring(&page, doorbell, i + 1); });
    report.check("queue-destroy", queue.value().destroy());
    check_survives(report, h);
}

void hello_again(Report& report, Harness& h) {
    Client& client = h.client();
    const Session& s = *client.session();
    for (int i = 0; i < 3; ++i) {
        const xenhsa_hello_req again{1, 1, XENHSA_FEATURES_V1, s.va_base, s.va_size};
        expect_status(report, client, fmt::format("hello-after-connected-{}", i), XENHSA_CMD_HELLO,
                      again, XENHSA_STATUS_BAD_STATE);
    }
    check_survives(report, h);
}

void notify_scribble(Report& report, Harness& h) {
    auto* page = reinterpret_cast<xenhsa_notify_page*>(h.device().notify_page().data());
    // Our consumer index runs far ahead of the producer: the backend must count the page
    // as full and keep going.
    xenhsa_index_store(&page->cons, 0x80000000u);
    std::memset(page->fe_pad, 0xFF, sizeof page->fe_pad);
    (void)h.device().kick();
    check_survives(report, h);
}

}  // namespace

int run_hostile(const GlobalOptions& options, const HostileOptions& hostile) {
    Report report("hostile-" + hostile.mode);
    static const std::map<std::string, std::function<void(Report&, Harness&)>> kModes{
        {"overflow", [](Report& r, Harness& h) { overflow(r, h); }},
        {"bad-grefs", [](Report& r, Harness& h) { bad_grefs(r, h); }},
        {"va-outside", [](Report& r, Harness& h) { va_outside(r, h); }},
        {"hello-again", [](Report& r, Harness& h) { hello_again(r, h); }},
        {"notify-scribble", [](Report& r, Harness& h) { notify_scribble(r, h); }},
    };
    Harness h(options, report);
    if (!h.open()) {
        return report.finish();
    }
    if (hostile.mode == "garbage") {
        garbage(report, h, hostile);
    } else if (hostile.mode == "forged-handle") {
        forged_handles(report, h, hostile);
    } else if (hostile.mode == "doorbell-garbage") {
        doorbell_garbage(report, h, hostile);
    } else if (hostile.mode == "event-flood") {
        event_flood(report, h, hostile);
    } else if (hostile.mode == "doorbell-flood") {
        doorbell_flood(report, h, hostile);
    } else if (auto it = kModes.find(hostile.mode); it != kModes.end()) {
        it->second(report, h);
    } else {
        report.check("mode", false, fmt::format("unknown mode {}", hostile.mode));
    }
    return report.finish();
}

}  // namespace xenhsa::frontend::cli
