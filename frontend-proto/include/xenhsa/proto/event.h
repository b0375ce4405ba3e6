/*
 * xenhsa wire protocol v1: HSA events.
 *
 * EVENT_WAIT is answered asynchronously: the backend consumes it, keeps serving the ring,
 * and responds when an event fires (OK), the timeout passes (TIMEOUT), or the frontend
 * sends EVENT_WAIT_CANCEL naming the wait's seqno (CANCELLED; the cancel itself gets OK,
 * or BAD_ARGUMENT when no such wait is pending). A pending wait holds its ring credit, so
 * at most ring_slots - 1 waits may pend (QUOTA beyond): a cancel always finds a slot.
 * Seqnos must be unique among a frontend's outstanding requests; an EVENT_WAIT whose
 * seqno equals a pending wait's gets BAD_ARGUMENT.
 */
#ifndef XENHSA_PROTO_EVENT_H
#define XENHSA_PROTO_EVENT_H

#include "common.h"

/* Values of HSA_EVENTTYPE that a guest may create. */
enum xenhsa_event_type {
    XENHSA_EVENT_SIGNAL = 0,
    XENHSA_EVENT_NODECHANGE = 1,
    XENHSA_EVENT_DEVICESTATECHANGE = 2,
    XENHSA_EVENT_HW_EXCEPTION = 3,
    XENHSA_EVENT_SYSTEM_EVENT = 4,
    XENHSA_EVENT_DEBUG_EVENT = 5,
    XENHSA_EVENT_PROFILE_EVENT = 6,
    XENHSA_EVENT_QUEUE_EVENT = 7,
    XENHSA_EVENT_MEMORY = 8,
    XENHSA_EVENT_TYPE_COUNT_ = 9
};

#define XENHSA_EVENT_MANUAL_RESET (1u << 0)
#define XENHSA_EVENT_SIGNALED (1u << 1)
#define XENHSA_EVENT_FLAGS_ALL (XENHSA_EVENT_MANUAL_RESET | XENHSA_EVENT_SIGNALED)

struct xenhsa_event_create_req {
    uint32_t type; /* enum xenhsa_event_type */
    uint32_t node;
    uint32_t flags;
    uint32_t pad;
};
XENHSA_WIRE_STRUCT(struct xenhsa_event_create_req, 16);

struct xenhsa_event_create_rsp {
    uint64_t handle;
    uint32_t event_id; /* for amd_signal_t.event_id */
    uint32_t pad;
    uint64_t mailbox_va; /* for amd_signal_t.event_mailbox_ptr; 0 when none; never outside
                            the guest's window (no backend address reaches a guest) */
};
XENHSA_WIRE_STRUCT(struct xenhsa_event_create_rsp, 24);
/* EVENT_DESTROY, EVENT_SET and EVENT_RESET take struct xenhsa_handle_req. */

#define XENHSA_WAIT_MAX_EVENTS 16u
#define XENHSA_WAIT_ALL (1u << 0)
#define XENHSA_WAIT_FLAGS_ALL XENHSA_WAIT_ALL
#define XENHSA_WAIT_INFINITE 0xFFFFFFFFu

struct xenhsa_event_wait_req {
    uint32_t count;      /* 1..XENHSA_WAIT_MAX_EVENTS */
    uint32_t flags;      /* XENHSA_WAIT_ALL: all must fire; else any */
    uint32_t timeout_ms; /* XENHSA_WAIT_INFINITE for none */
    uint32_t pad;
    uint64_t event[XENHSA_WAIT_MAX_EVENTS]; /* handles; entries past count are 0 */
};
XENHSA_WIRE_STRUCT(struct xenhsa_event_wait_req, 144);
XENHSA_FIELD_AT(struct xenhsa_event_wait_req, event, 16);

struct xenhsa_event_wait_rsp {
    uint32_t signaled_mask; /* bit i: event[i] fired */
    uint32_t pad;
};
XENHSA_WIRE_STRUCT(struct xenhsa_event_wait_rsp, 8);

struct xenhsa_event_wait_cancel_req {
    uint32_t wait_seqno; /* seqno of the pending EVENT_WAIT */
    uint32_t pad;
};
XENHSA_WIRE_STRUCT(struct xenhsa_event_wait_cancel_req, 8);

#endif /* XENHSA_PROTO_EVENT_H */
