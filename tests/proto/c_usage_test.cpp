// The C11 and C++20 compilers agree on the layout, and the helpers behave the same in C.
#include "c_usage.h"

#include <gtest/gtest.h>
#include <xenhsa/proto.h>

#include <cstddef>

namespace {

TEST(ProtoFromC, LayoutAgreesBetweenCAndCxx) {
    xenhsa_c_sizes c{};
    xenhsa_c_get_sizes(&c);
    EXPECT_EQ(c.sring, sizeof(xenhsa_sring));
    EXPECT_EQ(c.slot, sizeof(xenhsa_slot));
    EXPECT_EQ(c.hello_req, sizeof(xenhsa_hello_req));
    EXPECT_EQ(c.hello_rsp, sizeof(xenhsa_hello_rsp));
    EXPECT_EQ(c.node_props, sizeof(xenhsa_node_props));
    EXPECT_EQ(c.map_req, sizeof(xenhsa_map_req));
    EXPECT_EQ(c.lend_rsp, sizeof(xenhsa_lend_rsp));
    EXPECT_EQ(c.queue_create_req, sizeof(xenhsa_queue_create_req));
    EXPECT_EQ(c.event_wait_req, sizeof(xenhsa_event_wait_req));
    EXPECT_EQ(c.notify_page, sizeof(xenhsa_notify_page));
    EXPECT_EQ(c.doorbell_page, sizeof(xenhsa_doorbell_page));
    EXPECT_EQ(c.map_gref_offset, offsetof(xenhsa_map_req, gref));
}

TEST(ProtoFromC, ValidationGivesTheSameVerdictInC) {
    EXPECT_EQ(xenhsa_c_encode_and_check_map(4, 4), XENHSA_STATUS_OK);
    EXPECT_EQ(xenhsa_c_encode_and_check_map(4, 3), XENHSA_STATUS_BAD_ARGUMENT);
    EXPECT_EQ(xenhsa_c_encode_and_check_map(0, 0), XENHSA_STATUS_BAD_ARGUMENT);
}

}  // namespace
