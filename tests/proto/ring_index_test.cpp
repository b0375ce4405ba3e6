// Ring index arithmetic: notification suppression, the final check, hostile indices.
#include <gtest/gtest.h>
#include <xenhsa/proto.h>

namespace {

TEST(ProtoRingIndex, PublishNotifiesOnlyWhenTheConsumerWaitsInRange) {
    xenhsa_sring s{};
    s.req_event = 1;  // consumer asleep, wants a kick at the first request
    EXPECT_TRUE(xenhsa_ring_publish(&s.req_prod, &s.req_event, 0, 1));
    EXPECT_EQ(s.req_prod, 1u);
    // Consumer has not re-armed: a busy producer does not kick again.
    EXPECT_FALSE(xenhsa_ring_publish(&s.req_prod, &s.req_event, 1, 4));
    // Consumer re-armed at 5: publishing 4 -> 7 crosses it.
    s.req_event = 5;
    EXPECT_TRUE(xenhsa_ring_publish(&s.req_prod, &s.req_event, 4, 7));
}

TEST(ProtoRingIndex, PublishIsCorrectAcrossCounterWraparound) {
    xenhsa_sring s{};
    s.req_event = 0xFFFFFFFFu;
    EXPECT_TRUE(xenhsa_ring_publish(&s.req_prod, &s.req_event, 0xFFFFFFFEu, 1));
    s.req_event = 2;
    EXPECT_FALSE(xenhsa_ring_publish(&s.req_prod, &s.req_event, 0xFFFFFFFEu, 1));
}

TEST(ProtoRingIndex, FinalCheckArmsTheEventWhenIdle) {
    xenhsa_sring s{};
    s.req_prod = 3;
    EXPECT_TRUE(xenhsa_ring_final_check(&s.req_prod, &s.req_event, 2)) << "work pending";
    EXPECT_EQ(s.req_event, 0u) << "no arming while there is work";
    EXPECT_FALSE(xenhsa_ring_final_check(&s.req_prod, &s.req_event, 3));
    EXPECT_EQ(s.req_event, 4u) << "armed at cons + 1";
    // A producer that publishes after the arming sees it and kicks: no lost wake-up.
    EXPECT_TRUE(xenhsa_ring_publish(&s.req_prod, &s.req_event, 3, 4));
}

TEST(ProtoRingIndex, ProducerRunningPastTheRingIsDetected) {
    const uint32_t slots = XENHSA_RING_SLOTS(0);
    EXPECT_FALSE(xenhsa_ring_req_prod_overflow(100 + slots, 100, slots));
    EXPECT_TRUE(xenhsa_ring_req_prod_overflow(100 + slots + 1, 100, slots));
    EXPECT_TRUE(xenhsa_ring_req_prod_overflow(99, 100, slots)) << "behind the responses";
    EXPECT_FALSE(xenhsa_ring_req_prod_overflow(5, 0xFFFFFFF8u, slots)) << "wrapped, in range";
}

TEST(ProtoRingIndex, ConsumerStopsWhenNoResponseSlotIsLeft) {
    const uint32_t slots = XENHSA_RING_SLOTS(1);
    EXPECT_FALSE(xenhsa_ring_req_cons_overflow(10 + slots - 1, 10, slots));
    EXPECT_TRUE(xenhsa_ring_req_cons_overflow(10 + slots, 10, slots));
}

TEST(ProtoRingIndex, FrontendDetectsResponsesItNeverAskedFor) {
    // Frontend published 8 requests, consumed 2 responses: at most 6 more may come.
    EXPECT_FALSE(xenhsa_ring_rsp_prod_overflow(8, 8, 2));
    EXPECT_TRUE(xenhsa_ring_rsp_prod_overflow(9, 8, 2));
    EXPECT_TRUE(xenhsa_ring_rsp_prod_overflow(1, 8, 2)) << "responses index went backwards";
}

}  // namespace
