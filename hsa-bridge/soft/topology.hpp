// The software agent's topology, as KFD would report it for a small dGPU system, with
// what ROCr 5.2.3 insists on: node 0 a CPU node with system memory and an L1 data cache,
// node 1 the GPU (gfx9 numbers for SoftAgentOptions::gfx; an FB_PRIVATE device-local
// bank, LDS and scratch apertures; an L1 per CU and a shared L2), one PCIe link each way
// without atomics restrictions. XNACK off.
#ifndef XENHSA_HSA_SOFT_TOPOLOGY_HPP
#define XENHSA_HSA_SOFT_TOPOLOGY_HPP

#include <xenhsa/proto/query.h>

#include <cstdint>
#include <xenhsa/hsa/soft_agent.hpp>

namespace xenhsa::hsa::soft {

inline constexpr uint32_t kNodeCount = 2;

class Topology {
public:
    // Reads the host's CPU count and memory size now: a confined worker cannot open
    // /sys or /proc later.
    explicit Topology(const SoftAgentOptions& options) noexcept;

    [[nodiscard]] xenhsa_version_info version() const noexcept;
    [[nodiscard]] xenhsa_system_props system() const noexcept;
    // EINVAL for a node that does not exist, ENOENT for an index past the node's count.
    [[nodiscard]] Result<xenhsa_node_props> node(uint32_t node) const noexcept;
    [[nodiscard]] Result<xenhsa_mem_bank> mem_bank(uint32_t node, uint32_t index) const noexcept;
    [[nodiscard]] Result<xenhsa_cache> cache(uint32_t node, uint32_t index) const noexcept;
    [[nodiscard]] Result<xenhsa_io_link> io_link(uint32_t node, uint32_t index) const noexcept;
    [[nodiscard]] Result<xenhsa_clock_counters> clock(uint32_t node) const noexcept;
    [[nodiscard]] Result<xenhsa_tile_config> tile_config(uint32_t node) const noexcept;

private:
    SoftAgentOptions options_;
    uint32_t cpu_cores_ = 1;
    uint64_t system_memory_ = 0;
};

}  // namespace xenhsa::hsa::soft

#endif
