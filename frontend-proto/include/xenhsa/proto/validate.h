/*
 * xenhsa wire protocol v1: validation of requests and responses.
 *
 * Every function here reads only a private copy (see codec.h: copy a slot out of shared
 * memory once, then validate the copy, never the slot). Each returns XENHSA_STATUS_OK or
 * the status the violation gets; checks run in the order docs/protocol.md lists them, so
 * the first violation decides the status. These are the syntactic checks shared by guest
 * and backend; what depends on a session (the window, handle tables, quotas) is the
 * backend's.
 */
#ifndef XENHSA_PROTO_VALIDATE_H
#define XENHSA_PROTO_VALIDATE_H

#include "commands.h"
#include "doorbell.h"
#include "event.h"
#include "hello.h"
#include "memory.h"
#include "query.h"
#include "queue.h"
#include "ring.h"
#include "status.h"

#ifdef __cplusplus
#include <cstring>
#else
#include <string.h>
#endif

#define XENHSA_LEN_UNKNOWN 0xFFFFFFFFu

/*
 * Every command once: X(name, request payload struct, successful response payload
 * length). A request payload of struct xenhsa_<req> is checked by xenhsa_check_<req>.
 */
#define XENHSA_COMMANDS(X)                                                    \
    X(HELLO, hello_req, sizeof(struct xenhsa_hello_rsp))                      \
    X(QUERY, query_req, sizeof(struct xenhsa_query_rsp))                      \
    X(MAP, map_req, sizeof(struct xenhsa_handle_rsp))                         \
    X(LEND, lend_req, sizeof(struct xenhsa_lend_rsp))                         \
    X(PIN, pin_req, sizeof(struct xenhsa_handle_rsp))                         \
    X(MAP_TO_GPU, map_to_gpu_req, sizeof(struct xenhsa_map_to_gpu_rsp))       \
    X(ALLOC, alloc_req, sizeof(struct xenhsa_alloc_rsp))                      \
    X(QUEUE_CREATE, queue_create_req, sizeof(struct xenhsa_queue_create_rsp)) \
    X(EVENT_CREATE, event_create_req, sizeof(struct xenhsa_event_create_rsp)) \
    X(EVENT_WAIT, event_wait_req, sizeof(struct xenhsa_event_wait_rsp))       \
    X(EVENT_WAIT_CANCEL, event_wait_cancel_req, 0)                            \
    X(UNMAP, handle_req, 0)                                                   \
    X(UNPIN, handle_req, 0)                                                   \
    X(UNMAP_FROM_GPU, handle_req, 0)                                          \
    X(FREE, handle_req, 0)                                                    \
    X(QUEUE_DESTROY, handle_req, 0)                                           \
    X(EVENT_DESTROY, handle_req, 0)                                           \
    X(EVENT_SET, handle_req, 0)                                               \
    X(EVENT_RESET, handle_req, 0)

