/*
 * xenhsa wire protocol v1: the shared request/response ring.
 *
 * The frontend grants 2^order pages (order 0..XENHSA_RING_MAX_ORDER, xenstore
 * "ring-page-order") that the backend maps contiguously. The first 128 bytes hold the
 * indices, each side's on its own cache line; XENHSA_RING_SLOTS(order) fixed-size slots
 * follow. A slot holds a request until the backend consumes it and may then hold a
 * response, exactly as in Xen's io/ring.h: the frontend never has more than
 * XENHSA_RING_SLOTS requests outstanding (a pending EVENT_WAIT counts), and responses may
 * come back in any order, matched by seqno.
 *
 * Notification suppression as in io/ring.h: a producer that publishes index `new` after
 * `old` notifies the event channel only if the consumer's event index lies in (old, new].
 * A consumer about to sleep sets its event index to cons + 1 and checks once more
 * (xenhsa_ring_final_check), which closes the lost-wakeup race.
 */
#ifndef XENHSA_PROTO_RING_H
#define XENHSA_PROTO_RING_H

#include "common.h"

#ifdef __cplusplus
#include <cstring>
#else
#include <string.h>
#endif

#define XENHSA_RING_HEADER_SIZE 128u
#define XENHSA_SLOT_SIZE 248u
#define XENHSA_REQ_HDR_SIZE 16u
#define XENHSA_SLOT_PAYLOAD_MAX (XENHSA_SLOT_SIZE - XENHSA_REQ_HDR_SIZE) /* 232 */
#define XENHSA_RING_MAX_ORDER 3u
/* (4096 - 128) / 248 == 16: one page holds 16 slots, and every order doubles that. */
#define XENHSA_RING_SLOTS(order) (16u << (order))
#define XENHSA_RING_BYTES(order) (XENHSA_PAGE_SIZE << (order))

/* Request header: the first 16 bytes of a request slot. */
struct xenhsa_req_hdr {
    uint32_t cmd;   /* enum xenhsa_cmd */
    uint32_t len;   /* bytes of payload after this header; exactly the command's struct size */
    uint32_t seqno; /* chosen by the frontend, echoed in the response */
    uint32_t pad;   /* zero */
};

/* Response header: the first 16 bytes of a response slot. */
struct xenhsa_rsp_hdr {
    uint32_t seqno;  /* the request's seqno */
    uint32_t status; /* enum xenhsa_status */
    uint32_t len;    /* bytes of payload after this header */
    uint32_t pad;    /* zero */
};

struct xenhsa_req_slot {
    struct xenhsa_req_hdr hdr;
    uint8_t payload[XENHSA_SLOT_PAYLOAD_MAX];
};

struct xenhsa_rsp_slot {
    struct xenhsa_rsp_hdr hdr;
    uint8_t payload[XENHSA_SLOT_PAYLOAD_MAX];
};

union xenhsa_slot {
    struct xenhsa_req_slot req;
    struct xenhsa_rsp_slot rsp;
};

/*
 * The ring header at offset 0 of the first ring page. Only the frontend initialises it,
 * with xenhsa_sring_init. Indices are free-running 32-bit counters; slot = index &
 * (slots - 1).
 */
struct xenhsa_sring {
    /* cache line 0: written by the frontend */
    uint32_t req_prod;  /* requests published */
    uint32_t rsp_event; /* frontend wants a kick when rsp_prod passes this */
    uint32_t fe_alive;  /* 1 while the frontend's process maps the ring; the unmap-notify
                           byte its grant driver clears (and then kicks) if it dies */
    uint32_t fe_pad[13];
    /* cache line 1: written by the backend */
    uint32_t rsp_prod;  /* responses published */
    uint32_t req_event; /* backend wants a kick when req_prod passes this */
    uint32_t be_alive;  /* 1 while a backend serves the ring; the unmap-notify byte, cleared
                           by the hypervisor's grant driver if the backend dies */
    uint32_t be_pad[13];
};

XENHSA_WIRE_STRUCT(struct xenhsa_req_hdr, 16);
XENHSA_FIELD_AT(struct xenhsa_req_hdr, cmd, 0);
XENHSA_FIELD_AT(struct xenhsa_req_hdr, len, 4);
XENHSA_FIELD_AT(struct xenhsa_req_hdr, seqno, 8);
XENHSA_FIELD_AT(struct xenhsa_req_hdr, pad, 12);
XENHSA_WIRE_STRUCT(struct xenhsa_rsp_hdr, 16);
XENHSA_FIELD_AT(struct xenhsa_rsp_hdr, seqno, 0);
XENHSA_FIELD_AT(struct xenhsa_rsp_hdr, status, 4);
XENHSA_FIELD_AT(struct xenhsa_rsp_hdr, len, 8);
XENHSA_FIELD_AT(struct xenhsa_rsp_hdr, pad, 12);
XENHSA_WIRE_STRUCT(struct xenhsa_req_slot, XENHSA_SLOT_SIZE);
XENHSA_WIRE_STRUCT(struct xenhsa_rsp_slot, XENHSA_SLOT_SIZE);
XENHSA_WIRE_STRUCT(union xenhsa_slot, XENHSA_SLOT_SIZE);
XENHSA_FIELD_AT(struct xenhsa_req_slot, payload, XENHSA_REQ_HDR_SIZE);
XENHSA_FIELD_AT(struct xenhsa_rsp_slot, payload, XENHSA_REQ_HDR_SIZE);
XENHSA_WIRE_STRUCT(struct xenhsa_sring, XENHSA_RING_HEADER_SIZE);
XENHSA_FIELD_AT(struct xenhsa_sring, req_prod, 0);
XENHSA_FIELD_AT(struct xenhsa_sring, rsp_event, 4);
XENHSA_FIELD_AT(struct xenhsa_sring, fe_alive, 8);
XENHSA_FIELD_AT(struct xenhsa_sring, rsp_prod, 64);
XENHSA_FIELD_AT(struct xenhsa_sring, req_event, 68);
XENHSA_FIELD_AT(struct xenhsa_sring, be_alive, 72);
XENHSA_STATIC_ASSERT(XENHSA_RING_HEADER_SIZE + XENHSA_RING_SLOTS(0) * XENHSA_SLOT_SIZE ==
                         XENHSA_RING_BYTES(0),
                     "one ring page holds the header and 16 slots exactly");
