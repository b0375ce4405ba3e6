// The backend's topology, fetched with QUERY once at hsaKmtOpenKFD and converted field by
// field into Debian's hsakmt.h structs (the wire never carries a thunk struct).
#ifndef XENHSA_FRONTEND_HSAKMT_TOPOLOGY_HPP
#define XENHSA_FRONTEND_HSAKMT_TOPOLOGY_HPP

#include <hsakmt.h>

#include <cstdint>
#include <vector>
#include <xenhsa/frontend/client.hpp>

namespace xenhsa::frontend::hsakmt {

struct NodeTopology {
    HsaNodeProperties props{};
    std::vector<HsaMemoryProperties> banks;
    std::vector<HsaCacheProperties> caches;
    std::vector<HsaIoLinkProperties> links;
};

struct KernelEntry {
    std::string name;
    uint64_t object = 0;
};

struct Topology {
    HsaVersionInfo version{};
    uint32_t gpu_backend = 0;  // enum xenhsa_gpu_backend
    HsaSystemProperties system{};
    std::vector<NodeTopology> nodes;
    std::vector<KernelEntry> kernels;

    [[nodiscard]] bool is_gpu(uint32_t node) const noexcept {
        return node < nodes.size() && nodes[node].props.NumFComputeCores != 0;
    }
    // The first GPU node (the one guest allocations are mapped for), or nodes.size().
    [[nodiscard]] uint32_t first_gpu() const noexcept;
};

Result<Topology> fetch_topology(Client& client);
// HSA_ENGINE_ID and friends from the wire; exposed for the tests.
HsaNodeProperties to_node_properties(const xenhsa_node_props& wire);
HsaMemoryProperties to_memory_properties(const xenhsa_mem_bank& wire);
HsaCacheProperties to_cache_properties(const xenhsa_cache& wire);
HsaIoLinkProperties to_io_link_properties(const xenhsa_io_link& wire);

}  // namespace xenhsa::frontend::hsakmt

#endif
