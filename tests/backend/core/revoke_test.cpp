// Revoke triggers: one handle (the operator), everything (session end or operator), and
// the quota-breach path; the fixed order GPU half -> grants -> VA, seen across seams.
#include "gpu_harness.hpp"

namespace xenhsa::backend::core::testing {
namespace {

TEST(Revoke, MapWithAPinAndALiveQueueInTheFixedOrder) {
    GpuHarness h;
    const auto s = h.map_pin_queue(h.base);
    h.log.clear();

    ASSERT_TRUE(h.requests->revoke_handle(s.map));

    // 1. quiesce the queue, 2. unmap from the GPU, 3. unpin, 4. unmap the grants.
    const auto q = h.log.find("destroy_queue");
    const auto u = h.log.find("unmap_from_gpu");
    const auto d = h.log.find("deregister_user");
    const auto g = h.log.find("grant_unmap");
    ASSERT_NE(q, EventLog::npos);
    ASSERT_NE(u, EventLog::npos);
    ASSERT_NE(d, EventLog::npos);
    ASSERT_NE(g, EventLog::npos);
    EXPECT_LT(q, u);
    EXPECT_LT(u, d);
    EXPECT_LT(d, g);
    // 5. the VA range is reserved again.
    EXPECT_EQ(protection_at(at(h.base)), "---p");
    EXPECT_EQ(protection_at(at(h.base + 3 * 4096)), "---p");
    EXPECT_EQ(h.mapper.live_mappings(), 0u);
    EXPECT_EQ(h.kfd.live_queues(), 0u);
    EXPECT_EQ(h.kfd.registered(), 0u);

    // Every handle that named it is stale.
    EXPECT_EQ(h.handle_cmd(XENHSA_CMD_UNMAP, s.map), XENHSA_STATUS_BAD_HANDLE);
    EXPECT_EQ(h.handle_cmd(XENHSA_CMD_UNPIN, s.pin), XENHSA_STATUS_BAD_HANDLE);
    EXPECT_EQ(h.handle_cmd(XENHSA_CMD_QUEUE_DESTROY, s.queue), XENHSA_STATUS_BAD_HANDLE);
    const Stats st = h.requests->stats();
    EXPECT_EQ(st.mapped_pages, 0u);
    EXPECT_EQ(st.pinned_pages, 0u);
    EXPECT_EQ(st.queues, 0u);
    EXPECT_EQ(st.handles, 0u);

    // The guest learns that its queue is gone (once).
    ASSERT_EQ(h.notify_page->prod, 1u);
    EXPECT_EQ(h.notify_page->slot[0].type, XENHSA_NOTIFY_GPU_FAULT);
    EXPECT_EQ(h.notify_page->slot[0].handle, s.queue);
    EXPECT_EQ(h.notify_page->slot[0].arg0, 0u);

    // Idempotent: the handle is gone, a second revoke finds nothing.
    EXPECT_FALSE(h.requests->revoke_handle(s.map));
    // The range can be mapped again.
    EXPECT_EQ(h.status(XENHSA_CMD_MAP, h.map_req(h.base, 4, 40)), XENHSA_STATUS_OK);
}

TEST(Revoke, AMapWithoutGpuUsersOnlyLosesItsGrants) {
    GpuHarness h;
    const hsa::Handle m = h.map_ok(h.base, 2, 0);
    const hsa::Handle other = h.map_ok(h.base + 0x10000, 1, 5);
    const hsa::Handle p = h.pin_ok(h.base + 0x10000, 0x1000);
    ASSERT_TRUE(h.requests->revoke_handle(m));
    EXPECT_EQ(h.log.count("deregister_user"), 0u);  // the other MAP's PIN stays
    EXPECT_EQ(h.handle_cmd(XENHSA_CMD_UNPIN, p), XENHSA_STATUS_OK);
    EXPECT_EQ(h.handle_cmd(XENHSA_CMD_UNMAP, other), XENHSA_STATUS_OK);
    EXPECT_EQ(h.notify_page->prod, 0u);
}

TEST(Revoke, SessionEndReleasesEverythingInTeardownOrder) {
    std::vector<std::string> log;
    {
        GpuHarness h;
        const auto s = h.map_pin_queue(h.base);
        (void)s;
        h.event_ok();
        xenhsa_lend_req l{};
        l.va = h.base + 0x100000;
        l.npages = 1;
        ASSERT_EQ(h.status(XENHSA_CMD_LEND, l), XENHSA_STATUS_OK);
        h.log.clear();
        h.requests->revoke_all(true);
        log = h.log.entries();
        EXPECT_EQ(h.mapper.live_mappings(), 0u);
        EXPECT_EQ(h.sharer.live_shares(), 0u);
        EXPECT_EQ(h.kfd.live_queues(), 0u);
        EXPECT_EQ(h.notify_page->prod, 0u);  // session end: no notifications
        EXPECT_EQ(h.requests->stats().handles, 0u);
    }
    auto pos = [&](const std::string& prefix) {
        for (std::size_t i = 0; i < log.size(); ++i) {
            if (log[i].rfind(prefix, 0) == 0) {
                return i;
            }
        }
        return log.size();
    };
    const auto q = pos("destroy_queue");
    const auto e = pos("destroy_event");
    const auto u = pos("unmap_from_gpu");
    const auto d = pos("deregister_user");
    const auto g = pos("grant_unmap");
    const auto r = pos("share_revoke");
    ASSERT_LT(r, log.size());
    EXPECT_LT(q, e);
    EXPECT_LT(e, u);
    EXPECT_LT(u, d);
    EXPECT_LT(d, g);
    EXPECT_LT(d, r);
}

TEST(Revoke, OperatorRevokeAllKeepsTheConnection) {
    GpuHarness h;
    h.map_pin_queue(h.base);
    xenhsa_lend_req l{};
    l.va = h.base + 0x100000;
    l.npages = 2;
    auto lr = h.send(XENHSA_CMD_LEND, l);
    ASSERT_TRUE(lr && lr->status == XENHSA_STATUS_OK);
    const hsa::Handle lend = payload_of<xenhsa_lend_rsp>(*lr).handle;

    h.requests->revoke_all(false);
    EXPECT_EQ(h.mapper.live_mappings(), 0u);
    EXPECT_EQ(h.kfd.live_queues(), 0u);
    // The LEND is revoked, announced, and waits for the guest's acknowledgement.
    bool revoked = false;
    for (uint32_t i = 0; i < h.notify_page->prod; ++i) {
        revoked = revoked || (h.notify_page->slot[i].type == XENHSA_NOTIFY_REVOKED &&
                              h.notify_page->slot[i].handle == lend);
    }
    EXPECT_TRUE(revoked);
    EXPECT_EQ(h.status(XENHSA_CMD_LEND, l), XENHSA_STATUS_REVOKED);
    EXPECT_EQ(h.handle_cmd(XENHSA_CMD_UNMAP, lend), XENHSA_STATUS_OK);
    // Still connected; GPU work can start over.
    EXPECT_EQ(h.requests->state(), GuestRequests::State::connected);
    h.map_pin_queue(h.base);
    EXPECT_EQ(h.kfd.live_queues(), 1u);
}

TEST(Revoke, QuotaBreachRevokesTheNewestMaps) {
    GpuHarness h;
    const hsa::Handle a = h.map_ok(h.base, 2, 0);
    const hsa::Handle b = h.map_ok(h.base + 0x10000, 2, 2);
    const hsa::Handle c = h.map_ok(h.base + 0x20000, 2, 4);
    Quotas lower = h.requests->quotas();
    lower.max_map_pages = 3;
    EXPECT_EQ(h.requests->enforce_quotas(lower), 2u);
    EXPECT_EQ(h.requests->stats().mapped_pages, 2u);
    EXPECT_EQ(h.handle_cmd(XENHSA_CMD_UNMAP, c), XENHSA_STATUS_BAD_HANDLE);
    EXPECT_EQ(h.handle_cmd(XENHSA_CMD_UNMAP, b), XENHSA_STATUS_BAD_HANDLE);
    EXPECT_EQ(protection_at(at(h.base + 0x20000)), "---p");
    // The lower quota now refuses what it used to allow.
    EXPECT_EQ(h.status(XENHSA_CMD_MAP, h.map_req(h.base + 0x30000, 2, 10)), XENHSA_STATUS_QUOTA);
    EXPECT_EQ(h.status(XENHSA_CMD_MAP, h.map_req(h.base + 0x30000, 1, 10)), XENHSA_STATUS_OK);
    EXPECT_EQ(h.handle_cmd(XENHSA_CMD_UNMAP, a), XENHSA_STATUS_OK);
}

TEST(Revoke, LoweredGpuQuotasReachTheLiveSession) {
    GpuHarness h;
    h.event_ok();
    h.event_ok();
    Quotas lower = h.requests->quotas();
    lower.max_events = 2;
    EXPECT_EQ(h.requests->enforce_quotas(lower), 0u);  // GPU objects are not revoked...
    EXPECT_EQ(h.requests->stats().events, 2u);
    xenhsa_event_create_req e{};
    e.node = kGpuNode;
    EXPECT_EQ(h.status(XENHSA_CMD_EVENT_CREATE, e), XENHSA_STATUS_QUOTA);  // ...but held to it
    lower.max_events = 3;
    EXPECT_EQ(h.requests->enforce_quotas(lower), 0u);
    EXPECT_EQ(h.status(XENHSA_CMD_EVENT_CREATE, e), XENHSA_STATUS_OK);
}

TEST(Revoke, QuotaBreachOfAMapUnderAQueueTakesTheQueueToo) {
    GpuHarness h;
    h.map_ok(h.base + 0x100000, 1, 30);
    const auto s = h.map_pin_queue(h.base);  // the newest MAP
    Quotas lower = h.requests->quotas();
    lower.max_map_pages = 1;
    EXPECT_EQ(h.requests->enforce_quotas(lower), 1u);
    EXPECT_EQ(h.kfd.live_queues(), 0u);
    EXPECT_EQ(h.handle_cmd(XENHSA_CMD_QUEUE_DESTROY, s.queue), XENHSA_STATUS_BAD_HANDLE);
    EXPECT_EQ(h.requests->stats().mapped_pages, 1u);
}

}  // namespace
}  // namespace xenhsa::backend::core::testing
