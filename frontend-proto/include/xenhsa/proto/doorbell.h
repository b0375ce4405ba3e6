/*
 * xenhsa wire protocol v1: the doorbell page.
 *
 * One page the frontend grants (xenstore "doorbell-ref"). Ringing queue q's doorbell means
 * storing the queue's new write index (AQL: the write dispatch id; SDMA: the write byte
 * index) in doorbell[q] with release order, as ROCr stores to a hardware doorbell. The
 * GPU side polls the doorbells of busy queues; when all are idle it sets `kick_requested`
 * and sleeps on the event channel, so the guest notifies the event channel after a
 * doorbell store iff kick_requested is nonzero, read after a full fence
 * (xenhsa_doorbell_ring). The GPU side mirrors it: set kick_requested, full fence,
 * re-check every doorbell, and sleep only if none moved. It still re-checks now and then
 * while it sleeps, so that a frontend that never kicks (unmodified ROCr) is served too,
 * only later (docs/protocol.md section 7).
 */
#ifndef XENHSA_PROTO_DOORBELL_H
#define XENHSA_PROTO_DOORBELL_H

#include "common.h"

#define XENHSA_DOORBELLS_PER_PAGE 504u

struct xenhsa_doorbell_page {
    /* cache line 0: written by the backend */
    uint32_t kick_requested;
    uint32_t pad[15];
    /* written by the frontend */
    uint64_t doorbell[XENHSA_DOORBELLS_PER_PAGE];
};
XENHSA_WIRE_STRUCT(struct xenhsa_doorbell_page, XENHSA_PAGE_SIZE);
XENHSA_FIELD_AT(struct xenhsa_doorbell_page, doorbell, 64);

/* Guest side: ring doorbell `index`; nonzero when the event channel must be notified. */
static inline int xenhsa_doorbell_ring(struct xenhsa_doorbell_page* page, uint32_t index,
                                       uint64_t value) {
    __atomic_store_n(&page->doorbell[index], value, __ATOMIC_RELEASE);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    return __atomic_load_n(&page->kick_requested, __ATOMIC_ACQUIRE) != 0;
}

#endif /* XENHSA_PROTO_DOORBELL_H */
