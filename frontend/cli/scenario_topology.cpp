// `xenhsa-guest topology`: what QUERY reports, one `info` line per node, memory bank,
// cache and built-in kernel (the rocr tests compare rocminfo's listing with it).
#include <fmt/core.h>

#include <cstring>

#include "harness.hpp"
#include "scenarios.hpp"

namespace xenhsa::frontend::cli {

namespace {

template <std::size_t N>
std::string text(const uint8_t (&field)[N]) {
    const auto* begin = reinterpret_cast<const char*>(field);
    return std::string(begin, strnlen(begin, N - 1));
}

}  // namespace

int run_topology(const GlobalOptions& options) {
    Report report("topology");
    Harness h(options, report);
    if (!h.open()) {
        return report.finish();
    }
    Client& client = h.client();
    auto version = client.query_version();
    auto system = client.query_system();
    if (!report.check("query-version", version) || !report.check("query-system", system)) {
        return report.finish();
    }
    report.info(fmt::format("system nodes={} kernels={} kfd={}.{} gpu-backend={}",
                            system.value().num_nodes, system.value().num_kernels,
                            version.value().kfd_major, version.value().kfd_minor,
                            version.value().gpu_backend));
    bool all = true;
    for (uint32_t n = 0; n < system.value().num_nodes; ++n) {
        auto node = client.query_node(n);
        if (!node) {
            all = report.check(fmt::format("query-node-{}", n), node) && all;
            continue;
        }
        const xenhsa_node_props& p = node.value();
        const uint32_t cus = p.num_simd_per_cu != 0 ? p.num_fcompute_cores / p.num_simd_per_cu : 0;
        report.info(fmt::format(
            "node={} name=\"{}\" amd-name={} cpu-cores={} simd={} simd-per-cu={} cus={} "
            "engine-id={:#x} wavefront={} lds-kb={} local-mem={} banks={} caches={} io-links={}",
            n, text(p.marketing_name), text(p.amd_name), p.num_cpu_cores, p.num_fcompute_cores,
            p.num_simd_per_cu, cus, p.engine_id, p.wavefront_size, p.lds_size_kb, p.local_mem_size,
            p.num_memory_banks, p.num_caches, p.num_io_links));
        for (uint32_t i = 0; i < p.num_memory_banks; ++i) {
            auto bytes = client.query(XENHSA_QUERY_MEM_BANK, n, i);
            if (!bytes || bytes.value().size() != sizeof(xenhsa_mem_bank)) {
                all = report.check(fmt::format("query-bank-{}-{}", n, i), false) && all;
                continue;
            }
            xenhsa_mem_bank bank{};
            std::memcpy(&bank, bytes.value().data(), sizeof bank);
            report.info(fmt::format("node={} bank={} heap={} size={} virtual-base={:#x}", n, i,
                                    bank.heap_type, bank.size_bytes, bank.virtual_base));
        }
    }
    for (uint32_t i = 0; i < system.value().num_kernels; ++i) {
        auto kernel = client.query_kernel(i);
        if (!kernel) {
            all = report.check(fmt::format("query-kernel-{}", i), kernel) && all;
            continue;
        }
        report.info(fmt::format("kernel={} name={} object={:#x} kernarg={}", i,
                                text(kernel.value().name), kernel.value().kernel_object,
                                kernel.value().kernarg_size));
    }
    report.check("topology", all);
    report.check("close", h.device().close());
    return report.finish();
}

}  // namespace xenhsa::frontend::cli
