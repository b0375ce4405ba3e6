// hsaKmt* exports that xenhsa does not forward: each answers HSAKMT_STATUS_NOT_SUPPORTED
// and says why once. ROCr 5.2.3 reaches none of them on its default paths (debugger,
// performance counters, SPM, SVM/XNACK, IPC, graphics interop, APU memory policy).
#include "thunk.hpp"

using namespace xenhsa::frontend::hsakmt;

namespace {
constexpr const char* kCounters = "GPU performance counters are not forwarded";
constexpr const char* kSvm = "SVM needs XNACK and migration; xenhsa pins guest memory instead";
constexpr const char* kIpc = "memory is shared between guests' processes only through Xen grants";
constexpr const char* kGraphics = "graphics interop handles do not cross the Xen boundary";
constexpr const char* kVmRw = "another process's GPU memory is not reachable from a guest";
}  // namespace

extern "C" {

HSAKMT_STATUS HSAKMTAPI hsaKmtSetMemoryPolicy(HSAuint32 Node, HSAuint32 DefaultPolicy,
                                              HSAuint32 AlternatePolicy,
                                              void* MemoryAddressAlternate,
                                              HSAuint64 MemorySizeInBytes) {
    (void)Node, (void)DefaultPolicy, (void)AlternatePolicy, (void)MemoryAddressAlternate,
        (void)MemorySizeInBytes;
    XENHSA_REFUSE("hsaKmtSetMemoryPolicy", "memory policies apply to APUs only");
}

HSAKMT_STATUS HSAKMTAPI hsaKmtRegisterGraphicsHandleToNodes(
    HSAuint64 GraphicsResourceHandle, HsaGraphicsResourceInfo* GraphicsResourceInfo,
    HSAuint64 NumberOfNodes, HSAuint32* NodeArray) {
    (void)GraphicsResourceHandle, (void)GraphicsResourceInfo, (void)NumberOfNodes, (void)NodeArray;
    XENHSA_REFUSE("hsaKmtRegisterGraphicsHandleToNodes", kGraphics);
}

HSAKMT_STATUS HSAKMTAPI hsaKmtShareMemory(void* MemoryAddress, HSAuint64 SizeInBytes,
                                          HsaSharedMemoryHandle* SharedMemoryHandle) {
    (void)MemoryAddress, (void)SizeInBytes, (void)SharedMemoryHandle;
    XENHSA_REFUSE("hsaKmtShareMemory", kIpc);
}

HSAKMT_STATUS HSAKMTAPI hsaKmtRegisterSharedHandle(const HsaSharedMemoryHandle* SharedMemoryHandle,
                                                   void** MemoryAddress, HSAuint64* SizeInBytes) {
    (void)SharedMemoryHandle, (void)MemoryAddress, (void)SizeInBytes;
    XENHSA_REFUSE("hsaKmtRegisterSharedHandle", kIpc);
}

HSAKMT_STATUS HSAKMTAPI hsaKmtRegisterSharedHandleToNodes(
    const HsaSharedMemoryHandle* SharedMemoryHandle, void** MemoryAddress, HSAuint64* SizeInBytes,
    HSAuint64 NumberOfNodes, HSAuint32* NodeArray) {
    (void)SharedMemoryHandle, (void)MemoryAddress, (void)SizeInBytes, (void)NumberOfNodes,
        (void)NodeArray;
    XENHSA_REFUSE("hsaKmtRegisterSharedHandleToNodes", kIpc);
}

HSAKMT_STATUS HSAKMTAPI hsaKmtProcessVMRead(HSAuint32 Pid, HsaMemoryRange* LocalMemoryArray,
                                            HSAuint64 LocalMemoryArrayCount,
                                            HsaMemoryRange* RemoteMemoryArray,
                                            HSAuint64 RemoteMemoryArrayCount,
                                            HSAuint64* SizeCopied) {
    (void)Pid, (void)LocalMemoryArray, (void)LocalMemoryArrayCount, (void)RemoteMemoryArray,
        (void)RemoteMemoryArrayCount, (void)SizeCopied;
    XENHSA_REFUSE("hsaKmtProcessVMRead", kVmRw);
}

HSAKMT_STATUS HSAKMTAPI hsaKmtProcessVMWrite(HSAuint32 Pid, HsaMemoryRange* LocalMemoryArray,
                                             HSAuint64 LocalMemoryArrayCount,
                                             HsaMemoryRange* RemoteMemoryArray,
                                             HSAuint64 RemoteMemoryArrayCount,
                                             HSAuint64* SizeCopied) {
    (void)Pid, (void)LocalMemoryArray, (void)LocalMemoryArrayCount, (void)RemoteMemoryArray,
        (void)RemoteMemoryArrayCount, (void)SizeCopied;
    XENHSA_REFUSE("hsaKmtProcessVMWrite", kVmRw);
}

HSAKMT_STATUS HSAKMTAPI hsaKmtMapGraphicHandle(HSAuint32 NodeId, HSAuint64 GraphicDeviceHandle,
                                               HSAuint64 GraphicResourceHandle,
                                               HSAuint64 GraphicResourceOffset,
                                               HSAuint64 GraphicResourceSize,
                                               HSAuint64* FlatMemoryAddress) {
    (void)NodeId, (void)GraphicDeviceHandle, (void)GraphicResourceHandle,
        (void)GraphicResourceOffset, (void)GraphicResourceSize, (void)FlatMemoryAddress;
    XENHSA_REFUSE("hsaKmtMapGraphicHandle", kGraphics);
}

HSAKMT_STATUS HSAKMTAPI hsaKmtUnmapGraphicHandle(HSAuint32 NodeId, HSAuint64 FlatMemoryAddress,
                                                 HSAuint64 SizeInBytes) {
    (void)NodeId, (void)FlatMemoryAddress, (void)SizeInBytes;
    XENHSA_REFUSE("hsaKmtUnmapGraphicHandle", kGraphics);
}

HSAKMT_STATUS HSAKMTAPI hsaKmtDbgRegister(HSAuint32 NodeId) {
    (void)NodeId;
    XENHSA_REFUSE("hsaKmtDbgRegister", kNoDebugger);
}

HSAKMT_STATUS HSAKMTAPI hsaKmtDbgUnregister(HSAuint32 NodeId) {
    (void)NodeId;
    XENHSA_REFUSE("hsaKmtDbgUnregister", kNoDebugger);
}

HSAKMT_STATUS HSAKMTAPI hsaKmtDbgWavefrontControl(HSAuint32 NodeId, HSA_DBG_WAVEOP Operand,
                                                  HSA_DBG_WAVEMODE Mode, HSAuint32 TrapId,
                                                  HsaDbgWaveMessage* DbgWaveMsgRing) {
    (void)NodeId, (void)Operand, (void)Mode, (void)TrapId, (void)DbgWaveMsgRing;
    XENHSA_REFUSE("hsaKmtDbgWavefrontControl", kNoDebugger);
}

HSAKMT_STATUS HSAKMTAPI hsaKmtDbgAddressWatch(HSAuint32 NodeId, HSAuint32 NumWatchPoints,
                                              HSA_DBG_WATCH_MODE WatchMode[], void* WatchAddress[],
                                              HSAuint64 WatchMask[], HsaEvent* WatchEvent[]) {
    (void)NodeId, (void)NumWatchPoints, (void)WatchMode, (void)WatchAddress, (void)WatchMask,
        (void)WatchEvent;
    XENHSA_REFUSE("hsaKmtDbgAddressWatch", kNoDebugger);
}

HSAKMT_STATUS HSAKMTAPI hsaKmtPmcGetCounterProperties(HSAuint32 NodeId,
                                                      HsaCounterProperties** CounterProperties) {
    (void)NodeId, (void)CounterProperties;
    XENHSA_REFUSE("hsaKmtPmcGetCounterProperties", kCounters);
}

HSAKMT_STATUS HSAKMTAPI hsaKmtPmcRegisterTrace(HSAuint32 NodeId, HSAuint32 NumberOfCounters,
                                               HsaCounter* Counters, HsaPmcTraceRoot* TraceRoot) {
    (void)NodeId, (void)NumberOfCounters, (void)Counters, (void)TraceRoot;
    XENHSA_REFUSE("hsaKmtPmcRegisterTrace", kCounters);
}

HSAKMT_STATUS HSAKMTAPI hsaKmtPmcUnregisterTrace(HSAuint32 NodeId, HSATraceId TraceId) {
    (void)NodeId, (void)TraceId;
    XENHSA_REFUSE("hsaKmtPmcUnregisterTrace", kCounters);
}

HSAKMT_STATUS HSAKMTAPI hsaKmtPmcAcquireTraceAccess(HSAuint32 NodeId, HSATraceId TraceId) {
    (void)NodeId, (void)TraceId;
    XENHSA_REFUSE("hsaKmtPmcAcquireTraceAccess", kCounters);
}

HSAKMT_STATUS HSAKMTAPI hsaKmtPmcReleaseTraceAccess(HSAuint32 NodeId, HSATraceId TraceId) {
    (void)NodeId, (void)TraceId;
    XENHSA_REFUSE("hsaKmtPmcReleaseTraceAccess", kCounters);
}

HSAKMT_STATUS HSAKMTAPI hsaKmtPmcStartTrace(HSATraceId TraceId, void* TraceBuffer,
                                            HSAuint64 TraceBufferSizeBytes) {
    (void)TraceId, (void)TraceBuffer, (void)TraceBufferSizeBytes;
    XENHSA_REFUSE("hsaKmtPmcStartTrace", kCounters);
}

HSAKMT_STATUS HSAKMTAPI hsaKmtPmcQueryTrace(HSATraceId TraceId) {
    (void)TraceId;
    XENHSA_REFUSE("hsaKmtPmcQueryTrace", kCounters);
}

HSAKMT_STATUS HSAKMTAPI hsaKmtPmcStopTrace(HSATraceId TraceId) {
    (void)TraceId;
    XENHSA_REFUSE("hsaKmtPmcStopTrace", kCounters);
}

HSAKMT_STATUS HSAKMTAPI hsaKmtSPMAcquire(HSAuint32 PreferredNode) {
    (void)PreferredNode;
    XENHSA_REFUSE("hsaKmtSPMAcquire", kCounters);
}

HSAKMT_STATUS HSAKMTAPI hsaKmtSPMRelease(HSAuint32 PreferredNode) {
    (void)PreferredNode;
    XENHSA_REFUSE("hsaKmtSPMRelease", kCounters);
}

HSAKMT_STATUS HSAKMTAPI hsaKmtSPMSetDestBuffer(HSAuint32 PreferredNode, HSAuint32 SizeInBytes,
                                               HSAuint32* timeout, HSAuint32* SizeCopied,
                                               void* DestMemoryAddress, bool* isSPMDataLoss) {
    (void)PreferredNode, (void)SizeInBytes, (void)timeout, (void)SizeCopied,
        (void)DestMemoryAddress, (void)isSPMDataLoss;
    XENHSA_REFUSE("hsaKmtSPMSetDestBuffer", kCounters);
}

HSAKMT_STATUS HSAKMTAPI hsaKmtSVMSetAttr(void* start_addr, HSAuint64 size, unsigned int nattr,
                                         HSA_SVM_ATTRIBUTE* attrs) {
    (void)start_addr, (void)size, (void)nattr, (void)attrs;
    XENHSA_REFUSE("hsaKmtSVMSetAttr", kSvm);
}

HSAKMT_STATUS HSAKMTAPI hsaKmtSVMGetAttr(void* start_addr, HSAuint64 size, unsigned int nattr,
                                         HSA_SVM_ATTRIBUTE* attrs) {
    (void)start_addr, (void)size, (void)nattr, (void)attrs;
    XENHSA_REFUSE("hsaKmtSVMGetAttr", kSvm);
}

}  // extern "C"
