// The ring end of the backend against the guest's FrontRing, with a handler that answers
// OK with the command's response length.
#include <gtest/gtest.h>
#include <xenhsa/proto.h>

#include <cstring>
#include <vector>
#include <xenhsa/backend/core/ring_server.hpp>
#include <xenhsa/frontend/front_ring.hpp>

namespace xenhsa::backend::core {
namespace {

struct Echo final : RequestHandler {
    void handle(const xenhsa_req_slot& copy, ReplySink& sink) noexcept override {
        seen.push_back(copy);
        const uint32_t status = xenhsa_check_req(&copy);
        if (hold_waits && copy.hdr.cmd == XENHSA_CMD_EVENT_WAIT && status == XENHSA_STATUS_OK) {
            held.push_back(copy.hdr.seqno);
            return;  // answered later
        }
        sink.reply(make_reply(copy.hdr.cmd, copy.hdr.seqno, status));
    }
    std::vector<xenhsa_req_slot> seen;
    std::vector<uint32_t> held;
    bool hold_waits = false;
};

class RingServerTest : public ::testing::Test {
protected:
    void SetUp() override {
        pages.resize(XENHSA_RING_BYTES(0));
        front = std::make_unique<frontend::FrontRing>(pages, 0);
        auto r = RingServer::attach(pages, 0, echo, [this] { ++kicks; });
        ASSERT_TRUE(r);
        ring = std::move(r).value();
    }
    void push(uint32_t cmd, uint32_t seqno) {
        xenhsa_handle_req h{};
        h.handle = 1;
        ASSERT_TRUE(front->push(cmd, seqno, std::as_bytes(std::span(&h, 1))));
    }
    xenhsa_sring* sring() { return reinterpret_cast<xenhsa_sring*>(pages.data()); }

