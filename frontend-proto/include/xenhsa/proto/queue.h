/*
 * xenhsa wire protocol v1: GPU queues (AQL compute queues, and SDMA queues behind
 * XENHSA_FEATURE_SDMA).
 *
 * The guest provides the ring and the read/write-pointer memory at its own VAs; each must
 * lie in a range it has PINned and MAPped to the GPU. A queue holds that memory: FREE,
 * UNPIN or UNMAP of memory a live queue uses is deferred until the queue is destroyed
 * (answered OK, never an error, never a leak). The queue's doorbell is slot
 * `doorbell_index` of the guest's doorbell page (doorbell.h). The ring, the read pointer
 * and the write pointer do not overlap each other (BAD_ADDRESS), and no two live queues
 * of a guest share any of that memory (BAD_ADDRESS, the backend's check).
 *
 * A write index no producer publishes is a queue error, like an invalid packet: the queue
 * stops and its error event is signalled. AQL: behind a value it already had, or more than
 * ring_size / 64 packets ahead of the read index while the packet there is not stored
 * (ROCr adds to the write index before it waits for room, so a full ring with packets to
 * run may be a slot past). SDMA: more than ring_size bytes ahead of the read index (one
 * that is not ahead means no work).
 *
 * AQL: rptr/wptr are amd_queue_t's read and write dispatch ids (64-byte packets).
 * SDMA (gfx9 "SDMA v4" packets, as ROCr's BlitSdmaV4 writes them): rptr/wptr are 64-bit
 * monotonic BYTE indexes; the ring offset of index i is i & (ring_size - 1). The engine
 * runs the bytes [rptr, wptr) in order and stores the new rptr (release) after each
 * packet. The doorbell value is the new wptr, only a hint (doorbell.h).
 */
#ifndef XENHSA_PROTO_QUEUE_H
#define XENHSA_PROTO_QUEUE_H

#include "common.h"

enum xenhsa_queue_type {
    XENHSA_QUEUE_COMPUTE_AQL = 1,
    XENHSA_QUEUE_SDMA = 2 /* needs XENHSA_FEATURE_SDMA (UNSUPPORTED otherwise) */
};

#define XENHSA_AQL_PACKET_SIZE 64u
/* An AQL queue laid out as ROCr's amd_queue_t (its read pointer is the queue's
 * read_dispatch_id): the 32-bit offset of read_dispatch_id in the amd_queue_t is stored
 * right after it, and the queue's inactive signal (an hsa_signal_t handle, 0 for none) is
 * at this offset in the amd_queue_t. A stopped queue's error code is stored in that signal
 * (hsa-bridge/soft/queue_errors.hpp). */
#define XENHSA_AMD_QUEUE_OFFSET_FIELD_AFTER_RPTR 8u
#define XENHSA_AMD_QUEUE_INACTIVE_SIGNAL_OFFSET 192u
/* The value of an amd_signal_t, at this offset of the signal its handle names. */
#define XENHSA_AMD_SIGNAL_VALUE_OFFSET 8u
#define XENHSA_QUEUE_RING_MIN XENHSA_PAGE_SIZE /* 64 packets */
#define XENHSA_QUEUE_RING_MAX (1ull << 22)     /* 64 Ki packets */
#define XENHSA_QUEUE_PRIORITY_MIN (-3)
#define XENHSA_QUEUE_PRIORITY_MAX 3

struct xenhsa_queue_create_req {
    uint32_t node;
    uint32_t type;        /* enum xenhsa_queue_type */
    uint32_t percentage;  /* 0..100 */
    int32_t priority;     /* XENHSA_QUEUE_PRIORITY_MIN..MAX */
    uint64_t ring_va;     /* page aligned */
    uint64_t ring_size;   /* power of two, XENHSA_QUEUE_RING_MIN..MAX */
    uint64_t rptr_va;     /* 8-byte aligned; AQL: the read dispatch id; SDMA: byte index */
    uint64_t wptr_va;     /* 8-byte aligned; AQL: the write dispatch id; SDMA: byte index */
    uint64_t error_event; /* event handle signalled on a queue error, or 0 */
};
XENHSA_WIRE_STRUCT(struct xenhsa_queue_create_req, 56);
XENHSA_FIELD_AT(struct xenhsa_queue_create_req, ring_va, 16);
XENHSA_FIELD_AT(struct xenhsa_queue_create_req, error_event, 48);

struct xenhsa_queue_create_rsp {
    uint64_t handle;
    uint32_t doorbell_index; /* < XENHSA_DOORBELLS_PER_PAGE */
    uint32_t pad;
};
XENHSA_WIRE_STRUCT(struct xenhsa_queue_create_rsp, 16);
/* QUEUE_DESTROY takes struct xenhsa_handle_req. */

#endif /* XENHSA_PROTO_QUEUE_H */
