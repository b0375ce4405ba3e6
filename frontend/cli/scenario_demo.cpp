// The demo's guest: one device does everything a guest of script/demo must show. It MAPs
// a patterned buffer, runs vector_add on mapped guest memory, borrows a LEND, and then
// waits for the operator's revoke. After the revoke the lent pages fault, the backend has
// let go of the MAP (end access succeeds), and a request naming the range gets REVOKED.
#include <fmt/core.h>

#include <xenhsa/frontend/grant_list.hpp>
#include <xenhsa/frontend/probe.hpp>

#include "gpu_rig.hpp"
#include "harness.hpp"
#include "patterns.hpp"
#include "scenarios.hpp"

namespace xenhsa::frontend::cli {

int run_demo(const GlobalOptions& options, const DemoOptions& demo) {
    Report report("demo");
    Harness h(options, report);
    const auto node = open_gpu(h, report, GpuOptions{});
    if (!node) {
        return report.finish();
    }
    Client& client = h.client();
    report.info(fmt::format("domid={}", h.guest().domid));

    auto buffer = client.allocate(demo.pages, true);
    if (!report.check("allocate", buffer)) {
        return report.finish();
    }
    fill_pattern(buffer.value().bytes(), 0x5000);
    auto mapped = client.map(buffer.value(), true);
    if (!report.check("map", mapped, fmt::format("pages={}", demo.pages))) {
        return report.finish();
    }
    report.info(fmt::format("mapped pages={} va={:#x}", demo.pages, buffer.value().va()));

    vector_add(h, report, *node, demo.elements, 1);  // the MAP above stays

    auto lent = client.lend(demo.lend_pages, true);
    if (!report.check("lend", lent)) {
        return report.finish();
    }
    LentBuffer& buf = lent.value();
    fill_pattern({buf.data(), buf.size()}, 0x6000);
    report.info(fmt::format("waiting-for-revoke domid={} lend-va={:#x}", h.guest().domid, buf.va));

    auto notice = client.wait_notification(XENHSA_NOTIFY_REVOKED, buf.handle,
                                           std::chrono::milliseconds(demo.wait_ms));
    if (!report.check("revoked-notified", notice)) {
        return report.finish();
    }
    auto touched = probe(buf.data());
    report.check("lent-page-faults", !touched && touched.error() == Errc::revoked_access,
                 touched ? "still readable" : describe(touched.error()));
    // The operator's revoke took the MAP too: the backend no longer maps the buffer.
    report.check("map-released-by-backend", buffer.value().release());
    report.check("ack-unmap-lend", client.unmap(buf));
    return report.finish();
}

}  // namespace xenhsa::frontend::cli
