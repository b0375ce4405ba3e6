// hsaKmt* exports: memory (Memory keeps the records; what it allocates sits in the xenhsa
// window, where the GPU address is the guest's own; registered user memory has the
// window's VA as its GPU address, AlternateVAGPU).
#include <span>

#include "rocm6.hpp"
#include "thunk.hpp"

using namespace xenhsa::frontend::hsakmt;

namespace {

uint64_t va_of(const void* p) { return reinterpret_cast<uintptr_t>(p); }

HSAKMT_STATUS map(Session& s, void* MemoryAddress, HSAuint64 Size, HSAuint64* AlternateVAGPU,
                  std::span<const uint32_t> nodes) {
    if (MemoryAddress == nullptr) {
        return HSAKMT_STATUS_INVALID_PARAMETER;
    }
    auto gpu_va = s.memory().map_to_gpu(va_of(MemoryAddress), Size, nodes);
    if (!gpu_va) {
        return to_status(gpu_va.error());
    }
    if (AlternateVAGPU != nullptr) {
        *AlternateVAGPU = gpu_va.value();
    }
    return HSAKMT_STATUS_SUCCESS;
}

HSAKMT_STATUS alloc(Session& s, HSAuint32 node, HSAuint64 size, HSAuint64 align, HsaMemFlags flags,
                    void** address) {
    if (address == nullptr) {
        return HSAKMT_STATUS_INVALID_PARAMETER;
    }
    std::optional<uint64_t> fixed;
    if (flags.ui32.FixedAddress != 0) {
        fixed = va_of(*address);
    }
    auto va = s.memory().alloc(node, size, flags, fixed, align);
    if (!va) {
        return to_status(va.error());
    }
    *address = reinterpret_cast<void*>(static_cast<uintptr_t>(va.value()));
    return HSAKMT_STATUS_SUCCESS;
}

}  // namespace

