// What ROCm 6's thunk (Debian 13's libhsakmt1 6.2.4, same soname and version node) adds to
// the ABI of Debian 12's hsakmt.h, which this library is built against: the functions
// ROCr 6.x imports, and the struct fields 6.x gave names to in what 5.2.3 had reserved.
// One library serves both: ROCr 5.2.3 never reads the new fields nor calls the new
// functions.
#ifndef XENHSA_FRONTEND_HSAKMT_ROCM6_HPP
#define XENHSA_FRONTEND_HSAKMT_ROCM6_HPP

#include <hsakmt.h>

#include <cstdint>
#include <cstring>

extern "C" {

typedef void* HsaAMDGPUDeviceHandle;  // NOLINT(modernize-use-using): the thunk's C name
struct kfd_ioctl_dbg_trap_args;

HSAKMT_STATUS HSAKMTAPI hsaKmtAvailableMemory(HSAuint32 Node, HSAuint64* AvailableBytes);
HSAKMT_STATUS HSAKMTAPI hsaKmtAllocMemoryAlign(HSAuint32 PreferredNode, HSAuint64 SizeInBytes,
                                               HSAuint64 Alignment, HsaMemFlags MemFlags,
                                               void** MemoryAddress);
HSAKMT_STATUS HSAKMTAPI hsaKmtWaitOnEvent_Ext(HsaEvent* Event, HSAuint32 Milliseconds,
                                              uint64_t* event_age);
HSAKMT_STATUS HSAKMTAPI hsaKmtWaitOnMultipleEvents_Ext(HsaEvent* Events[], HSAuint32 NumEvents,
                                                       bool WaitOnAll, HSAuint32 Milliseconds,
                                                       uint64_t* event_age);
HSAKMT_STATUS HSAKMTAPI hsaKmtGetAMDGPUDeviceHandle(HSAuint32 NodeId,
                                                    HsaAMDGPUDeviceHandle* DeviceHandle);
HSAKMT_STATUS HSAKMTAPI hsaKmtGetRuntimeCapabilities(HSAuint32* caps_mask);
HSAKMT_STATUS HSAKMTAPI hsaKmtCheckRuntimeDebugSupport(void);
HSAKMT_STATUS HSAKMTAPI hsaKmtDebugTrapIoctl(struct kfd_ioctl_dbg_trap_args* arg,
                                             HSA_QUEUEID* Queues, HSAuint64* DebugReturn);
HSAKMT_STATUS HSAKMTAPI hsaKmtDbgEnable(void** runtime_info, HSAuint32* data_size);
HSAKMT_STATUS HSAKMTAPI hsaKmtDbgDisable(void);
HSAKMT_STATUS HSAKMTAPI hsaKmtDbgGetDeviceData(void** data, HSAuint32* n_entries,
                                               HSAuint32* entry_size);
HSAKMT_STATUS HSAKMTAPI hsaKmtDbgGetQueueData(void** data, HSAuint32* n_entries,
                                              HSAuint32* entry_size, bool suspend_queues);
HSAKMT_STATUS HSAKMTAPI hsaKmtExportDMABufHandle(void* MemoryAddress, HSAuint64 MemorySizeInBytes,
                                                 int* DMABufFd, HSAuint64* Offset);
HSAKMT_STATUS HSAKMTAPI hsaKmtOpenSMI(HSAuint32 NodeId, int* fd);
HSAKMT_STATUS HSAKMTAPI hsaKmtReplaceAsanHeaderPage(void* addr);
HSAKMT_STATUS HSAKMTAPI hsaKmtReturnAsanHeaderPage(void* addr);
HSAKMT_STATUS HSAKMTAPI hsaKmtPcSamplingSupport(void);
HSAKMT_STATUS HSAKMTAPI hsaKmtPcSamplingQueryCapabilities(HSAuint32 NodeId, void* sample_info,
                                                          HSAuint32 sample_info_sz,
                                                          HSAuint32* sz_needed);
// sample_info: the thunk's HsaPcSamplingInfo, never read here.
HSAKMT_STATUS HSAKMTAPI hsaKmtPcSamplingCreate(HSAuint32 node_id, void* sample_info,
                                               HSAuint32* traceId);
HSAKMT_STATUS HSAKMTAPI hsaKmtPcSamplingDestroy(HSAuint32 NodeId, HSAuint32 traceId);
HSAKMT_STATUS HSAKMTAPI hsaKmtPcSamplingStart(HSAuint32 NodeId, HSAuint32 traceId);
HSAKMT_STATUS HSAKMTAPI hsaKmtPcSamplingStop(HSAuint32 NodeId, HSAuint32 traceId);

}  // extern "C"

namespace xenhsa::frontend::hsakmt::rocm6 {

// HsaNodeProperties.Reserved[12] of 5.2.3, as 6.x names it.
struct NodeTail {
    uint32_t num_xcc = 0;     // NumXcc: ROCr 6 divides shader engines by it
    uint32_t kfd_gpu_id = 0;  // KFDGpuID: ROCr 6 files agents under it; 0 is the CPU's
    uint32_t family_id = 0;   // FamilyID: the amdgpu family (AMDGPU_FAMILY_*)
};
static_assert(sizeof(HsaNodeProperties::Reserved) == sizeof(NodeTail));

inline void set_tail(HsaNodeProperties& p, const NodeTail& tail) noexcept {
    std::memcpy(static_cast<void*>(p.Reserved), &tail, sizeof tail);
}
inline NodeTail tail(const HsaNodeProperties& p) noexcept {
    NodeTail t;
    std::memcpy(&t, static_cast<const void*>(p.Reserved), sizeof t);
    return t;
}

// HsaMemFlags bits 6.x took from 5.2.3's Reserved (which starts at bit 18).
inline constexpr uint32_t kMemNoAddress = 1u << 18;    // a handle, no address
inline constexpr uint32_t kMemOnlyAddress = 1u << 19;  // an address, no memory

// The amdgpu family of a GFX major version (libdrm's AMDGPU_FAMILY_*), for FamilyID.
constexpr uint32_t family_of_gfx(uint32_t major) noexcept {
    switch (major) {
        case 7:
            return 120;  // CI
        case 8:
            return 130;  // VI
        case 9:
            return 141;  // AI
        case 10:
            return 143;  // NV
        case 11:
            return 145;  // GC_11_0_0
        case 12:
            return 152;  // GC_12_0_0
        default:
            return 0;
    }
}

// The KFD interface this library implements, whatever the backend's KFD says: ROCr 6
// turns features on by the minor version, and the library has 1.9 (available memory) but
// not 1.12 (dma-buf export), 1.13 (the debugger API), 1.14 (event ages: ROCr 6 then
// passes age 0, the KFD's "no age" of every older interface) or 1.15 (the GEM VA API).
inline constexpr uint32_t kKfdMinorMax = 11;

}  // namespace xenhsa::frontend::hsakmt::rocm6

#endif
