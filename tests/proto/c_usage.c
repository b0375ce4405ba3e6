/* The protocol used from C11, as a guest kernel driver or C library would. */
#include "c_usage.h"

#include <xenhsa/proto.h>

void xenhsa_c_get_sizes(struct xenhsa_c_sizes* out) {
    out->sring = sizeof(struct xenhsa_sring);
    out->slot = sizeof(union xenhsa_slot);
    out->hello_req = sizeof(struct xenhsa_hello_req);
    out->hello_rsp = sizeof(struct xenhsa_hello_rsp);
    out->node_props = sizeof(struct xenhsa_node_props);
    out->map_req = sizeof(struct xenhsa_map_req);
    out->lend_rsp = sizeof(struct xenhsa_lend_rsp);
    out->queue_create_req = sizeof(struct xenhsa_queue_create_req);
    out->event_wait_req = sizeof(struct xenhsa_event_wait_req);
    out->notify_page = sizeof(struct xenhsa_notify_page);
    out->doorbell_page = sizeof(struct xenhsa_doorbell_page);
    out->map_gref_offset = offsetof(struct xenhsa_map_req, gref);
}

uint32_t xenhsa_c_encode_and_check_map(uint32_t npages, uint32_t nrefs) {
    struct xenhsa_map_req req;
    struct xenhsa_req_slot shared;
    struct xenhsa_req_slot copy;
    memset(&req, 0, sizeof req);
    req.va = 0x200000000000ull;
    req.npages = npages;
    req.flags = XENHSA_MAP_RW;
    req.nrefs = nrefs;
    for (uint32_t i = 0; i < nrefs && i < XENHSA_MAP_INLINE_GREFS; ++i) {
        req.gref[i] = 100 + i;
    }
    if (xenhsa_encode_req(&shared, XENHSA_CMD_MAP, 1, &req, (uint32_t)sizeof req) != 0) {
        return XENHSA_STATUS_BAD_LENGTH;
    }
    xenhsa_copy_req(&copy, &shared);
    return xenhsa_check_req(&copy);
}