/* Payload length of a request: the command's struct size, or XENHSA_LEN_UNKNOWN. */
static inline uint32_t xenhsa_req_len(uint32_t cmd) {
    switch (cmd) {
#define XENHSA_REQ_LEN_(name, req, rsp_len) \
    case XENHSA_CMD_##name:                 \
        return (uint32_t)sizeof(struct xenhsa_##req);
        XENHSA_COMMANDS(XENHSA_REQ_LEN_)
#undef XENHSA_REQ_LEN_
        default:
            return XENHSA_LEN_UNKNOWN;
    }
}

/* Payload length of a successful response (every HELLO response has it too). */
static inline uint32_t xenhsa_rsp_len(uint32_t cmd) {
    switch (cmd) {
#define XENHSA_RSP_LEN_(name, req, rsp_len) \
    case XENHSA_CMD_##name:                 \
        return (uint32_t)(rsp_len);
        XENHSA_COMMANDS(XENHSA_RSP_LEN_)
#undef XENHSA_RSP_LEN_
        default:
            return XENHSA_LEN_UNKNOWN;
    }
}

static inline int xenhsa_all_zero(const void* bytes, size_t n) {
    const uint8_t* p = (const uint8_t*)bytes;
    uint8_t acc = 0;
    for (size_t i = 0; i < n; ++i) {
        acc |= p[i];
    }
    return acc == 0;
}

/* Request header: unknown command, length past the slot, wrong length, nonzero pad. */
static inline uint32_t xenhsa_check_req_hdr(const struct xenhsa_req_hdr* h) {
    const uint32_t want = xenhsa_req_len(h->cmd);
    if (want == XENHSA_LEN_UNKNOWN) {
        return XENHSA_STATUS_BAD_COMMAND;
    }
    if (h->len > XENHSA_SLOT_PAYLOAD_MAX || h->len != want) {
        return XENHSA_STATUS_BAD_LENGTH;
    }
    if (h->pad != 0) {
        return XENHSA_STATUS_BAD_PAD;
    }
    return XENHSA_STATUS_OK;
}

static inline uint32_t xenhsa_check_handle_req(const struct xenhsa_handle_req* r) {
    return r->handle == XENHSA_HANDLE_NONE ? XENHSA_STATUS_BAD_HANDLE : XENHSA_STATUS_OK;
}

static inline uint32_t xenhsa_check_hello_req(const struct xenhsa_hello_req* r) {
    if (r->version_min == 0 || r->version_min > r->version_max) {
        return XENHSA_STATUS_BAD_ARGUMENT;
    }
    if (r->va_size < XENHSA_VA_WINDOW_MIN || r->va_size > XENHSA_VA_WINDOW_MAX ||
        !xenhsa_page_aligned(r->va_size)) {
        return XENHSA_STATUS_BAD_ARGUMENT;
    }
    if (r->va_base != 0 &&
        (r->va_base < XENHSA_VA_WINDOW_FLOOR || !xenhsa_va_range_ok(r->va_base, r->va_size))) {
        return XENHSA_STATUS_BAD_ADDRESS;
    }
    return XENHSA_STATUS_OK;
}

static inline uint32_t xenhsa_check_query_req(const struct xenhsa_query_req* r) {
    const int has_node = r->kind == XENHSA_QUERY_NODE || r->kind == XENHSA_QUERY_MEM_BANK ||
                         r->kind == XENHSA_QUERY_CACHE || r->kind == XENHSA_QUERY_IO_LINK ||
                         r->kind == XENHSA_QUERY_CLOCK || r->kind == XENHSA_QUERY_TILE_CONFIG;
    const int has_index = r->kind == XENHSA_QUERY_MEM_BANK || r->kind == XENHSA_QUERY_CACHE ||
                          r->kind == XENHSA_QUERY_IO_LINK || r->kind == XENHSA_QUERY_KERNEL;
    if (r->kind == 0 || r->kind >= XENHSA_QUERY_KIND_COUNT_) {
        return XENHSA_STATUS_BAD_ARGUMENT;
    }
    if ((!has_node && r->node != 0) || (!has_index && r->index != 0)) {
        return XENHSA_STATUS_BAD_PAD; /* a field this kind does not use */
    }
    if (r->node >= XENHSA_QUERY_MAX_NODES || r->index >= XENHSA_QUERY_MAX_INDEX) {
        return XENHSA_STATUS_BAD_ARGUMENT;
    }
    if (r->offset >= XENHSA_PAGE_SIZE) {
        return XENHSA_STATUS_BAD_ARGUMENT;
    }
    return XENHSA_STATUS_OK;
}

/* A page list as MAP requests and LEND responses carry it. */
static inline uint32_t xenhsa_check_gref_list_(uint32_t npages, uint32_t flags, uint32_t nrefs,
                                               const xenhsa_gref_t* gref) {
    if ((flags & ~XENHSA_MAP_FLAGS_ALL) != 0 || npages == 0 || npages > XENHSA_MAP_MAX_PAGES ||
        nrefs > XENHSA_MAP_INLINE_GREFS || nrefs != xenhsa_map_nrefs(npages, flags)) {
        return XENHSA_STATUS_BAD_ARGUMENT;
    }
    if (!xenhsa_all_zero(&gref[nrefs], (XENHSA_MAP_INLINE_GREFS - nrefs) * sizeof(xenhsa_gref_t))) {
        return XENHSA_STATUS_BAD_PAD;
    }
    return XENHSA_STATUS_OK;
}

static inline uint32_t xenhsa_check_map_req(const struct xenhsa_map_req* r) {
    uint32_t status;
    if (r->pad != 0) {
        return XENHSA_STATUS_BAD_PAD;
    }
    status = xenhsa_check_gref_list_(r->npages, r->flags, r->nrefs, r->gref);
    if (status != XENHSA_STATUS_OK) {
        return status;
    }
    if (!xenhsa_va_range_ok(r->va, (uint64_t)r->npages << XENHSA_PAGE_SHIFT)) {
        return XENHSA_STATUS_BAD_ADDRESS;
    }
    return XENHSA_STATUS_OK;
}

static inline uint32_t xenhsa_check_lend_req(const struct xenhsa_lend_req* r) {
    if ((r->flags & ~XENHSA_MAP_RW) != 0 || r->npages == 0 || r->npages > XENHSA_MAP_MAX_PAGES) {
        return XENHSA_STATUS_BAD_ARGUMENT;
    }
    if (!xenhsa_va_range_ok(r->va, (uint64_t)r->npages << XENHSA_PAGE_SHIFT)) {
        return XENHSA_STATUS_BAD_ADDRESS;
    }
    return XENHSA_STATUS_OK;
}

static inline uint32_t xenhsa_check_pin_req(const struct xenhsa_pin_req* r) {
    if (r->pad != 0) {
        return XENHSA_STATUS_BAD_PAD;
    }
    if ((r->flags & ~XENHSA_PIN_FLAGS_ALL) != 0) {
        return XENHSA_STATUS_BAD_ARGUMENT;
    }
    if (!xenhsa_va_range_ok(r->va, r->size)) {
        return XENHSA_STATUS_BAD_ADDRESS;
    }
    return XENHSA_STATUS_OK;
}

static inline uint32_t xenhsa_check_map_to_gpu_req(const struct xenhsa_map_to_gpu_req* r) {
    if (r->pad != 0) {
        return XENHSA_STATUS_BAD_PAD;
    }
    if (r->handle == XENHSA_HANDLE_NONE) {
        return XENHSA_STATUS_BAD_HANDLE;
    }
    if (r->node_mask == 0 || (r->flags & ~XENHSA_GPU_MAP_FLAGS_ALL) != 0) {
        return XENHSA_STATUS_BAD_ARGUMENT;
    }
    return XENHSA_STATUS_OK;
}

static inline uint32_t xenhsa_check_alloc_req(const struct xenhsa_alloc_req* r) {
    if ((r->flags & ~XENHSA_ALLOC_FLAGS_ALL) != 0 || r->node >= XENHSA_QUERY_MAX_NODES ||
        r->size == 0 || r->size > XENHSA_VA_WINDOW_MAX || !xenhsa_page_aligned(r->size)) {
        return XENHSA_STATUS_BAD_ARGUMENT;
    }
    if (r->va != 0 && !xenhsa_va_range_ok(r->va, r->size)) {
        return XENHSA_STATUS_BAD_ADDRESS;
    }
    return XENHSA_STATUS_OK;
}

static inline int xenhsa_pointer_ok(uint64_t va) {
    return va != 0 && (va & 7u) == 0 && va < XENHSA_VA_LIMIT;
}

/* Nonzero when the 8-byte word at `ptr` (below XENHSA_VA_LIMIT) lies in [va, va + size). */
static inline int xenhsa_pointer_in(uint64_t ptr, uint64_t va, uint64_t size) {
    return ptr + 8u > va && ptr < va + size;
}

static inline uint32_t xenhsa_check_queue_create_req(const struct xenhsa_queue_create_req* r) {
    /* SDMA is accepted here; the backend answers UNSUPPORTED without XENHSA_FEATURE_SDMA. */
    if ((r->type != XENHSA_QUEUE_COMPUTE_AQL && r->type != XENHSA_QUEUE_SDMA) ||
        r->node >= XENHSA_QUERY_MAX_NODES || r->percentage > 100u ||
        r->priority < XENHSA_QUEUE_PRIORITY_MIN || r->priority > XENHSA_QUEUE_PRIORITY_MAX ||
        r->ring_size < XENHSA_QUEUE_RING_MIN || r->ring_size > XENHSA_QUEUE_RING_MAX ||
        (r->ring_size & (r->ring_size - 1u)) != 0) {
        return XENHSA_STATUS_BAD_ARGUMENT;
    }
    if (!xenhsa_va_range_ok(r->ring_va, r->ring_size) || !xenhsa_pointer_ok(r->rptr_va) ||
        !xenhsa_pointer_ok(r->wptr_va)) {
        return XENHSA_STATUS_BAD_ADDRESS;
    }
    /* The GPU side writes the read index: never into the ring or onto the write index. */
    if (xenhsa_pointer_in(r->rptr_va, r->ring_va, r->ring_size) ||
        xenhsa_pointer_in(r->wptr_va, r->ring_va, r->ring_size) || r->rptr_va == r->wptr_va) {
        return XENHSA_STATUS_BAD_ADDRESS;
    }
    return XENHSA_STATUS_OK;
}

static inline uint32_t xenhsa_check_event_create_req(const struct xenhsa_event_create_req* r) {
    if (r->pad != 0) {
        return XENHSA_STATUS_BAD_PAD;
    }
    if (r->type >= XENHSA_EVENT_TYPE_COUNT_ || (r->flags & ~XENHSA_EVENT_FLAGS_ALL) != 0 ||
        r->node >= XENHSA_QUERY_MAX_NODES) {
        return XENHSA_STATUS_BAD_ARGUMENT;
    }
    return XENHSA_STATUS_OK;
}

static inline uint32_t xenhsa_check_event_wait_req(const struct xenhsa_event_wait_req* r) {
    if (r->pad != 0) {
        return XENHSA_STATUS_BAD_PAD;
    }
    if (r->count == 0 || r->count > XENHSA_WAIT_MAX_EVENTS ||
        (r->flags & ~XENHSA_WAIT_FLAGS_ALL) != 0) {
        return XENHSA_STATUS_BAD_ARGUMENT;
    }
    if (!xenhsa_all_zero(&r->event[r->count],
                         (XENHSA_WAIT_MAX_EVENTS - r->count) * sizeof(uint64_t))) {
        return XENHSA_STATUS_BAD_PAD;
    }
    for (uint32_t i = 0; i < r->count; ++i) {
        if (r->event[i] == XENHSA_HANDLE_NONE) {
            return XENHSA_STATUS_BAD_HANDLE;
        }
    }
    return XENHSA_STATUS_OK;
}

static inline uint32_t xenhsa_check_event_wait_cancel_req(
    const struct xenhsa_event_wait_cancel_req* r) {
    return r->pad != 0 ? XENHSA_STATUS_BAD_PAD : XENHSA_STATUS_OK;
}

/* Copies the payload into a typed local, then checks it. */
#define XENHSA_CHECK_AS_(type, fn)               \
    do {                                         \
        type typed_;                             \
        memcpy(&typed_, payload, sizeof typed_); \
        return fn(&typed_);                      \
    } while (0)

/* The payload of a request whose header passed xenhsa_check_req_hdr. */
static inline uint32_t xenhsa_check_req_payload(uint32_t cmd, const void* payload) {
    switch (cmd) {
#define XENHSA_CHECK_REQ_(name, req, rsp_len) \
    case XENHSA_CMD_##name:                   \
        XENHSA_CHECK_AS_(struct xenhsa_##req, xenhsa_check_##req);
        XENHSA_COMMANDS(XENHSA_CHECK_REQ_)
#undef XENHSA_CHECK_REQ_
        default:
            return XENHSA_STATUS_BAD_COMMAND;
    }
}

/* A whole request slot (a private copy): header first, then payload. */
static inline uint32_t xenhsa_check_req(const struct xenhsa_req_slot* copy) {
    const uint32_t status = xenhsa_check_req_hdr(&copy->hdr);
    return status != XENHSA_STATUS_OK ? status
                                      : xenhsa_check_req_payload(copy->hdr.cmd, copy->payload);
}

/*
 * Response header, checked by the frontend against the command it sent with that seqno:
 * length past the slot or not the command's, unknown status, nonzero pad.
 */
static inline uint32_t xenhsa_check_rsp_hdr(const struct xenhsa_rsp_hdr* h, uint32_t cmd) {
    const uint32_t full = xenhsa_rsp_len(cmd);
    const int has_payload = h->status == XENHSA_STATUS_OK || cmd == XENHSA_CMD_HELLO;
    if (full == XENHSA_LEN_UNKNOWN) {
        return XENHSA_STATUS_BAD_COMMAND;
    }
    if (h->len > XENHSA_SLOT_PAYLOAD_MAX || h->len != (has_payload ? full : 0u)) {
        return XENHSA_STATUS_BAD_LENGTH;
    }
    if (h->status >= XENHSA_STATUS_COUNT_) {
        return XENHSA_STATUS_BAD_ARGUMENT;
    }
    if (h->pad != 0) {
        return XENHSA_STATUS_BAD_PAD;
    }
    return XENHSA_STATUS_OK;
}

/*
 * Response payloads, checked by the frontend on its private copy: the backend is a peer
 * too (XSA-396). `req` is the request the frontend sent with that seqno.
 */
static inline uint32_t xenhsa_check_hello_rsp(const struct xenhsa_hello_rsp* r,
                                              const struct xenhsa_hello_req* req) {
    if ((r->features & ~req->features) != 0 || r->ring_slots == 0 ||
        (r->ring_slots & (r->ring_slots - 1u)) != 0 ||
        r->ring_slots > XENHSA_RING_SLOTS(XENHSA_RING_MAX_ORDER) ||
        r->max_in_flight >= r->ring_slots) {
        return XENHSA_STATUS_BAD_ARGUMENT;
    }
    if (!xenhsa_va_range_ok(r->va_base, r->va_size) || r->va_base < XENHSA_VA_WINDOW_FLOOR ||
        r->va_size != req->va_size) {
        return XENHSA_STATUS_BAD_ADDRESS;
    }
    return XENHSA_STATUS_OK;
}

static inline uint32_t xenhsa_check_query_rsp(const struct xenhsa_query_rsp* r,
                                              const struct xenhsa_query_req* req) {
    if (r->chunk_len > XENHSA_QUERY_CHUNK_MAX || r->total_len > XENHSA_PAGE_SIZE ||
        req->offset > r->total_len || r->chunk_len > r->total_len - req->offset) {
        return XENHSA_STATUS_BAD_LENGTH;
    }
    if (!xenhsa_all_zero(&r->data[r->chunk_len], XENHSA_QUERY_CHUNK_MAX - r->chunk_len)) {
        return XENHSA_STATUS_BAD_PAD;
    }
    return XENHSA_STATUS_OK;
}

static inline uint32_t xenhsa_check_lend_rsp(const struct xenhsa_lend_rsp* r,
                                             const struct xenhsa_lend_req* req) {
    if (r->pad != 0) {
        return XENHSA_STATUS_BAD_PAD;
    }
    if (r->handle == XENHSA_HANDLE_NONE) {
        return XENHSA_STATUS_BAD_HANDLE;
    }
    if (r->npages != req->npages || (r->flags & XENHSA_MAP_RW) != (req->flags & XENHSA_MAP_RW)) {
        return XENHSA_STATUS_BAD_ARGUMENT;
    }
    return xenhsa_check_gref_list_(r->npages, r->flags, r->nrefs, r->gref);
}

static inline uint32_t xenhsa_check_queue_create_rsp(const struct xenhsa_queue_create_rsp* r) {
    if (r->pad != 0) {
        return XENHSA_STATUS_BAD_PAD;
    }
    if (r->handle == XENHSA_HANDLE_NONE) {
        return XENHSA_STATUS_BAD_HANDLE;
    }
    return r->doorbell_index < XENHSA_DOORBELLS_PER_PAGE ? XENHSA_STATUS_OK
                                                         : XENHSA_STATUS_BAD_ARGUMENT;
}

#endif /* XENHSA_PROTO_VALIDATE_H */
