/*
 * xenhsa wire protocol v1: the notify page, backend -> frontend notifications.
 *
 * One page the frontend grants (xenstore "notify-ref"). The backend produces fixed-size
 * records, the frontend consumes them; the event channel is shared with the ring. The
 * backend keeps its producer index privately and never trusts `cons`: a `cons` that is
 * ahead of the producer or more than XENHSA_NOTIFY_SLOTS behind counts as "full". While
 * full, notifications wait in the backend. Nothing is ever dropped: each handle produces
 * at most one notification (a LEND is revoked once, a queue stops once), so that private
 * queue is bounded by the guest's handle quota.
 *
 * The guest acknowledges REVOKED with UNMAP of the LEND handle, after unmapping the
 * pages on its side; until then the handle exists and requests naming the range get
 * XENHSA_STATUS_REVOKED.
 */
#ifndef XENHSA_PROTO_NOTIFY_H
#define XENHSA_PROTO_NOTIFY_H

#include "common.h"

enum xenhsa_notify_type {
    /* The backend took a lent buffer back: handle, va, npages. The guest's mapping of
       it is gone or going; its next access faults. */
    XENHSA_NOTIFY_REVOKED = 1,
    /* A GPU page fault stopped a queue: handle = queue, arg0 = faulting address; or the
       queue hung (arg1 XENHSA_GPU_FAULT_HANG, arg0 0: an SDMA engine on a packet it cannot
       decode, which a GPU's reset recovers); or the backend destroyed it (arg0 0). */
    XENHSA_NOTIFY_GPU_FAULT = 2,
    XENHSA_NOTIFY_TYPE_COUNT_ = 3
};

struct xenhsa_notify {
    uint32_t type; /* enum xenhsa_notify_type */
    uint32_t pad;
    uint64_t handle;
    uint64_t arg0; /* REVOKED: va */
    uint64_t arg1; /* REVOKED: npages; GPU_FAULT: XENHSA_GPU_FAULT_HANG or 0 */
};
XENHSA_WIRE_STRUCT(struct xenhsa_notify, 32);

#define XENHSA_GPU_FAULT_HANG 1u /* GPU_FAULT arg1: the queue hung, no fault address */

#define XENHSA_NOTIFY_SLOTS 64u

struct xenhsa_notify_page {
    /* cache line 0: written by the backend */
    uint32_t prod;
    uint32_t pad0;
    uint32_t be_pad[14];
    /* cache line 1: written by the frontend */
    uint32_t cons;
    uint32_t fe_pad[15];
    struct xenhsa_notify slot[XENHSA_NOTIFY_SLOTS];
    uint8_t reserved[XENHSA_PAGE_SIZE - 128u - XENHSA_NOTIFY_SLOTS * 32u];
};
XENHSA_WIRE_STRUCT(struct xenhsa_notify_page, XENHSA_PAGE_SIZE);
XENHSA_FIELD_AT(struct xenhsa_notify_page, prod, 0);
XENHSA_FIELD_AT(struct xenhsa_notify_page, cons, 64);
XENHSA_FIELD_AT(struct xenhsa_notify_page, slot, 128);

#endif /* XENHSA_PROTO_NOTIFY_H */
