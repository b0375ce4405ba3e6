/*
 * xenhsa wire protocol v1: putting messages into slots and taking them out.
 *
 * Shared memory is hostile. The consumer copies a slot out exactly once
 * (xenhsa_copy_req / xenhsa_copy_rsp), validates the copy (validate.h) and never reads
 * the slot again. The producer writes a whole slot: header, payload, and zeroes for the
 * rest, so no stale or uninitialised bytes reach the peer (Xen XSA-216).
 */
#ifndef XENHSA_PROTO_CODEC_H
#define XENHSA_PROTO_CODEC_H

#include "ring.h"

#ifdef __cplusplus
#include <cstring>
#else
#include <string.h>
#endif

/* Read every byte of a shared slot once into private memory. */
static inline void xenhsa_copy_slot_(void* dst, const void* shared_slot) {
    memcpy(dst, shared_slot, XENHSA_SLOT_SIZE);
    /* The copy is all that is used afterwards: no later re-read of the slot. */
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
}

static inline void xenhsa_copy_req(struct xenhsa_req_slot* dst, const void* shared_slot) {
    xenhsa_copy_slot_(dst, shared_slot);
}

static inline void xenhsa_copy_rsp(struct xenhsa_rsp_slot* dst, const void* shared_slot) {
    xenhsa_copy_slot_(dst, shared_slot);
}

/* Frontend: write request `cmd` into a slot it owns. Returns 0, or -1 if len is too big. */
static inline int xenhsa_encode_req(void* slot, uint32_t cmd, uint32_t seqno, const void* payload,
                                    uint32_t len) {
    struct xenhsa_req_slot out;
    if (len > XENHSA_SLOT_PAYLOAD_MAX) {
        return -1;
    }
    memset(&out, 0, sizeof out);
    out.hdr.cmd = cmd;
    out.hdr.len = len;
    out.hdr.seqno = seqno;
    if (len != 0) {
        memcpy(out.payload, payload, len);
    }
    memcpy(slot, &out, sizeof out);
    return 0;
}

/* Backend: write a response into a slot. Returns 0, or -1 if len is too big. */
static inline int xenhsa_encode_rsp(void* slot, uint32_t seqno, uint32_t status,
                                    const void* payload, uint32_t len) {
    struct xenhsa_rsp_slot out;
    if (len > XENHSA_SLOT_PAYLOAD_MAX) {
        return -1;
    }
    memset(&out, 0, sizeof out);
    out.hdr.seqno = seqno;
    out.hdr.status = status;
    out.hdr.len = len;
    if (len != 0) {
        memcpy(out.payload, payload, len);
    }
    memcpy(slot, &out, sizeof out);
    return 0;
}

#ifdef __cplusplus
namespace xenhsa::proto {

/* The payload of a private slot copy as a typed wire struct (by value: no aliasing). */
template <class Wire, class Slot>
Wire payload_as(const Slot& copy) noexcept {
    static_assert(sizeof(Wire) <= XENHSA_SLOT_PAYLOAD_MAX, "payload larger than a slot");
    Wire out;
    std::memcpy(&out, copy.payload, sizeof out);
    return out;
}

}  // namespace xenhsa::proto
#endif

#endif /* XENHSA_PROTO_CODEC_H */