XENHSA_STATIC_ASSERT(XENHSA_RING_HEADER_SIZE +
                             XENHSA_RING_SLOTS(XENHSA_RING_MAX_ORDER) * XENHSA_SLOT_SIZE <=
                         XENHSA_RING_BYTES(XENHSA_RING_MAX_ORDER),
                     "the largest ring fits its pages");

#define XENHSA_SRING_ALIVE_OFFSET 72u   /* be_alive */
#define XENHSA_SRING_FE_ALIVE_OFFSET 8u /* fe_alive */
XENHSA_STATIC_ASSERT(offsetof(struct xenhsa_sring, fe_alive) == XENHSA_SRING_FE_ALIVE_OFFSET,
                     "fe_alive is the frontend's unmap-notify byte");

/* As Xen's SHARED_RING_INIT: all zero but both event indices at 1, so the first request
   and the first response are notified before either side has armed anything. */
static inline void xenhsa_sring_init(struct xenhsa_sring* s) {
    memset(s, 0, sizeof *s);
    s->req_event = 1;
    s->rsp_event = 1;
}

/* Byte offset of slot `index` from the start of the first ring page. */
static inline uint32_t xenhsa_ring_slot_offset(uint32_t index, uint32_t slots) {
    return XENHSA_RING_HEADER_SIZE + (index & (slots - 1u)) * XENHSA_SLOT_SIZE;
}

/* Shared indices are read and written only through these. */
static inline uint32_t xenhsa_index_load(const uint32_t* field) {
    return __atomic_load_n(field, __ATOMIC_ACQUIRE);
}

static inline void xenhsa_index_store(uint32_t* field, uint32_t value) {
    __atomic_store_n(field, value, __ATOMIC_RELEASE);
}

/* Between two loads of an index one side polls: the CPU's spin-wait hint. */
static inline void xenhsa_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield" ::: "memory");
#endif
}

/*
 * Publish `new_prod` (after `old_prod`, the producer's own private copy) in `*prod` and
 * return nonzero if the consumer asked to be notified: its event index in (old, new].
 */
static inline int xenhsa_ring_publish(uint32_t* prod, const uint32_t* event, uint32_t old_prod,
                                      uint32_t new_prod) {
    xenhsa_index_store(prod, new_prod);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    return (uint32_t)(new_prod - xenhsa_index_load(event)) < (uint32_t)(new_prod - old_prod);
}

/*
 * Consumer's check before sleeping: returns nonzero if `*prod` has moved past `cons`;
 * otherwise arms `*event` at cons + 1 and checks once more, so a producer that published
 * in between either is seen here or sees the armed event and notifies.
 */
static inline int xenhsa_ring_final_check(const uint32_t* prod, uint32_t* event, uint32_t cons) {
    if (xenhsa_index_load(prod) != cons) {
        return 1;
    }
    xenhsa_index_store(event, cons + 1u);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    return xenhsa_index_load(prod) != cons;
}

/*
 * Backend side: a request producer index more than `slots` ahead of the responses the
 * backend has produced is impossible for a well-behaved frontend (io/ring.h's
 * RING_REQUEST_PROD_OVERFLOW): the backend disconnects that guest.
 */
static inline int xenhsa_ring_req_prod_overflow(uint32_t req_prod, uint32_t rsp_prod_pvt,
                                                uint32_t slots) {
    return (uint32_t)(req_prod - rsp_prod_pvt) > slots;
}

/* Backend side: consuming request `req_cons` would leave no slot for its response. */
static inline int xenhsa_ring_req_cons_overflow(uint32_t req_cons, uint32_t rsp_prod_pvt,
                                                uint32_t slots) {
    return (uint32_t)(req_cons - rsp_prod_pvt) >= slots;
}

/* Frontend side: the same check on the response producer the backend publishes. */
static inline int xenhsa_ring_rsp_prod_overflow(uint32_t rsp_prod, uint32_t req_prod_pvt,
                                                uint32_t rsp_cons) {
    return (uint32_t)(rsp_prod - rsp_cons) > (uint32_t)(req_prod_pvt - rsp_cons);
}

#endif /* XENHSA_PROTO_RING_H */
