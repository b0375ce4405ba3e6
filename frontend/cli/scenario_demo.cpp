// The demo's guest: one device does everything a guest of script/demo must show. It MAPs
// a patterned buffer, runs vector_add on mapped guest memory, borrows a LEND, and then
// waits for the operator's revoke. After the revoke the lent pages fault, the backend has
// let go of the MAP (end access succeeds), and a request naming the range gets REVOKED.
#include "gpu_rig.hpp"
#include "harness.hpp"
#include "scenarios.hpp"

#include <xenhsa/frontend/grant_list.hpp>
#include <xenhsa/frontend/probe.hpp>

#include <fmt/core.h>

#include <cstring>

namespace xenhsa::frontend::cli {

namespace {

void fill_words(std::span<std::byte> bytes, uint32_t seed)
{
    for (std::size_t i = 0; i + 4 <= bytes.size(); i += 4) {
        const uint32_t v = seed + static_cast<uint32_t>(i / 4);
        std::memcpy(bytes.data() + i, &v, 4);
    }
}

bool vector_add(Harness &h, Report &report, uint32_t node, uint32_t n)
{
    GpuRig rig(h, report);
    bool held = false;
    if (rig.setup(3 * std::size_t{n} * sizeof(float) + 1024, node)) {
        auto kernel = rig.kernel(XENHSA_KERNEL_NAME_VECTOR_ADD, sizeof(xenhsa_kernarg_vector_add));
        float *a = rig.carve<float>(n);
        float *b = rig.carve<float>(n);
        float *c = rig.carve<float>(n);
        auto *args = rig.carve<xenhsa_kernarg_vector_add>(1);
        amd_signal_t *done = rig.signal(1);
        if (kernel && a && b && c && args && done) {
            for (uint32_t i = 0; i < n; ++i) {
                a[i] = static_cast<float>(i);
                b[i] = static_cast<float>(3 * i);
                c[i] = -1.0f;
            }
            *args = {reinterpret_cast<uintptr_t>(a), reinterpret_cast<uintptr_t>(b),
                     reinterpret_cast<uintptr_t>(c), n};
            if (rig.submit("vector_add", rig.dispatch_spec(*kernel, args, n, done)) &&
                rig.wait("vector_add", *done)) {
                uint32_t wrong = 0;
                for (uint32_t i = 0; i < n; ++i) {
                    wrong += c[i] == static_cast<float>(4 * i) ? 0 : 1;
                }
                held = report.check("gpu-result", wrong == 0, fmt::format("n={} wrong={}", n, wrong));
            }
        }
    }
    rig.teardown(h.client().live_handles() >= 1 ? 1 : 0);
    return held;
}

}  // namespace

int run_demo(const GlobalOptions &options, const DemoOptions &demo)
{
    Report report("demo");
    Harness h(options, report);
    const auto node = open_gpu(h, report, GpuOptions{});
    if (!node) {
        return report.finish();
    }
    Client &client = h.client();
    report.info(fmt::format("domid={}", h.guest().domid));

    auto buffer = client.allocate(demo.pages, true);
    if (!report.check("allocate", buffer)) {
        return report.finish();
    }
    fill_words(buffer.value().bytes(), 0x5000);
    auto mapped = client.map(buffer.value(), true);
    if (!report.check("map", mapped, fmt::format("pages={}", demo.pages))) {
        return report.finish();
    }
    report.info(fmt::format("mapped pages={} va={:#x}", demo.pages, buffer.value().va()));

    vector_add(h, report, *node, demo.elements);

    auto lent = client.lend(demo.lend_pages, true);
    if (!report.check("lend", lent)) {
        return report.finish();
    }
    LentBuffer &buf = lent.value();
    fill_words({buf.data(), buf.size()}, 0x6000);
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
