// Memory scenarios: map (optionally held), lend, revoke of a lend, and a stress loop.
#include <fmt/core.h>

#include <array>
#include <cstring>
#include <vector>
#include <xenhsa/frontend/errors.hpp>
#include <xenhsa/frontend/grant_list.hpp>
#include <xenhsa/frontend/probe.hpp>

#include "harness.hpp"
#include "patterns.hpp"
#include "scenarios.hpp"
#include "stop_signal.hpp"

namespace xenhsa::frontend::cli {

int run_map(const GlobalOptions& options, const MapOptions& map) {
    Report report("map");
    if (map.hold) {
        catch_stop_signals();
    }
    Harness h(options, report);
    if (!h.open()) {
        return report.finish();
    }
    Client& client = h.client();
    auto buffer = client.allocate(map.pages, !map.read_only);
    if (!report.check("allocate", buffer)) {
        return report.finish();
    }
    fill_pattern(buffer.value().bytes(), 0x1000);
    auto handle = client.map(buffer.value(), !map.read_only);
    if (!report.check("map", handle)) {
        return report.finish();
    }
    report.info(fmt::format("map handle={:#x} va={:#x} pages={} indirect={} writable={}",
                            handle.value(), buffer.value().va(), map.pages,
                            needs_indirect(map.pages) ? "yes" : "no", !map.read_only));
    if (!options.sim_dir.empty()) {
        // While the backend maps the pages, the simulator refuses to end access (EBUSY);
        // real Xen's gntalloc defers instead, so this is checked on the simulator only.
        auto early = buffer.value().release();
        if (!report.check("end-access-refused-while-mapped",
                          !early && early.error() == std::errc::device_or_resource_busy,
                          early ? "ended" : describe(early.error()))) {
            return report.finish();
        }
    }
    if (map.hold) {
        report.info("holding until SIGTERM/SIGINT");
        bool alive = true;
        while (!stop_requested()) {
            auto pumped = client.pump(std::chrono::milliseconds(200));
            if (!pumped && pumped.error() != std::errc::interrupted) {
                alive = report.check("backend-alive-while-held", pumped);
                break;
            }
        }
        if (!alive) {
            return report.finish();
        }
    }
    report.check("pattern-intact", has_pattern(buffer.value().bytes(), 0x1000));
    report.check("unmap", client.unmap(handle.value()));
    report.check("end-access-after-unmap", buffer.value().release());
    return report.finish();
}

int run_lend(const GlobalOptions& options, const LendOptions& lend) {
    Report report("lend");
    Harness h(options, report);
    if (!h.open() || !h.require(XENHSA_FEATURE_LEND, "lend")) {
        return report.finish();
    }
    Client& client = h.client();
    auto lent = client.lend(lend.pages, lend.writable);
    if (!report.check("lend", lent)) {
        return report.finish();
    }
    LentBuffer& buf = lent.value();
    report.info(fmt::format("lend handle={:#x} va={:#x} pages={} writable={}", buf.handle, buf.va,
                            buf.npages, buf.writable));
    report.check("mapped-at-lent-va", reinterpret_cast<uintptr_t>(buf.data()) == buf.va);
    std::vector<std::byte> copy(buf.size());
    auto read = probed_copy(copy.data(), buf.data(), copy.size());
    if (report.check("readable", read)) {
        report.check("zeroed", all_zero(copy));
    }
    if (lend.writable) {
        auto writable = probe_range(buf.data(), buf.size(), ProbeAccess::write);
        if (report.check("writable", writable)) {
            fill_pattern({buf.data(), buf.size()}, 0x2000);
            report.check("pattern-readback", has_pattern({buf.data(), buf.size()}, 0x2000));
        }
    } else {
        auto refused = probe(buf.data(), ProbeAccess::write);
        report.check("read-only", !refused && refused.error() == Errc::access_fault);
    }
    report.check("unmap", client.unmap(buf));
    report.check("handles-released", client.live_handles() == 0);
    return report.finish();
}

int run_revoke(const GlobalOptions& options, const RevokeOptions& revoke) {
    Report report("revoke");
    Harness h(options, report);
    if (!h.open() || !h.require(XENHSA_FEATURE_LEND, "lend")) {
        return report.finish();
    }
    Client& client = h.client();
    auto lent = client.lend(revoke.pages, true);
    if (!report.check("lend", lent)) {
        return report.finish();
    }
    LentBuffer& buf = lent.value();
    fill_pattern({buf.data(), buf.size()}, 0x3000);
    report.info(fmt::format("lend handle={:#x} va={:#x} pages={}", buf.handle, buf.va, buf.npages));
    report.info(
        fmt::format("waiting-for-revoke domid={} timeout-ms={}", h.guest().domid, revoke.wait_ms));
    auto notice = client.wait_notification(XENHSA_NOTIFY_REVOKED, buf.handle,
                                           std::chrono::milliseconds(revoke.wait_ms));
    if (!report.check("revoked-notified", notice)) {
        return report.finish();
    }
    report.check("revoked-record",
                 notice.value().arg0 == buf.va && notice.value().arg1 == buf.npages,
                 fmt::format("va={:#x} npages={}", notice.value().arg0, notice.value().arg1));
    report.check("client-knows-revoked", client.revoked(buf.handle));

    // Enforced revoke (xenhsa-sim): the pages are gone, the next access faults (SIGBUS).
    // Cooperative revoke (Xen 4.17): the pages stay mapped but were scrubbed.
    auto touched = probe(buf.data());
    if (!touched) {
        report.info(fmt::format("probe={}", touched.error() == Errc::revoked_access
                                                ? "revoked_access"
                                                : "access_fault"));
        report.check("probe-faults", touched.error() == Errc::revoked_access,
                     describe(touched.error()));
    } else {
        std::vector<std::byte> copy(buf.size());
        const bool scrubbed = probed_copy(copy.data(), buf.data(), copy.size()) && all_zero(copy);
        report.info("probe=readable");
        report.check("probe-scrubbed", scrubbed, "cooperative revoke: the pages must read zero");
    }

    // A request naming the revoked range gets REVOKED until the guest acknowledges.
    auto other = client.allocate(1);
    if (report.check("allocate-probe-buffer", other)) {
        auto req = make_map_req(buf.va, other.value().refs(), true, {});
        if (req) {
            auto reply = client.call(XENHSA_CMD_MAP, req.value());
            report.check(
                "map-over-revoked-range", reply && reply.value().status == XENHSA_STATUS_REVOKED,
                reply ? xenhsa_status_name(reply.value().status) : describe(reply.error()));
            if (reply && reply.value().status == XENHSA_STATUS_OK) {
                (void)client.unmap(reply.value().payload.as<xenhsa_handle_rsp>().handle);
            }
        }
    }
    report.check("ack-unmap", client.unmap(buf));
    report.check("handles-released", client.live_handles() == 0);
    return report.finish();
}

int run_stress(const GlobalOptions& options, const StressOptions& stress) {
    Report report("stress");
    Harness h(options, report);
    if (!h.open()) {
        return report.finish();
    }
    Client& client = h.client();
    const bool gpu = client.granted(XENHSA_FEATURE_GPU);
    const bool indirect = client.granted(XENHSA_FEATURE_INDIRECT);
    const uint64_t free_at_start = client.window().free_bytes();
    static constexpr std::array<uint32_t, 8> kSizes{1, 7, 52, 53, 1024, 1025, 3000, 2};

    uint32_t failures = 0;
    uint32_t maps = 0;
    std::string first_failure;
    auto note = [&](const char* what, const std::error_code& ec) {
        if (failures++ == 0) {
            first_failure = fmt::format("{}: {}", what, describe(ec));
        }
    };
    for (uint32_t it = 0; it < stress.iterations && !client.broken(); ++it) {
        uint32_t pages = kSizes[it % kSizes.size()];
        if (pages > stress.max_pages || (!indirect && pages > XENHSA_MAP_INLINE_GREFS)) {
            pages = std::min<uint32_t>(stress.max_pages, XENHSA_MAP_INLINE_GREFS);
        }
        auto buffer = client.allocate(pages);
        if (!buffer) {
            note("allocate", buffer.error());
            continue;
        }
        fill_pattern(buffer.value().bytes(), it);
        const bool writable = (it & 1) == 0;
        auto handle = client.map(buffer.value(), writable);
        if (!handle) {
            note("map", handle.error());
            continue;
        }
        ++maps;
        if (gpu) {
            auto pin = client.pin(buffer.value().va(), buffer.value().size(),
                                  writable ? 0u : uint32_t{XENHSA_PIN_READ_ONLY});
            if (!pin) {
                note("pin", pin.error());
            } else if (auto u = client.unpin(pin.value()); !u) {
                note("unpin", u.error());
            }
        }
        if (auto q = client.query_system(); !q) {
            note("query", q.error());
        }
        if (auto u = client.unmap(handle.value()); !u) {
            note("unmap", u.error());
        }
        if (auto r = buffer.value().release(); !r) {
            note("release", r.error());
        }
    }
    report.check("map-unmap-loop", failures == 0,
                 failures == 0 ? fmt::format("maps={}", maps) : first_failure);

    // Pipelining: fill the ring with requests, then collect the answers in any order.
    const uint32_t depth = h.device().ring().slots();
    std::vector<uint32_t> seqnos;
    bool sent_all = true;
    for (uint32_t i = 0; i < depth; ++i) {
        const xenhsa_query_req req{XENHSA_QUERY_VERSION, 0, 0, 0};
        auto seqno = client.send(XENHSA_CMD_QUERY, std::as_bytes(std::span(&req, 1)));
        if (!seqno) {
            sent_all = false;
            break;
        }
        seqnos.push_back(seqno.value());
    }
    uint32_t answered = 0;
    for (auto it = seqnos.rbegin(); it != seqnos.rend(); ++it) {
        auto reply = client.receive(*it);
        answered += reply && reply.value().status == XENHSA_STATUS_OK ? 1 : 0;
    }
    report.check("pipelined-full-ring", sent_all && answered == depth,
                 fmt::format("sent={} answered={}", seqnos.size(), answered));

    if (gpu && client.granted(XENHSA_FEATURE_WAIT_CANCEL)) {
        auto event = client.event_create(XENHSA_EVENT_SIGNAL, 0, 0);
        if (report.check("event-create", event)) {
            const Handle e = event.value().handle;
            auto wait = client.event_wait_async(std::span(&e, 1), false, XENHSA_WAIT_INFINITE);
            if (report.check("event-wait-pending", wait)) {
                report.check("event-wait-cancel", client.event_wait_cancel(wait.value()));
                auto ended = client.finish_wait(wait.value());
                report.check("event-wait-cancelled",
                             !ended && status_of(ended.error()) == XENHSA_STATUS_CANCELLED,
                             ended ? "answered OK" : describe(ended.error()));
            }
            report.check("event-set", client.event_set(e));
            auto fired = client.event_wait(std::span(&e, 1), false, 5000);
            report.check("event-wait-fires", fired && fired.value() == 1u);
            auto timed = client.event_wait(std::span(&e, 1), false, 0);
            report.check("event-wait-times-out",
                         !timed && status_of(timed.error()) == XENHSA_STATUS_TIMEOUT,
                         timed ? "answered OK" : describe(timed.error()));
            report.check("event-destroy", client.event_destroy(e));
        }
    }
    report.check("handles-released", client.live_handles() == 0,
                 fmt::format("live={}", client.live_handles()));
    report.check("window-returned", client.window().free_bytes() == free_at_start,
                 fmt::format("free={:#x} of {:#x}", client.window().free_bytes(), free_at_start));
    report.check("backend-alive", h.device().check_backend());
    return report.finish();
}

}  // namespace xenhsa::frontend::cli