    std::vector<std::byte> pages;
    std::unique_ptr<frontend::FrontRing> front;
    Echo echo;
    std::unique_ptr<RingServer> ring;
    int kicks = 0;
};

TEST_F(RingServerTest, AnswersAndArmsTheEventIndexBeforeSleeping) {
    push(XENHSA_CMD_UNMAP, 41);
    front->publish();
    EXPECT_EQ(ring->serve(64), RingServer::Pass::idle);
    EXPECT_EQ(kicks, 1);  // rsp_event starts at 1
    EXPECT_EQ(sring()->req_event, 2u);
    auto rsp = front->pop();
    ASSERT_TRUE(rsp);
    ASSERT_TRUE(rsp.value());
    EXPECT_EQ(rsp.value()->hdr.seqno, 41u);
    EXPECT_EQ(rsp.value()->hdr.status, XENHSA_STATUS_OK);
}

TEST_F(RingServerTest, APollingPassLeavesTheEventIndexSoTheGuestDoesNotKick) {
    push(XENHSA_CMD_UNMAP, 1);
    front->publish();  // req_event starts at 1: this one kicks
    EXPECT_EQ(ring->serve(64, false), RingServer::Pass::drained);
    EXPECT_EQ(sring()->req_event, 1u);
    EXPECT_FALSE(ring->requests_waiting());
    // The guest's next request while the backend polls: no kick asked, and polling sees it.
    push(XENHSA_CMD_UNMAP, 2);
    EXPECT_FALSE(front->publish());
    EXPECT_TRUE(ring->requests_waiting());
    EXPECT_EQ(ring->arm(), RingServer::Pass::more);  // seen by the final check
    EXPECT_EQ(ring->serve(64, false), RingServer::Pass::drained);
    // Polling gave up: arm() catches up with req_event and the next request kicks.
    EXPECT_EQ(ring->arm(), RingServer::Pass::idle);
    EXPECT_EQ(sring()->req_event, 3u);
    push(XENHSA_CMD_UNMAP, 3);
    EXPECT_TRUE(front->publish());
    EXPECT_EQ(echo.seen.size(), 2u);
}

TEST_F(RingServerTest, ResponseSlotIsZeroPastThePayload) {
    push(XENHSA_CMD_UNMAP, 1);
    front->publish();
    // Garbage where the response will go (the request slot it reuses).
    std::memset(pages.data() + xenhsa_ring_slot_offset(0, 16) + 16, 0xEE, 232);
    ring->serve(64);
    const std::byte* slot = pages.data() + xenhsa_ring_slot_offset(0, 16);
    for (std::size_t i = 16; i < XENHSA_SLOT_SIZE; ++i) {
        ASSERT_EQ(slot[i], std::byte{0}) << i;
    }
}

TEST_F(RingServerTest, MalformedRequestsAreAnsweredWithTheirSeqno) {
    xenhsa_req_slot raw{};
    raw.hdr.cmd = 77;
    raw.hdr.len = 3;
    raw.hdr.seqno = 9;
    ASSERT_TRUE(front->push_raw(raw));
    front->publish();
    ring->serve(64);
    auto rsp = front->pop();
    ASSERT_TRUE(rsp && rsp.value());
    EXPECT_EQ(rsp.value()->hdr.seqno, 9u);
    EXPECT_EQ(rsp.value()->hdr.status, XENHSA_STATUS_BAD_COMMAND);
    EXPECT_EQ(rsp.value()->hdr.len, 0u);
}

TEST_F(RingServerTest, BudgetBoundsOnePass) {
    for (uint32_t i = 0; i < 10; ++i) {
        push(XENHSA_CMD_UNMAP, i + 1);
    }
    front->publish();
    EXPECT_EQ(ring->serve(4), RingServer::Pass::more);
    EXPECT_EQ(echo.seen.size(), 4u);
    EXPECT_EQ(sring()->rsp_prod, 4u);
    EXPECT_EQ(ring->serve(4), RingServer::Pass::more);
    EXPECT_EQ(ring->serve(4), RingServer::Pass::idle);
    EXPECT_EQ(echo.seen.size(), 10u);
}

TEST_F(RingServerTest, EachSlotIsReadOnceEvenIfTheGuestRewritesIt) {
    push(XENHSA_CMD_UNMAP, 5);
    front->publish();
    ring->serve(64);
    // The guest rewrites the consumed slot and republishes the same index: nothing new.
    std::memset(pages.data() + xenhsa_ring_slot_offset(0, 16), 0x11, 16);
    EXPECT_EQ(ring->serve(64), RingServer::Pass::idle);
    EXPECT_EQ(echo.seen.size(), 1u);
}

TEST_F(RingServerTest, ProducerPastTheRingDisconnects) {
    front->force_req_prod(17);  // 16 slots, nothing answered yet
    EXPECT_EQ(ring->serve(64), RingServer::Pass::disconnect);
    EXPECT_TRUE(ring->disconnected());
    EXPECT_TRUE(echo.seen.empty());
    EXPECT_EQ(sring()->rsp_prod, 0u);
    front->force_req_prod(1);
    EXPECT_EQ(ring->serve(64), RingServer::Pass::disconnect);  // the ring stays dead
    EXPECT_TRUE(echo.seen.empty());
}

// fe_alive (2.7): the frontend's grant driver clears it when the frontend's process dies.
TEST_F(RingServerTest, AClearedFeAliveIsTheFrontendsDeath) {
    EXPECT_EQ(ring->serve(64), RingServer::Pass::idle);  // never set: an older frontend
    xenhsa_index_store(&sring()->fe_alive, 1);
    push(XENHSA_CMD_UNMAP, 5);
    front->publish();
    EXPECT_EQ(ring->serve(64), RingServer::Pass::idle);
    EXPECT_EQ(echo.seen.size(), 1u);
    xenhsa_index_store(&sring()->fe_alive, 0);
    push(XENHSA_CMD_UNMAP, 6);
    front->publish();
    EXPECT_EQ(ring->serve(64), RingServer::Pass::frontend_gone);
    EXPECT_TRUE(ring->disconnected());
    EXPECT_EQ(echo.seen.size(), 1u) << "nothing of a dead frontend is served";
}

TEST_F(RingServerTest, ProducerGoingBackwardsDisconnects) {
    push(XENHSA_CMD_UNMAP, 1);
    front->publish();
    ring->serve(64);
    front->force_req_prod(0xFFFFFFF0u);  // "behind": far past the ring in unsigned terms
    EXPECT_EQ(ring->serve(64), RingServer::Pass::disconnect);
}

TEST_F(RingServerTest, PendingWaitsHoldTheirSlotsAndOneMoreDisconnects) {
    echo.hold_waits = true;
    xenhsa_event_wait_req w{};
    w.count = 1;
    w.event[0] = 1;
    for (uint32_t i = 0; i < 16; ++i) {
        ASSERT_TRUE(front->push(XENHSA_CMD_EVENT_WAIT, 100 + i, std::as_bytes(std::span(&w, 1))));
    }
    front->publish();
    EXPECT_EQ(ring->serve(64), RingServer::Pass::idle);
    EXPECT_EQ(echo.held.size(), 16u);
    // A broken frontend publishes one more: no slot is left for its response.
    xenhsa_sring* s = sring();
    xenhsa_index_store(&s->req_prod, 17);
    EXPECT_EQ(ring->serve(64), RingServer::Pass::disconnect);
}

TEST_F(RingServerTest, LateAnswerIsPublishedAtOnce) {
    echo.hold_waits = true;
    xenhsa_event_wait_req w{};
    w.count = 1;
    w.event[0] = 1;
    ASSERT_TRUE(front->push(XENHSA_CMD_EVENT_WAIT, 7, std::as_bytes(std::span(&w, 1))));
    front->publish();
    ring->serve(64);
    EXPECT_EQ(sring()->rsp_prod, 0u);
    ring->reply(make_reply(XENHSA_CMD_EVENT_WAIT, 7, XENHSA_STATUS_TIMEOUT));
    EXPECT_EQ(sring()->rsp_prod, 1u);
    auto rsp = front->pop();
    ASSERT_TRUE(rsp && rsp.value());
    EXPECT_EQ(rsp.value()->hdr.status, XENHSA_STATUS_TIMEOUT);
}

TEST_F(RingServerTest, NoKickWhenTheGuestDidNotAsk) {
    sring()->rsp_event = 1000;  // far ahead: the guest is busy and polls
    push(XENHSA_CMD_UNMAP, 1);
    front->publish();
    ring->serve(64);
    EXPECT_EQ(kicks, 0);
    EXPECT_EQ(sring()->rsp_prod, 1u);
}

TEST(RingServerAttach, RejectsShortPages) {
    struct Null final : RequestHandler {
        void handle(const xenhsa_req_slot&, ReplySink&) noexcept override {}
    } null;
    std::vector<std::byte> small(4096);
    EXPECT_FALSE(RingServer::attach(small, 1, null, {}));
    EXPECT_FALSE(RingServer::attach(small, 4, null, {}));
}

}  // namespace
}  // namespace xenhsa::backend::core
