// hsaKmt* exports: queues.
#include "thunk.hpp"

using namespace xenhsa::frontend::hsakmt;

extern "C" {

HSAKMT_STATUS HSAKMTAPI hsaKmtCreateQueue(HSAuint32 NodeId, HSA_QUEUE_TYPE Type,
                                          HSAuint32 QueuePercentage, HSA_QUEUE_PRIORITY Priority,
                                          void* QueueAddress, HSAuint64 QueueSizeInBytes,
                                          HsaEvent* Event, HsaQueueResource* QueueResource) {
    return call("hsaKmtCreateQueue", [&](Session& s) {
        if (QueueResource == nullptr || QueueAddress == nullptr) {
            return HSAKMT_STATUS_INVALID_PARAMETER;
        }
        if (!s.topology().is_gpu(NodeId)) {
            return HSAKMT_STATUS_INVALID_NODE_UNIT;
        }
        QueueSpec spec;
        spec.node = NodeId;
        spec.type = Type;
        spec.percentage = QueuePercentage;
        spec.priority = Priority;
        spec.ring = reinterpret_cast<uintptr_t>(QueueAddress);
        spec.ring_size = QueueSizeInBytes;
        spec.event = Event;
        return to_status(s.queues().create(spec, *QueueResource));
    });
}

HSAKMT_STATUS HSAKMTAPI hsaKmtDestroyQueue(HSA_QUEUEID QueueId) {
    return call("hsaKmtDestroyQueue",
                [&](Session& s) { return released(s, s.queues().destroy(QueueId)); });
}

HSAKMT_STATUS HSAKMTAPI hsaKmtUpdateQueue(HSA_QUEUEID QueueId, HSAuint32 QueuePercentage,
                                          HSA_QUEUE_PRIORITY Priority, void* QueueAddress,
                                          HSAuint64 QueueSize, HsaEvent* Event) {
    (void)Priority;
    (void)QueueAddress;
    (void)QueueSize;
    (void)Event;
    return call("hsaKmtUpdateQueue", [&](Session& s) {
        if (QueuePercentage == 0) {
            if (auto suspended = s.queues().suspend(QueueId);
                suspended || suspended.error() != std::errc::not_supported) {
                return to_status(suspended);
            }
        }
        return refuse("hsaKmtUpdateQueue",
                      "the protocol has no command to suspend a running queue or change its "
                      "priority");
    });
}

HSAKMT_STATUS HSAKMTAPI hsaKmtSetQueueCUMask(HSA_QUEUEID QueueId, HSAuint32 CUMaskCount,
                                             HSAuint32* QueueCUMask) {
    (void)QueueId;
    (void)CUMaskCount;
    (void)QueueCUMask;
    return call("hsaKmtSetQueueCUMask", [&](Session&) {
        return refuse("hsaKmtSetQueueCUMask", "CU masks are not forwarded");
    });
}

HSAKMT_STATUS HSAKMTAPI hsaKmtAllocQueueGWS(HSA_QUEUEID QueueId, HSAuint32 nGWS,
                                            HSAuint32* firstGWS) {
    (void)QueueId;
    (void)nGWS;
    (void)firstGWS;
    return call("hsaKmtAllocQueueGWS", [&](Session&) {
        return refuse("hsaKmtAllocQueueGWS",
                      "global wave sync (cooperative queues) is not forwarded");
    });
}

HSAKMT_STATUS HSAKMTAPI hsaKmtGetQueueInfo(HSA_QUEUEID QueueId, HsaQueueInfo* QueueInfo) {
    (void)QueueId;
    (void)QueueInfo;
    return call("hsaKmtGetQueueInfo",
                [&](Session&) { return refuse("hsaKmtGetQueueInfo", kNoDebugger); });
}

}  // extern "C"
