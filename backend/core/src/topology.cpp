#include <algorithm>
#include <cstring>
#include <xenhsa/backend/core/seam_status.hpp>
#include <xenhsa/backend/core/topology.hpp>

namespace xenhsa::backend::core {
namespace {

template <std::size_t N>
void terminate_string(uint8_t (&text)[N]) noexcept {
    text[N - 1] = 0;
}

// Chunk [offset, offset + chunk) of `result` (step 7 and the answer).
template <class Wire>
Reply chunk_of(const Wire& result, const xenhsa_query_req& req, uint32_t seqno) {
    constexpr uint32_t total = sizeof(Wire);
    if (req.offset != 0 && req.offset >= total) {
        return make_reply(XENHSA_CMD_QUERY, seqno, XENHSA_STATUS_BAD_ARGUMENT);
    }
    xenhsa_query_rsp rsp{};
    rsp.total_len = total;
    rsp.chunk_len = std::min<uint32_t>(XENHSA_QUERY_CHUNK_MAX, total - req.offset);
    std::memcpy(rsp.data, reinterpret_cast<const uint8_t*>(&result) + req.offset, rsp.chunk_len);
    return make_reply(XENHSA_CMD_QUERY, seqno, XENHSA_STATUS_OK, rsp);
}

template <class Wire>
Reply answer(const hsa::Result<Wire>& result, const xenhsa_query_req& req, uint32_t seqno) {
    if (!result) {
        return make_reply(XENHSA_CMD_QUERY, seqno, seam_status(Seam::gpu, result.error()));
    }
    return chunk_of(result.value(), req, seqno);
}

// Since Linux 5.14 a dGPU's node says local_mem_size 0: its memory is in its banks.
bool has_frame_buffer(hsa::KfdDevice& device, uint32_t node, const xenhsa_node_props& props) {
    for (uint32_t i = 0; i < props.num_memory_banks; ++i) {
        auto bank = device.mem_bank(node, i);
        if (bank && bank.value().size_bytes != 0 &&
            (bank.value().heap_type == XENHSA_HEAP_FB_PRIVATE ||
             bank.value().heap_type == XENHSA_HEAP_FB_PUBLIC)) {
            return true;
        }
    }
    return false;
}

}  // namespace

Topology::Topology(hsa::KfdDevice* device) : device_(device) {
    if (device_ == nullptr) {
        return;
    }
    auto system = device_->system();
    if (!system) {
        return;
    }
    system_ = system.value();
    system_.xnack_enabled = 0;
    num_nodes_ = std::min<uint32_t>(system_.num_nodes, XENHSA_QUERY_MAX_NODES);
    for (uint32_t n = 0; n < num_nodes_; ++n) {
        auto props = device_->node(n);
        if (!props) {
            continue;  // an unreadable node is neither GPU nor memory; QUERY reports the error
        }
        nodes_[n] = props.value();
        // KFD's convention: CPU-only nodes have no SIMDs.
        if (nodes_[n].num_fcompute_cores != 0) {
            gpu_mask_ |= uint64_t{1} << n;
        }
        if (nodes_[n].local_mem_size != 0 || has_frame_buffer(*device_, n, nodes_[n])) {
            local_mem_mask_ |= uint64_t{1} << n;
        }
    }
}

Reply Topology::query(const xenhsa_query_req& req, uint32_t seqno) const {
    const auto bad = [&] {
        return make_reply(XENHSA_CMD_QUERY, seqno, XENHSA_STATUS_BAD_ARGUMENT);
    };
    switch (req.kind) {
        case XENHSA_QUERY_VERSION: {
            xenhsa_version_info info{};
            if (device_ != nullptr) {
                auto v = device_->version();
                if (!v) {
                    return make_reply(XENHSA_CMD_QUERY, seqno, seam_status(Seam::gpu, v.error()));
                }
                info = v.value();
            }
            info.proto_version = XENHSA_PROTO_VERSION;
            return chunk_of(info, req, seqno);
        }
        case XENHSA_QUERY_SYSTEM: {
            xenhsa_system_props props = system_;
            props.num_nodes = num_nodes_;
            props.xnack_enabled = 0;
            return chunk_of(props, req, seqno);
        }
        case XENHSA_QUERY_KERNEL: {
            if (device_ == nullptr || req.index >= system_.num_kernels) {
                return bad();
            }
            auto k = device_->kernel(req.index);
            if (k) {
                terminate_string(k.value().name);
            }
            return answer(k, req, seqno);
        }
        default:
            break;
    }
    if (device_ == nullptr || !is_node(req.node)) {
        return bad();
    }
    const xenhsa_node_props& node = nodes_[req.node];
    switch (req.kind) {
        case XENHSA_QUERY_NODE: {
            auto props = device_->node(req.node);
            if (props) {
                terminate_string(props.value().marketing_name);
                terminate_string(props.value().amd_name);
            }
            return answer(props, req, seqno);
        }
        case XENHSA_QUERY_MEM_BANK:
            return req.index < node.num_memory_banks
                       ? answer(device_->mem_bank(req.node, req.index), req, seqno)
                       : bad();
        case XENHSA_QUERY_CACHE:
            return req.index < node.num_caches
                       ? answer(device_->cache(req.node, req.index), req, seqno)
                       : bad();
        case XENHSA_QUERY_IO_LINK:
            return req.index < node.num_io_links
                       ? answer(device_->io_link(req.node, req.index), req, seqno)
                       : bad();
        case XENHSA_QUERY_CLOCK:
            return answer(device_->clock(req.node), req, seqno);
        case XENHSA_QUERY_TILE_CONFIG:
            return answer(device_->tile_config(req.node), req, seqno);
        default:
            return bad();
    }
}

}  // namespace xenhsa::backend::core
