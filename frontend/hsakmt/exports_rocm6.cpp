// hsaKmt* exports that ROCm 6's thunk added (rocm6.hpp) and xenhsa does not forward: each
// answers HSAKMT_STATUS_NOT_SUPPORTED, as the thunk does on a KFD without the feature, and
// says why once. ROCr 6 reaches none of them on its default paths.
#include "rocm6.hpp"
#include "thunk.hpp"

using namespace xenhsa::frontend::hsakmt;

namespace {
constexpr const char* kDmaBuf =
    "a dma-buf of the backend's GPU memory cannot cross the Xen boundary";
constexpr const char* kSmi = "the backend's GPU system-management events are not a guest's";
constexpr const char* kAsan = "this library is not ROCm's ASan build";
constexpr const char* kSampling = "GPU PC sampling is not forwarded";
}  // namespace

extern "C" {

// No debugger, no core dumps (ROCr 6 asks at start).
HSAKMT_STATUS HSAKMTAPI hsaKmtGetRuntimeCapabilities(HSAuint32* caps_mask) {
    return call("hsaKmtGetRuntimeCapabilities", [&](Session&) {
        if (caps_mask == nullptr) {
            return HSAKMT_STATUS_INVALID_PARAMETER;
        }
        *caps_mask = 0;
        return HSAKMT_STATUS_SUCCESS;
    });
}

HSAKMT_STATUS HSAKMTAPI hsaKmtCheckRuntimeDebugSupport(void) {
    XENHSA_REFUSE("hsaKmtCheckRuntimeDebugSupport", kNoDebugger);
}

HSAKMT_STATUS HSAKMTAPI hsaKmtDebugTrapIoctl(struct kfd_ioctl_dbg_trap_args* arg,
                                             HSA_QUEUEID* Queues, HSAuint64* DebugReturn) {
    (void)arg, (void)Queues, (void)DebugReturn;
    XENHSA_REFUSE("hsaKmtDebugTrapIoctl", kNoDebugger);
}

HSAKMT_STATUS HSAKMTAPI hsaKmtDbgEnable(void** runtime_info, HSAuint32* data_size) {
    (void)runtime_info, (void)data_size;
    XENHSA_REFUSE("hsaKmtDbgEnable", kNoDebugger);
}

HSAKMT_STATUS HSAKMTAPI hsaKmtDbgDisable(void) { XENHSA_REFUSE("hsaKmtDbgDisable", kNoDebugger); }

HSAKMT_STATUS HSAKMTAPI hsaKmtDbgGetDeviceData(void** data, HSAuint32* n_entries,
                                               HSAuint32* entry_size) {
    (void)data, (void)n_entries, (void)entry_size;
    XENHSA_REFUSE("hsaKmtDbgGetDeviceData", kNoDebugger);
}

HSAKMT_STATUS HSAKMTAPI hsaKmtDbgGetQueueData(void** data, HSAuint32* n_entries,
                                              HSAuint32* entry_size, bool suspend_queues) {
    (void)data, (void)n_entries, (void)entry_size, (void)suspend_queues;
    XENHSA_REFUSE("hsaKmtDbgGetQueueData", kNoDebugger);
}

HSAKMT_STATUS HSAKMTAPI hsaKmtExportDMABufHandle(void* MemoryAddress, HSAuint64 MemorySizeInBytes,
                                                 int* DMABufFd, HSAuint64* Offset) {
    (void)MemoryAddress, (void)MemorySizeInBytes, (void)DMABufFd, (void)Offset;
    XENHSA_REFUSE("hsaKmtExportDMABufHandle", kDmaBuf);
}

HSAKMT_STATUS HSAKMTAPI hsaKmtOpenSMI(HSAuint32 NodeId, int* fd) {
    (void)NodeId, (void)fd;
    XENHSA_REFUSE("hsaKmtOpenSMI", kSmi);
}

HSAKMT_STATUS HSAKMTAPI hsaKmtReplaceAsanHeaderPage(void* addr) {
    (void)addr;
    XENHSA_REFUSE("hsaKmtReplaceAsanHeaderPage", kAsan);
}

HSAKMT_STATUS HSAKMTAPI hsaKmtReturnAsanHeaderPage(void* addr) {
    (void)addr;
    XENHSA_REFUSE("hsaKmtReturnAsanHeaderPage", kAsan);
}

HSAKMT_STATUS HSAKMTAPI hsaKmtPcSamplingSupport(void) {
    XENHSA_REFUSE("hsaKmtPcSamplingSupport", kSampling);
}

HSAKMT_STATUS HSAKMTAPI hsaKmtPcSamplingQueryCapabilities(HSAuint32 NodeId, void* sample_info,
                                                          HSAuint32 sample_info_sz,
                                                          HSAuint32* sz_needed) {
    (void)NodeId, (void)sample_info, (void)sample_info_sz, (void)sz_needed;
    XENHSA_REFUSE("hsaKmtPcSamplingQueryCapabilities", kSampling);
}

HSAKMT_STATUS HSAKMTAPI hsaKmtPcSamplingCreate(HSAuint32 node_id, void* sample_info,
                                               HSAuint32* traceId) {
    (void)node_id, (void)sample_info, (void)traceId;
    XENHSA_REFUSE("hsaKmtPcSamplingCreate", kSampling);
}

HSAKMT_STATUS HSAKMTAPI hsaKmtPcSamplingDestroy(HSAuint32 NodeId, HSAuint32 traceId) {
    (void)NodeId, (void)traceId;
    XENHSA_REFUSE("hsaKmtPcSamplingDestroy", kSampling);
}

HSAKMT_STATUS HSAKMTAPI hsaKmtPcSamplingStart(HSAuint32 NodeId, HSAuint32 traceId) {
    (void)NodeId, (void)traceId;
    XENHSA_REFUSE("hsaKmtPcSamplingStart", kSampling);
}

HSAKMT_STATUS HSAKMTAPI hsaKmtPcSamplingStop(HSAuint32 NodeId, HSAuint32 traceId) {
    (void)NodeId, (void)traceId;
    XENHSA_REFUSE("hsaKmtPcSamplingStop", kSampling);
}

}  // extern "C"
