/*
 * xenhsa wire protocol v1: HELLO, the session handshake and VA-window negotiation.
 *
 * Guest VAs are mirrored: a buffer the guest has at VA x is mapped in the backend worker
 * at host VA x too, so AQL packets, kernargs and signals keep their addresses. Both
 * sides therefore reserve the same window:
 *   1. HELLO{va_base = 0, va_size = S}: the backend picks a window of S bytes free in its
 *      own address space, reserves it, and answers OK with it (the session is then
 *      NEGOTIATING).
 *   2. The guest reserves that window too and confirms it with HELLO{va_base = that base},
 *      or, if the window is taken on its side, asks for another with HELLO{va_base = its
 *      own choice}. The backend answers OK when it holds the asked window (the session is
 *      then CONNECTED), or BAD_ADDRESS with a new proposal in the response.
 * HELLO after CONNECTED is BAD_STATE, and so is every HELLO past XENHSA_HELLO_MAX_ATTEMPTS
 * (every HELLO counts, rejected ones too). Every HELLO response carries the full payload,
 * also on error (VERSION: `version` is the backend's highest; BAD_ADDRESS: a new proposal,
 * or va_base = va_size = 0 when the asked window is refused without one, as any window
 * that fails xenhsa_check_hello_req is: misaligned, below XENHSA_VA_WINDOW_FLOOR or past
 * XENHSA_VA_LIMIT).
 */
#ifndef XENHSA_PROTO_HELLO_H
#define XENHSA_PROTO_HELLO_H

#include "common.h"

/* Bounds of a VA window. */
#define XENHSA_VA_WINDOW_MIN (1ull << 30) /* 1 GiB */
#define XENHSA_VA_WINDOW_MAX (1ull << 43) /* 8 TiB */
/* No window starts below this address: guest data never sits where a NULL-plus-offset
 * dereference in the backend lands. A HELLO asking for a lower va_base gets BAD_ADDRESS
 * without a proposal, and the backend never proposes one. */
#define XENHSA_VA_WINDOW_FLOOR (1ull << 30) /* 1 GiB */
/* HELLOs a guest may send before it is CONNECTED; more get BAD_STATE. */
#define XENHSA_HELLO_MAX_ATTEMPTS 8u

struct xenhsa_hello_req {
    uint32_t version_min; /* lowest protocol version the guest speaks */
    uint32_t version_max; /* highest */
    uint64_t features;    /* XENHSA_FEATURE_* the guest wants */
    uint64_t va_base;     /* 0: propose a window; else: the window the guest asks for */
    uint64_t va_size;     /* window size, page aligned, XENHSA_VA_WINDOW_MIN..MAX */
};
XENHSA_WIRE_STRUCT(struct xenhsa_hello_req, 32);
XENHSA_FIELD_AT(struct xenhsa_hello_req, features, 8);
XENHSA_FIELD_AT(struct xenhsa_hello_req, va_base, 16);
XENHSA_FIELD_AT(struct xenhsa_hello_req, va_size, 24);

struct xenhsa_hello_rsp {
    uint32_t version;    /* chosen version (on VERSION error: the backend's highest) */
    uint32_t ring_slots; /* slots of this ring */
    uint64_t features;   /* granted features: a subset of the request's */
    uint64_t va_base;    /* the window the backend holds (or proposes) */
    uint64_t va_size;
    uint32_t max_map_pages; /* this guest's quotas */
    uint32_t max_lend_pages;
    uint32_t max_handles;
    uint32_t max_in_flight; /* requests the backend holds at once, pending waits included;
                               always < ring_slots */
};
XENHSA_WIRE_STRUCT(struct xenhsa_hello_rsp, 48);
XENHSA_FIELD_AT(struct xenhsa_hello_rsp, features, 8);
XENHSA_FIELD_AT(struct xenhsa_hello_rsp, va_base, 16);
XENHSA_FIELD_AT(struct xenhsa_hello_rsp, max_map_pages, 32);
XENHSA_FIELD_AT(struct xenhsa_hello_rsp, max_in_flight, 44);

#endif /* XENHSA_PROTO_HELLO_H */