extern "C" {

HSAKMT_STATUS HSAKMTAPI hsaKmtAllocMemory(HSAuint32 PreferredNode, HSAuint64 SizeInBytes,
                                          HsaMemFlags MemFlags, void** MemoryAddress) {
    return call("hsaKmtAllocMemory", [&](Session& s) {
        return alloc(s, PreferredNode, SizeInBytes, 0, MemFlags, MemoryAddress);
    });
}

HSAKMT_STATUS HSAKMTAPI hsaKmtAllocMemoryAlign(HSAuint32 PreferredNode, HSAuint64 SizeInBytes,
                                               HSAuint64 Alignment, HsaMemFlags MemFlags,
                                               void** MemoryAddress) {
    return call("hsaKmtAllocMemoryAlign", [&](Session& s) {
        return alloc(s, PreferredNode, SizeInBytes, Alignment, MemFlags, MemoryAddress);
    });
}

HSAKMT_STATUS HSAKMTAPI hsaKmtAvailableMemory(HSAuint32 Node, HSAuint64* AvailableBytes) {
    return call("hsaKmtAvailableMemory", [&](Session& s) {
        if (AvailableBytes == nullptr) {
            return HSAKMT_STATUS_INVALID_PARAMETER;
        }
        auto bytes = s.memory().available(Node);
        if (!bytes) {
            return HSAKMT_STATUS_INVALID_NODE_UNIT;
        }
        *AvailableBytes = bytes.value();
        return HSAKMT_STATUS_SUCCESS;
    });
}

HSAKMT_STATUS HSAKMTAPI hsaKmtFreeMemory(void* MemoryAddress, HSAuint64 SizeInBytes) {
    (void)SizeInBytes;  // the allocation is named by its address, as in the thunk
    return call("hsaKmtFreeMemory",
                [&](Session& s) { return released(s, s.memory().free(va_of(MemoryAddress))); });
}

HSAKMT_STATUS HSAKMTAPI hsaKmtRegisterMemory(void* MemoryAddress, HSAuint64 MemorySizeInBytes) {
    return call("hsaKmtRegisterMemory", [&](Session& s) {
        return to_status(s.memory().register_user(va_of(MemoryAddress), MemorySizeInBytes));
    });
}

HSAKMT_STATUS HSAKMTAPI hsaKmtRegisterMemoryToNodes(void* MemoryAddress,
                                                    HSAuint64 MemorySizeInBytes,
                                                    HSAuint64 NumberOfNodes, HSAuint32* NodeArray) {
    (void)NumberOfNodes;
    (void)NodeArray;
    return call("hsaKmtRegisterMemoryToNodes", [&](Session& s) {
        return to_status(s.memory().register_user(va_of(MemoryAddress), MemorySizeInBytes));
    });
}

HSAKMT_STATUS HSAKMTAPI hsaKmtRegisterMemoryWithFlags(void* MemoryAddress,
                                                      HSAuint64 MemorySizeInBytes,
                                                      HsaMemFlags MemFlags) {
    (void)MemFlags;
    return call("hsaKmtRegisterMemoryWithFlags", [&](Session& s) {
        return to_status(s.memory().register_user(va_of(MemoryAddress), MemorySizeInBytes));
    });
}

HSAKMT_STATUS HSAKMTAPI hsaKmtDeregisterMemory(void* MemoryAddress) {
    return call("hsaKmtDeregisterMemory", [&](Session& s) {
        return released(s, s.memory().deregister_user(va_of(MemoryAddress)));
    });
}

HSAKMT_STATUS HSAKMTAPI hsaKmtMapMemoryToGPU(void* MemoryAddress, HSAuint64 MemorySizeInBytes,
                                             HSAuint64* AlternateVAGPU) {
    return call("hsaKmtMapMemoryToGPU", [&](Session& s) {
        return map(s, MemoryAddress, MemorySizeInBytes, AlternateVAGPU, {});
    });
}

HSAKMT_STATUS HSAKMTAPI hsaKmtMapMemoryToGPUNodes(void* MemoryAddress, HSAuint64 MemorySizeInBytes,
                                                  HSAuint64* AlternateVAGPU,
                                                  HsaMemMapFlags MemMapFlags,
                                                  HSAuint64 NumberOfNodes, HSAuint32* NodeArray) {
    (void)MemMapFlags;
    return call("hsaKmtMapMemoryToGPUNodes", [&](Session& s) {
        if (NumberOfNodes > 64 || (NumberOfNodes != 0 && NodeArray == nullptr)) {
            return HSAKMT_STATUS_INVALID_PARAMETER;
        }
        return map(s, MemoryAddress, MemorySizeInBytes, AlternateVAGPU,
                   std::span<const uint32_t>(NodeArray, NumberOfNodes));
    });
}

HSAKMT_STATUS HSAKMTAPI hsaKmtUnmapMemoryToGPU(void* MemoryAddress) {
    return call("hsaKmtUnmapMemoryToGPU", [&](Session& s) {
        return released(s, s.memory().unmap_from_gpu(va_of(MemoryAddress)));
    });
}

HSAKMT_STATUS HSAKMTAPI hsaKmtQueryPointerInfo(const void* Pointer, HsaPointerInfo* PointerInfo) {
    return call("hsaKmtQueryPointerInfo", [&](Session& s) {
        if (PointerInfo == nullptr) {
            return HSAKMT_STATUS_INVALID_PARAMETER;
        }
        auto info = s.memory().pointer_info(va_of(Pointer));
        if (!info) {
            // Not ours: the thunk's answer for memory it does not know.
            *PointerInfo = HsaPointerInfo{};
            PointerInfo->Type = HSA_POINTER_UNKNOWN;
            return HSAKMT_STATUS_ERROR;
        }
        *PointerInfo = info.value();
        return HSAKMT_STATUS_SUCCESS;
    });
}

HSAKMT_STATUS HSAKMTAPI hsaKmtSetMemoryUserData(const void* Pointer, void* UserData) {
    return call("hsaKmtSetMemoryUserData", [&](Session& s) {
        return to_status(s.memory().set_user_data(va_of(Pointer), UserData));
    });
}

}  // extern "C"
