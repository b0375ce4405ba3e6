// hsaKmt* exports: the topology snapshot QUERY fetched at hsaKmtOpenKFD.
#include <algorithm>

#include "thunk.hpp"

using namespace xenhsa::frontend::hsakmt;

namespace {

template <class T>
HSAKMT_STATUS copy_out(const std::vector<T>& from, HSAuint32 count, T* to) {
    if (count > from.size() || (to == nullptr && count != 0)) {
        return HSAKMT_STATUS_INVALID_PARAMETER;
    }
    std::copy_n(from.begin(), count, to);
    return HSAKMT_STATUS_SUCCESS;
}

}  // namespace

extern "C" {

HSAKMT_STATUS HSAKMTAPI hsaKmtAcquireSystemProperties(HsaSystemProperties* SystemProperties) {
    return call("hsaKmtAcquireSystemProperties", [&](Session& s) {
        if (SystemProperties == nullptr) {
            return HSAKMT_STATUS_INVALID_PARAMETER;
        }
        *SystemProperties = s.topology().system;
        return HSAKMT_STATUS_SUCCESS;
    });
}

// The snapshot lives as long as the session.
HSAKMT_STATUS HSAKMTAPI hsaKmtReleaseSystemProperties(void) {
    return call("hsaKmtReleaseSystemProperties", [](Session&) { return HSAKMT_STATUS_SUCCESS; });
}

HSAKMT_STATUS HSAKMTAPI hsaKmtGetNodeProperties(HSAuint32 NodeId,
                                                HsaNodeProperties* NodeProperties) {
    return call("hsaKmtGetNodeProperties", [&](Session& s) {
        if (NodeProperties == nullptr) {
            return HSAKMT_STATUS_INVALID_PARAMETER;
        }
        if (NodeId >= s.topology().nodes.size()) {
            return HSAKMT_STATUS_INVALID_NODE_UNIT;
        }
        *NodeProperties = s.topology().nodes[NodeId].props;
        return HSAKMT_STATUS_SUCCESS;
    });
}

HSAKMT_STATUS HSAKMTAPI hsaKmtGetNodeMemoryProperties(HSAuint32 NodeId, HSAuint32 NumBanks,
                                                      HsaMemoryProperties* MemoryProperties) {
    return call("hsaKmtGetNodeMemoryProperties", [&](Session& s) {
        if (NodeId >= s.topology().nodes.size()) {
            return HSAKMT_STATUS_INVALID_NODE_UNIT;
        }
        // A CPU node's system heap is what this guest can really have (memory_limits.hpp),
        // not the backend host's RAM.
        std::vector<HsaMemoryProperties> banks = s.topology().nodes[NodeId].banks;
        if (!s.topology().is_gpu(NodeId)) {
            const uint64_t capacity = s.memory().system_capacity();
            for (HsaMemoryProperties& bank : banks) {
                const uint64_t size = bank.SizeInBytes;  // a packed struct: no reference
                if (bank.HeapType == HSA_HEAPTYPE_SYSTEM && size > capacity) {
                    bank.SizeInBytes = capacity;
                }
            }
        }
        return copy_out(banks, NumBanks, MemoryProperties);
    });
}

// The thunk's ProcessorId only selects among CPU cores of an APU; a node's caches are all
// reported.
HSAKMT_STATUS HSAKMTAPI hsaKmtGetNodeCacheProperties(HSAuint32 NodeId, HSAuint32 ProcessorId,
                                                     HSAuint32 NumCaches,
                                                     HsaCacheProperties* CacheProperties) {
    (void)ProcessorId;
    return call("hsaKmtGetNodeCacheProperties", [&](Session& s) {
        if (NodeId >= s.topology().nodes.size()) {
            return HSAKMT_STATUS_INVALID_NODE_UNIT;
        }
        return copy_out(s.topology().nodes[NodeId].caches, NumCaches, CacheProperties);
    });
}

HSAKMT_STATUS HSAKMTAPI hsaKmtGetNodeIoLinkProperties(HSAuint32 NodeId, HSAuint32 NumIoLinks,
                                                      HsaIoLinkProperties* IoLinkProperties) {
    return call("hsaKmtGetNodeIoLinkProperties", [&](Session& s) {
        if (NodeId >= s.topology().nodes.size()) {
            return HSAKMT_STATUS_INVALID_NODE_UNIT;
        }
        return copy_out(s.topology().nodes[NodeId].links, NumIoLinks, IoLinkProperties);
    });
}

}  // extern "C"
