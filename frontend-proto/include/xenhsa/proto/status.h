/*
 * xenhsa wire protocol v1: response status codes.
 * A response carries exactly one; docs/protocol.md says which violation gets which.
 */
#ifndef XENHSA_PROTO_STATUS_H
#define XENHSA_PROTO_STATUS_H

#include "common.h"

enum xenhsa_status {
    XENHSA_STATUS_OK = 0,
    XENHSA_STATUS_BAD_COMMAND = 1,   /* unknown command, or one a frontend may not send */
    XENHSA_STATUS_BAD_LENGTH = 2,    /* len past the slot, or not the command's length */
    XENHSA_STATUS_BAD_PAD = 3,       /* a pad or unused field is not zero */
    XENHSA_STATUS_BAD_ARGUMENT = 4,  /* a count, size, flag or enum out of range */
    XENHSA_STATUS_BAD_HANDLE = 5,    /* unknown, stale or another kind's handle */
    XENHSA_STATUS_BAD_ADDRESS = 6,   /* VA misaligned, outside the window, or overlapping */
    XENHSA_STATUS_BAD_STATE = 7,     /* not allowed now: before CONNECTED, HELLO after it or
                                        past XENHSA_HELLO_MAX_ATTEMPTS, a busy object */
    XENHSA_STATUS_NO_MEMORY = 8,     /* the backend is out of a resource */
    XENHSA_STATUS_QUOTA = 9,         /* this guest's quota would be exceeded */
    XENHSA_STATUS_GRANT_FAILED = 10, /* a grant reference could not be mapped */
    XENHSA_STATUS_TIMEOUT = 11,      /* EVENT_WAIT timed out */
    XENHSA_STATUS_CANCELLED = 12,    /* EVENT_WAIT was cancelled */
    XENHSA_STATUS_UNSUPPORTED = 13,  /* feature not negotiated or not available on this host */
    XENHSA_STATUS_VERSION = 14,      /* no common protocol version */
    XENHSA_STATUS_DEVICE = 15,       /* the GPU seam failed */
    XENHSA_STATUS_FAULT = 16,        /* the named queue was stopped by a GPU memory fault */
    XENHSA_STATUS_REVOKED = 17,      /* the named range is a LEND the backend revoked */
    XENHSA_STATUS_COUNT_ = 18
};

static inline const char* xenhsa_status_name(uint32_t status) {
    switch (status) {
        case XENHSA_STATUS_OK:
            return "OK";
        case XENHSA_STATUS_BAD_COMMAND:
            return "BAD_COMMAND";
        case XENHSA_STATUS_BAD_LENGTH:
            return "BAD_LENGTH";
        case XENHSA_STATUS_BAD_PAD:
            return "BAD_PAD";
        case XENHSA_STATUS_BAD_ARGUMENT:
            return "BAD_ARGUMENT";
        case XENHSA_STATUS_BAD_HANDLE:
            return "BAD_HANDLE";
        case XENHSA_STATUS_BAD_ADDRESS:
            return "BAD_ADDRESS";
        case XENHSA_STATUS_BAD_STATE:
            return "BAD_STATE";
        case XENHSA_STATUS_NO_MEMORY:
            return "NO_MEMORY";
        case XENHSA_STATUS_QUOTA:
            return "QUOTA";
        case XENHSA_STATUS_GRANT_FAILED:
            return "GRANT_FAILED";
        case XENHSA_STATUS_TIMEOUT:
            return "TIMEOUT";
        case XENHSA_STATUS_CANCELLED:
            return "CANCELLED";
        case XENHSA_STATUS_UNSUPPORTED:
            return "UNSUPPORTED";
        case XENHSA_STATUS_VERSION:
            return "VERSION";
        case XENHSA_STATUS_DEVICE:
            return "DEVICE";
        case XENHSA_STATUS_FAULT:
            return "FAULT";
        case XENHSA_STATUS_REVOKED:
            return "REVOKED";
        default:
            return "UNKNOWN_STATUS";
    }
}

#endif /* XENHSA_PROTO_STATUS_H */
