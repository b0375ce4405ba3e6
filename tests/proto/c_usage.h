/* Entry points of c_usage.c, a C11 translation unit linked into the C++ tests. */
#ifndef XENHSA_TESTS_PROTO_C_USAGE_H
#define XENHSA_TESTS_PROTO_C_USAGE_H

#include <xenhsa/proto/common.h>

#ifdef __cplusplus
extern "C" {
#endif

struct xenhsa_c_sizes {
    uint64_t sring, slot, hello_req, hello_rsp, node_props, map_req, lend_rsp;
    uint64_t queue_create_req, event_wait_req, notify_page, doorbell_page, map_gref_offset;
};

void xenhsa_c_get_sizes(struct xenhsa_c_sizes* out);
uint32_t xenhsa_c_encode_and_check_map(uint32_t npages, uint32_t nrefs);

#ifdef __cplusplus
}
#endif

#endif
