/*
 * xenhsa wire protocol v1: memory commands.
 *
 *   MAP            guest pages (grant refs) -> mapped in the backend at the same VA
 *   UNMAP          handle of a MAP or a LEND (struct xenhsa_handle_req): undo it
 *   LEND           backend-owned pages granted to the guest, mirrored at the same VA
 *   PIN / UNPIN    register a MAPped range for GPU use (no migration, no XNACK)
 *   MAP_TO_GPU     make a PIN or ALLOC handle reachable by the GPU on some nodes
 *   UNMAP_FROM_GPU (struct xenhsa_handle_req)
 *   ALLOC / FREE   device memory (FREE: struct xenhsa_handle_req)
 *
 * A MAP names its pages directly (one grant ref per page, up to XENHSA_MAP_INLINE_GREFS)
 * or, with XENHSA_MAP_INDIRECT, through indirect pages: granted pages each holding
 * XENHSA_GREFS_PER_INDIRECT_PAGE grant refs, in order, like blkif's indirect descriptors.
 * Unused gref slots are zero, and so is the tail of the last indirect page (the backend
 * checks it: BAD_PAD). A LEND of more than XENHSA_MAP_INLINE_GREFS pages needs
 * XENHSA_FEATURE_INDIRECT (UNSUPPORTED otherwise).
 */
#ifndef XENHSA_PROTO_MEMORY_H
#define XENHSA_PROTO_MEMORY_H

#include "common.h"

#define XENHSA_MAP_INLINE_GREFS 52u
#define XENHSA_MAP_MAX_PAGES (XENHSA_MAP_INLINE_GREFS * XENHSA_GREFS_PER_INDIRECT_PAGE)

#define XENHSA_MAP_RW (1u << 0)       /* writable; without it the mapping is read-only */
#define XENHSA_MAP_INDIRECT (1u << 1) /* gref[] names indirect pages */
#define XENHSA_MAP_FLAGS_ALL (XENHSA_MAP_RW | XENHSA_MAP_INDIRECT)

/* Grant refs needed to describe npages: the pages themselves, or their indirect pages. */
static inline uint32_t xenhsa_map_nrefs(uint32_t npages, uint32_t flags) {
    if ((flags & XENHSA_MAP_INDIRECT) == 0) {
        return npages;
    }
    return (npages + XENHSA_GREFS_PER_INDIRECT_PAGE - 1u) / XENHSA_GREFS_PER_INDIRECT_PAGE;
}

struct xenhsa_map_req {
    uint64_t va;     /* page aligned, inside the negotiated window */
    uint32_t npages; /* 1..XENHSA_MAP_MAX_PAGES */
    uint32_t flags;  /* XENHSA_MAP_* */
    uint32_t nrefs;  /* == xenhsa_map_nrefs(npages, flags), <= XENHSA_MAP_INLINE_GREFS */
    uint32_t pad;
    xenhsa_gref_t gref[XENHSA_MAP_INLINE_GREFS];
};
XENHSA_WIRE_STRUCT(struct xenhsa_map_req, 232);
XENHSA_FIELD_AT(struct xenhsa_map_req, npages, 8);
XENHSA_FIELD_AT(struct xenhsa_map_req, gref, 24);
/* MAP answers with struct xenhsa_handle_rsp. */

struct xenhsa_lend_req {
    uint64_t va;     /* where the guest will map the buffer: page aligned, inside the window */
    uint32_t npages; /* 1..XENHSA_MAP_MAX_PAGES */
    uint32_t flags;  /* XENHSA_MAP_RW or 0 */
};
XENHSA_WIRE_STRUCT(struct xenhsa_lend_req, 16);

/* The backend's grants for a LEND, described like a MAP request. */
struct xenhsa_lend_rsp {
    uint64_t handle;
    uint32_t npages;
    uint32_t
        flags; /* XENHSA_MAP_RW as granted, XENHSA_MAP_INDIRECT if gref[] names indirect pages */
    uint32_t nrefs;
    uint32_t pad;
    xenhsa_gref_t gref[XENHSA_MAP_INLINE_GREFS];
};
XENHSA_WIRE_STRUCT(struct xenhsa_lend_rsp, 232);

#define XENHSA_PIN_READ_ONLY (1u << 0)
#define XENHSA_PIN_COARSE_GRAIN (1u << 1)
#define XENHSA_PIN_FLAGS_ALL (XENHSA_PIN_READ_ONLY | XENHSA_PIN_COARSE_GRAIN)

struct xenhsa_pin_req {
    uint64_t va;   /* page aligned; [va, va + size) lies in this guest's MAPs */
    uint64_t size; /* page aligned, nonzero */
    uint32_t flags;
    uint32_t pad;
};
XENHSA_WIRE_STRUCT(struct xenhsa_pin_req, 24);
/* PIN answers with struct xenhsa_handle_rsp. */

#define XENHSA_GPU_MAP_READ_ONLY (1u << 0)
#define XENHSA_GPU_MAP_FLAGS_ALL XENHSA_GPU_MAP_READ_ONLY

struct xenhsa_map_to_gpu_req {
    uint64_t handle;    /* a PIN or ALLOC handle */
    uint64_t node_mask; /* bit n: GPU node n; nonzero */
    uint32_t flags;
    uint32_t pad;
};
XENHSA_WIRE_STRUCT(struct xenhsa_map_to_gpu_req, 24);

struct xenhsa_map_to_gpu_rsp {
    uint64_t gpu_va; /* equals the guest VA: xenhsa mirrors */
};
XENHSA_WIRE_STRUCT(struct xenhsa_map_to_gpu_rsp, 8);

#define XENHSA_ALLOC_DEVICE_LOCAL (1u << 0) /* VRAM of `node`; else system memory */
#define XENHSA_ALLOC_EXECUTABLE (1u << 1)
#define XENHSA_ALLOC_UNCACHED (1u << 2)
#define XENHSA_ALLOC_COARSE_GRAIN (1u << 3)
#define XENHSA_ALLOC_READ_ONLY (1u << 4)
#define XENHSA_ALLOC_FLAGS_ALL                                                     \
    (XENHSA_ALLOC_DEVICE_LOCAL | XENHSA_ALLOC_EXECUTABLE | XENHSA_ALLOC_UNCACHED | \
     XENHSA_ALLOC_COARSE_GRAIN | XENHSA_ALLOC_READ_ONLY)

struct xenhsa_alloc_req {
    uint64_t va;   /* 0: the backend picks inside the window; else page aligned, inside it */
    uint64_t size; /* page aligned, nonzero */
    uint32_t node; /* < XENHSA_QUERY_MAX_NODES */
    uint32_t flags;
};
XENHSA_WIRE_STRUCT(struct xenhsa_alloc_req, 24);

struct xenhsa_alloc_rsp {
    uint64_t handle;
    uint64_t va;
};
XENHSA_WIRE_STRUCT(struct xenhsa_alloc_rsp, 16);

#endif /* XENHSA_PROTO_MEMORY_H */
