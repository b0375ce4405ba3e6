// The guest's ring end: flow control, copy-once responses, a misbehaving backend.
#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <vector>
#include <xenhsa/frontend/front_ring.hpp>

namespace {

using xenhsa::frontend::FrontRing;

class FrontRingTest : public ::testing::Test {
protected:
    static constexpr uint32_t kOrder = 0;

    xenhsa_sring* shared() { return reinterpret_cast<xenhsa_sring*>(pages_.data()); }
    std::byte* slot(uint32_t i) { return pages_.data() + xenhsa_ring_slot_offset(i, slots()); }
    static uint32_t slots() { return XENHSA_RING_SLOTS(kOrder); }

    // What a backend does: answer request `i` with `status` and publish.
    void respond(uint32_t i, uint32_t seqno, uint32_t status) {
        xenhsa_encode_rsp(slot(i), seqno, status, nullptr, 0);
        xenhsa_index_store(&shared()->rsp_prod, i + 1);
    }

    alignas(64) std::array<std::byte, XENHSA_RING_BYTES(kOrder)> pages_{};
    FrontRing ring_{pages_, kOrder};
};

TEST_F(FrontRingTest, RequestReachesTheSharedSlotOnlyAfterPublish) {
    const xenhsa_handle_req req{5};
    ASSERT_TRUE(ring_.push(XENHSA_CMD_UNMAP, 11, std::as_bytes(std::span(&req, 1))));
    EXPECT_EQ(shared()->req_prod, 0u);
    ring_.publish();
    EXPECT_EQ(shared()->req_prod, 1u);
    xenhsa_req_slot copy{};
    xenhsa_copy_req(&copy, slot(0));
    EXPECT_EQ(copy.hdr.cmd, uint32_t{XENHSA_CMD_UNMAP});
    EXPECT_EQ(copy.hdr.seqno, 11u);
    EXPECT_EQ(xenhsa_check_req(&copy), XENHSA_STATUS_OK);
}

TEST_F(FrontRingTest, ResponsesArePoppedInOrderAndFreeTheirCredit) {
    ASSERT_TRUE(ring_.push(XENHSA_CMD_EVENT_SET, 1, {}));
    ring_.publish();
    EXPECT_EQ(ring_.outstanding(), 1u);
    auto none = ring_.pop();
    ASSERT_TRUE(none);
    EXPECT_FALSE(none.value().has_value());
    respond(0, 1, XENHSA_STATUS_BAD_HANDLE);
    auto rsp = ring_.pop();
    ASSERT_TRUE(rsp);
    ASSERT_TRUE(rsp.value().has_value());
    EXPECT_EQ(rsp.value()->hdr.status, uint32_t{XENHSA_STATUS_BAD_HANDLE});
    EXPECT_EQ(ring_.outstanding(), 0u);
}

TEST_F(FrontRingTest, FullRingRefusesMoreRequests) {
    for (uint32_t i = 0; i < slots(); ++i) {
        ASSERT_TRUE(ring_.push(XENHSA_CMD_EVENT_SET, i, {}));
    }
    auto refused = ring_.push(XENHSA_CMD_EVENT_SET, 99, {});
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error(), std::errc::no_buffer_space);
}

TEST_F(FrontRingTest, OversizedPayloadIsRefused) {
    std::vector<std::byte> big(XENHSA_SLOT_PAYLOAD_MAX + 1);
    auto refused = ring_.push(XENHSA_CMD_MAP, 1, big);
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error(), std::errc::message_size);
    EXPECT_EQ(ring_.outstanding(), 0u);
}

TEST_F(FrontRingTest, BackendAnsweringUnaskedRequestsIsAProtocolError) {
    ASSERT_TRUE(ring_.push(XENHSA_CMD_EVENT_SET, 1, {}));
    ring_.publish();
    xenhsa_index_store(&shared()->rsp_prod, 2);  // two responses for one request
    auto broken = ring_.pop();
    ASSERT_FALSE(broken);
    EXPECT_EQ(broken.error(), std::errc::protocol_error);
    // Stays broken even if the backend "fixes" the index.
    xenhsa_index_store(&shared()->rsp_prod, 1);
    EXPECT_FALSE(ring_.pop());
}

TEST_F(FrontRingTest, NotifiesOnlyWhenTheBackendArmedItsEvent) {
    shared()->req_event = 1;
    ASSERT_TRUE(ring_.push(XENHSA_CMD_EVENT_SET, 1, {}));
    EXPECT_TRUE(ring_.publish());
    ASSERT_TRUE(ring_.push(XENHSA_CMD_EVENT_SET, 2, {}));
    EXPECT_FALSE(ring_.publish()) << "backend busy: no kick";
}

TEST_F(FrontRingTest, FinalCheckArmsTheResponseEventPastWhatWasConsumed) {
    EXPECT_EQ(shared()->rsp_event, 1u) << "initialised as SHARED_RING_INIT does";
    ASSERT_TRUE(ring_.push(XENHSA_CMD_EVENT_SET, 1, {}));
    ring_.publish();
    respond(0, 1, XENHSA_STATUS_OK);
    EXPECT_TRUE(ring_.final_check()) << "a response is waiting";
    ASSERT_TRUE(ring_.pop());
    EXPECT_FALSE(ring_.final_check());
    EXPECT_EQ(shared()->rsp_event, 2u);
}

TEST(FrontRingCtor, RejectsPagesSmallerThanTheOrder) {
    std::array<std::byte, XENHSA_PAGE_SIZE> one_page{};
    EXPECT_THROW(FrontRing(one_page, 1), std::invalid_argument);
    EXPECT_THROW(FrontRing(one_page, XENHSA_RING_MAX_ORDER + 1), std::invalid_argument);
}

}  // namespace
