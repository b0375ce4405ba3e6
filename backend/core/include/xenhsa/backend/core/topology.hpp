// The host's nodes as the backend's checks need them (a node that exists, a GPU node, a
// node with local memory: the "host arguments" step of §3.4), and QUERY (§5.2): xenhsa's
// own wire structs from the KfdDevice, read in chunks, sanitised on the way out (XNACK
// off, strings terminated at their last byte).
#ifndef XENHSA_BACKEND_CORE_TOPOLOGY_HPP
#define XENHSA_BACKEND_CORE_TOPOLOGY_HPP

#include <xenhsa/proto/query.h>

#include <array>
#include <cstdint>
#include <xenhsa/backend/core/reply.hpp>
#include <xenhsa/hsa/kfd_device.hpp>

namespace xenhsa::backend::core {

class Topology {
public:
    // `device` may be null (no GPU seam): one answer for VERSION and SYSTEM, no nodes.
    // Reads the system and node properties once.
    explicit Topology(hsa::KfdDevice* device);

    [[nodiscard]] uint32_t num_nodes() const noexcept { return num_nodes_; }
    [[nodiscard]] bool is_node(uint32_t node) const noexcept { return node < num_nodes_; }
    [[nodiscard]] bool is_gpu(uint32_t node) const noexcept {
        return node < num_nodes_ && (gpu_mask_ >> node & 1u) != 0;
    }
    [[nodiscard]] bool has_local_memory(uint32_t node) const noexcept {
        return node < num_nodes_ && (local_mem_mask_ >> node & 1u) != 0;
    }
    // Bit n set for each GPU node n.
    [[nodiscard]] uint64_t gpu_mask() const noexcept { return gpu_mask_; }

    // QUERY steps 6-7 and the answer (the request passed xenhsa_check_query_req and the
    // session is CONNECTED).
    [[nodiscard]] Reply query(const xenhsa_query_req& req, uint32_t seqno) const;

private:
    hsa::KfdDevice* device_;
    xenhsa_system_props system_{};
    uint32_t num_nodes_ = 0;
    uint64_t gpu_mask_ = 0;
    uint64_t local_mem_mask_ = 0;
    std::array<xenhsa_node_props, XENHSA_QUERY_MAX_NODES> nodes_{};
};

}  // namespace xenhsa::backend::core

#endif
