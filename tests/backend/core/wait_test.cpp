// EVENT_WAIT answered asynchronously (completions posted back to the io_context), its
// cancel, its quota, and what revoke does to pending waits.
#include "gpu_harness.hpp"

namespace xenhsa::backend::core::testing {
namespace {

xenhsa_event_wait_req wait_on(std::initializer_list<hsa::Handle> events, uint32_t timeout_ms,
                              bool all = false) {
    xenhsa_event_wait_req w{};
    w.count = static_cast<uint32_t>(events.size());
    w.flags = all ? XENHSA_WAIT_ALL : 0;
    w.timeout_ms = timeout_ms;
    uint32_t i = 0;
    for (hsa::Handle h : events) {
        w.event[i++] = h;
    }
    return w;
}

const Reply* async_for(const RequestsHarness& h, uint32_t seqno) {
    for (const Reply& r : h.async.replies) {
        if (r.seqno == seqno) {
            return &r;
        }
    }
    return nullptr;
}

TEST(Wait, AnsweredWhenAnEventFires) {
    GpuHarness h;
    const hsa::Handle a = h.event_ok();
    const hsa::Handle b = h.event_ok();
    EXPECT_FALSE(h.send(XENHSA_CMD_EVENT_WAIT, wait_on({a, b}, XENHSA_WAIT_INFINITE), 500));
    EXPECT_EQ(h.requests->pending_waits(), 1u);
    EXPECT_EQ(h.handle_cmd(XENHSA_CMD_EVENT_SET, b), XENHSA_STATUS_OK);
    ASSERT_TRUE(h.run_until([&] { return async_for(h, 500) != nullptr; }));
    const Reply* r = async_for(h, 500);
    EXPECT_EQ(r->status, XENHSA_STATUS_OK);
    ASSERT_EQ(r->len, sizeof(xenhsa_event_wait_rsp));
    EXPECT_EQ(payload_of<xenhsa_event_wait_rsp>(*r).signaled_mask, 0b10u);
    EXPECT_EQ(h.requests->pending_waits(), 0u);
}

TEST(Wait, TimesOut) {
    GpuHarness h;
    const hsa::Handle a = h.event_ok();
    EXPECT_FALSE(h.send(XENHSA_CMD_EVENT_WAIT, wait_on({a}, 1), 501));
    ASSERT_TRUE(h.run_until([&] { return async_for(h, 501) != nullptr; }));
    EXPECT_EQ(async_for(h, 501)->status, XENHSA_STATUS_TIMEOUT);
    EXPECT_EQ(async_for(h, 501)->len, 0u);
}

TEST(Wait, CancelAnswersTheWaitThenTheCancel) {
    GpuHarness h;
    const hsa::Handle a = h.event_ok();
    EXPECT_FALSE(h.send(XENHSA_CMD_EVENT_WAIT, wait_on({a}, XENHSA_WAIT_INFINITE), 502));
    xenhsa_event_wait_cancel_req c{};
    c.wait_seqno = 502;
    const std::size_t before = h.sink.replies.size();
    auto r = h.send(XENHSA_CMD_EVENT_WAIT_CANCEL, c, 503);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, XENHSA_STATUS_OK);
    ASSERT_EQ(h.sink.replies.size(), before + 2);
    EXPECT_EQ(h.sink.replies[before].seqno, 502u);
    EXPECT_EQ(h.sink.replies[before].status, XENHSA_STATUS_CANCELLED);
    EXPECT_EQ(h.requests->pending_waits(), 0u);
    // The wait is answered exactly once: its own "cancelled" completion finds nothing.
    h.gpu->teardown();  // joins the wait threads: every completion has been posted
    h.io.restart();
    h.io.poll();
    EXPECT_EQ(async_for(h, 502), nullptr);
    // A second cancel finds no pending wait.
    EXPECT_EQ(h.status(XENHSA_CMD_EVENT_WAIT_CANCEL, c), XENHSA_STATUS_BAD_ARGUMENT);
}

TEST(Wait, DuplicateSeqnoAndQuota) {
    HarnessOptions o;
    o.quotas.max_in_flight = 2;
    GpuHarness h(o);
    const hsa::Handle a = h.event_ok();
    EXPECT_FALSE(h.send(XENHSA_CMD_EVENT_WAIT, wait_on({a}, XENHSA_WAIT_INFINITE), 600));
    auto dup = h.send(XENHSA_CMD_EVENT_WAIT, wait_on({a}, XENHSA_WAIT_INFINITE), 600);
    ASSERT_TRUE(dup);
    EXPECT_EQ(dup->status, XENHSA_STATUS_BAD_ARGUMENT);
    EXPECT_FALSE(h.send(XENHSA_CMD_EVENT_WAIT, wait_on({a}, XENHSA_WAIT_INFINITE), 601));
    auto over = h.send(XENHSA_CMD_EVENT_WAIT, wait_on({a}, XENHSA_WAIT_INFINITE), 602);
    ASSERT_TRUE(over);
    EXPECT_EQ(over->status, XENHSA_STATUS_QUOTA);
    // A bad handle comes before the duplicate and the quota.
    auto bad = h.send(XENHSA_CMD_EVENT_WAIT, wait_on({a, 0x77}, XENHSA_WAIT_INFINITE), 600);
    ASSERT_TRUE(bad);
    EXPECT_EQ(bad->status, XENHSA_STATUS_BAD_HANDLE);
    EXPECT_EQ(h.requests->pending_waits(), 2u);
}

TEST(Wait, DestroyingTheEventCancelsTheWait) {
    GpuHarness h;
    const hsa::Handle a = h.event_ok();
    EXPECT_FALSE(h.send(XENHSA_CMD_EVENT_WAIT, wait_on({a}, XENHSA_WAIT_INFINITE), 700));
    EXPECT_EQ(h.handle_cmd(XENHSA_CMD_EVENT_DESTROY, a), XENHSA_STATUS_OK);
    ASSERT_TRUE(h.run_until([&] { return async_for(h, 700) != nullptr; }));
    EXPECT_EQ(async_for(h, 700)->status, XENHSA_STATUS_CANCELLED);
}

TEST(Wait, SessionEndDropsPendingWaitsWithoutAResponse) {
    GpuHarness h;
    const hsa::Handle a = h.event_ok();
    EXPECT_FALSE(h.send(XENHSA_CMD_EVENT_WAIT, wait_on({a}, XENHSA_WAIT_INFINITE), 800));
    EXPECT_FALSE(h.send(XENHSA_CMD_EVENT_WAIT, wait_on({a}, 60000), 801));
    h.requests->revoke_all(true);  // guest death / Closing, with waits in flight
    EXPECT_EQ(h.requests->pending_waits(), 0u);
    h.io.restart();
    h.io.poll();  // every completion the teardown produced has been posted by now
    EXPECT_TRUE(h.async.replies.empty());
}

TEST(Wait, OperatorRevokeAnswersPendingWaitsCancelled) {
    GpuHarness h;
    const hsa::Handle a = h.event_ok();
    EXPECT_FALSE(h.send(XENHSA_CMD_EVENT_WAIT, wait_on({a}, XENHSA_WAIT_INFINITE), 900));
    h.requests->revoke_all(false);
    ASSERT_TRUE(h.run_until([&] { return async_for(h, 900) != nullptr; }));
    EXPECT_EQ(async_for(h, 900)->status, XENHSA_STATUS_CANCELLED);
}

TEST(Wait, SessionDestroyedWithAWaitInFlight) {
    auto h = std::make_unique<GpuHarness>();
    const hsa::Handle a = h->event_ok();
    EXPECT_FALSE(h->send(XENHSA_CMD_EVENT_WAIT, wait_on({a}, XENHSA_WAIT_INFINITE), 1000));
    h.reset();  // GuestRequests, then GpuContext, then the io_context: no completion touches them
    SUCCEED();
}

}  // namespace
}  // namespace xenhsa::backend::core::testing
