/*
 * xenhsa wire protocol v1: command numbers. Every command is sent by the frontend on the
 * ring and answered by exactly one response with the same seqno. Backend-to-frontend
 * notifications (a lent buffer REVOKED, a GPU fault) travel on the notify page instead,
 * see notify.h.
 */
#ifndef XENHSA_PROTO_COMMANDS_H
#define XENHSA_PROTO_COMMANDS_H

#include "common.h"

enum xenhsa_cmd {
    XENHSA_CMD_HELLO = 1,
    XENHSA_CMD_QUERY = 2,
    XENHSA_CMD_MAP = 3,
    XENHSA_CMD_UNMAP = 4,
    XENHSA_CMD_LEND = 5,
    XENHSA_CMD_PIN = 6,
    XENHSA_CMD_UNPIN = 7,
    XENHSA_CMD_MAP_TO_GPU = 8,
    XENHSA_CMD_UNMAP_FROM_GPU = 9,
    XENHSA_CMD_ALLOC = 10,
    XENHSA_CMD_FREE = 11,
    XENHSA_CMD_QUEUE_CREATE = 12,
    XENHSA_CMD_QUEUE_DESTROY = 13,
    XENHSA_CMD_EVENT_CREATE = 14,
    XENHSA_CMD_EVENT_DESTROY = 15,
    XENHSA_CMD_EVENT_SET = 16,
    XENHSA_CMD_EVENT_RESET = 17,
    XENHSA_CMD_EVENT_WAIT = 18,
    XENHSA_CMD_EVENT_WAIT_CANCEL = 19,
    XENHSA_CMD_COUNT_ = 20
};

/* Feature bits negotiated by HELLO. */
#define XENHSA_FEATURE_INDIRECT (1ull << 0)    /* MAP through indirect grant pages */
#define XENHSA_FEATURE_LEND (1ull << 1)        /* LEND and the REVOKED notification */
#define XENHSA_FEATURE_GPU (1ull << 2)         /* PIN .. EVENT_*: a GPU seam is present */
#define XENHSA_FEATURE_WAIT_CANCEL (1ull << 3) /* EVENT_WAIT_CANCEL */
#define XENHSA_FEATURES_V1                                                \
    (XENHSA_FEATURE_INDIRECT | XENHSA_FEATURE_LEND | XENHSA_FEATURE_GPU | \
     XENHSA_FEATURE_WAIT_CANCEL)
/* Additions inside v1 (docs/protocol.md section 9), each behind its own bit. */
#define XENHSA_FEATURE_SDMA (1ull << 4) /* QUEUE_CREATE of XENHSA_QUEUE_SDMA */
/* Every bit this version of the headers defines. */
#define XENHSA_FEATURES_KNOWN (XENHSA_FEATURES_V1 | XENHSA_FEATURE_SDMA)

static inline const char* xenhsa_cmd_name(uint32_t cmd) {
    switch (cmd) {
        case XENHSA_CMD_HELLO:
            return "HELLO";
        case XENHSA_CMD_QUERY:
            return "QUERY";
        case XENHSA_CMD_MAP:
            return "MAP";
        case XENHSA_CMD_UNMAP:
            return "UNMAP";
        case XENHSA_CMD_LEND:
            return "LEND";
        case XENHSA_CMD_PIN:
            return "PIN";
        case XENHSA_CMD_UNPIN:
            return "UNPIN";
        case XENHSA_CMD_MAP_TO_GPU:
            return "MAP_TO_GPU";
        case XENHSA_CMD_UNMAP_FROM_GPU:
            return "UNMAP_FROM_GPU";
        case XENHSA_CMD_ALLOC:
            return "ALLOC";
        case XENHSA_CMD_FREE:
            return "FREE";
        case XENHSA_CMD_QUEUE_CREATE:
            return "QUEUE_CREATE";
        case XENHSA_CMD_QUEUE_DESTROY:
            return "QUEUE_DESTROY";
        case XENHSA_CMD_EVENT_CREATE:
            return "EVENT_CREATE";
        case XENHSA_CMD_EVENT_DESTROY:
            return "EVENT_DESTROY";
        case XENHSA_CMD_EVENT_SET:
            return "EVENT_SET";
        case XENHSA_CMD_EVENT_RESET:
            return "EVENT_RESET";
        case XENHSA_CMD_EVENT_WAIT:
            return "EVENT_WAIT";
        case XENHSA_CMD_EVENT_WAIT_CANCEL:
            return "EVENT_WAIT_CANCEL";
        default:
            return "UNKNOWN_COMMAND";
    }
}

/* Requests that name one handle and nothing else (UNMAP, UNPIN, FREE, ...). */
struct xenhsa_handle_req {
    uint64_t handle;
};
XENHSA_WIRE_STRUCT(struct xenhsa_handle_req, 8);

/* Responses that return one new handle (MAP, PIN, EVENT_CREATE, ...). */
struct xenhsa_handle_rsp {
    uint64_t handle;
};
XENHSA_WIRE_STRUCT(struct xenhsa_handle_rsp, 8);

#endif /* XENHSA_PROTO_COMMANDS_H */
