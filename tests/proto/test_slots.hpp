// Builders for request and response slots used by the protocol tests.
#ifndef XENHSA_TESTS_PROTO_TEST_SLOTS_HPP
#define XENHSA_TESTS_PROTO_TEST_SLOTS_HPP

#include <gtest/gtest.h>
#include <xenhsa/proto.h>

#include <cstring>

namespace xenhsa::test {

// A private request slot holding `payload` as command `cmd`, header filled consistently.
template <class Wire>
xenhsa_req_slot make_req(uint32_t cmd, const Wire& payload, uint32_t seqno = 7) {
    xenhsa_req_slot slot{};
    EXPECT_EQ(xenhsa_encode_req(&slot, cmd, seqno, &payload, sizeof payload), 0);
    return slot;
}

inline xenhsa_map_req valid_map_req() {
    xenhsa_map_req req{};
    req.va = 0x10000000000ull;
    req.npages = 3;
    req.flags = XENHSA_MAP_RW;
    req.nrefs = 3;
    req.gref[0] = 8;
    req.gref[1] = 9;
    req.gref[2] = 10;
    return req;
}

}  // namespace xenhsa::test

#endif
