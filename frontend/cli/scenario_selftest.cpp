// `xenhsa-guest selftest`: the smallest complete session.
#include <fmt/core.h>

#include <cstring>
#include <xenhsa/frontend/errors.hpp>

#include "harness.hpp"
#include "scenarios.hpp"

namespace xenhsa::frontend::cli {

int run_selftest(const GlobalOptions& options) {
    Report report("selftest");
    Harness h(options, report);
    if (!h.open()) {
        return report.finish();
    }
    Client& client = h.client();
    {
        const Session& s = *client.session();
        report.check("hello-version", s.version == XENHSA_PROTO_VERSION,
                     fmt::format("version={}", s.version));
        report.check("hello-ring-slots",
                     s.ring_slots == XENHSA_RING_SLOTS(h.device().ring_order()));
    }

    auto version = client.query_version();
    if (report.check("query-version", version)) {
        report.check("query-version-proto", version.value().proto_version == XENHSA_PROTO_VERSION,
                     fmt::format("proto={} kfd={}.{} gpu-backend={}", version.value().proto_version,
                                 version.value().kfd_major, version.value().kfd_minor,
                                 version.value().gpu_backend));
    }
    auto system = client.query_system();
    if (report.check("query-system", system)) {
        report.check("query-system-xnack-off", system.value().xnack_enabled == 0,
                     fmt::format("nodes={} kernels={}", system.value().num_nodes,
                                 system.value().num_kernels));
        if (system.value().num_nodes > 0) {
            auto node = client.query_node(0);  // 296 bytes: two chunks
            if (report.check("query-node-0", node)) {
                auto n = node.value();
                n.marketing_name[sizeof n.marketing_name - 1] = 0;
                report.info(fmt::format("node0 name=\"{}\" simd-cores={} local-mem={}",
                                        reinterpret_cast<const char*>(n.marketing_name),
                                        n.num_fcompute_cores, n.local_mem_size));
            }
        }
    }

    auto buffer = client.allocate(4);
    if (report.check("allocate-4-pages", buffer)) {
        std::memset(buffer.value().data(), 0xA5, buffer.value().size());
        auto map = client.map(buffer.value());
        if (report.check("map", map, fmt::format("va={:#x}", buffer.value().va()))) {
            if (client.granted(XENHSA_FEATURE_GPU)) {
                auto pin = client.pin(buffer.value().va(), buffer.value().size());
                if (report.check("pin", pin)) {
                    report.check("unpin", client.unpin(pin.value()));
                }
            } else {
                report.info("gpu=not-granted pin=skipped");
            }
            // While the backend maps the pages they cannot be taken back (EBUSY on sim).
            report.check("unmap", client.unmap(map.value()));
        }
        report.check("end-access-after-unmap", buffer.value().release());
    }
    report.check("handles-released", client.live_handles() == 0,
                 fmt::format("live={}", client.live_handles()));
    report.check("backend-alive", h.device().check_backend());
    report.check("close", h.device().close());
    return report.finish();
}

}  // namespace xenhsa::frontend::cli
