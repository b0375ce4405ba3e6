// LEND, its UNMAP, and its revoke with the REVOKED notification (§5.3, §5.6, §6).
#include <cstring>

#include "requests_harness.hpp"

namespace xenhsa::backend::core::testing {
namespace {

xenhsa_lend_req lend_req(uint64_t va, uint32_t npages, bool rw = true) {
    xenhsa_lend_req r{};
    r.va = va;
    r.npages = npages;
    r.flags = rw ? XENHSA_MAP_RW : 0;
    return r;
}

TEST(Lend, InlineGrantsAtTheGuestsAddress) {
    RequestsHarness h;
    const uint64_t va = h.connect() + 0x40000;
    const xenhsa_lend_req req = lend_req(va, 3);
    auto r = h.send(XENHSA_CMD_LEND, req);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, XENHSA_STATUS_OK);
    ASSERT_EQ(r->len, sizeof(xenhsa_lend_rsp));
    const auto rsp = payload_of<xenhsa_lend_rsp>(*r);
    EXPECT_EQ(xenhsa_check_lend_rsp(&rsp, &req), XENHSA_STATUS_OK);
    EXPECT_EQ(rsp.flags, XENHSA_MAP_RW);
    EXPECT_EQ(rsp.nrefs, 3u);
    EXPECT_EQ(h.sharer.last_peer(), kGuestDomId);
    // Backend VA == guest VA: the backend's writes land in the lent pages.
    std::memcpy(at(va + 4096), "lent", 5);
    const auto page = h.sharer.read_page(rsp.gref[1]);
    ASSERT_FALSE(page.empty());
    EXPECT_EQ(std::memcmp(page.data(), "lent", 5), 0);
    EXPECT_EQ(h.requests->stats().lent_pages, 3u);
}

TEST(Lend, LargeLendIsDescribedByIndirectPages) {
    RequestsHarness h;
    const uint64_t va = h.connect() + 0x1000000;
    const xenhsa_lend_req req = lend_req(va, 1100, false);
    auto r = h.send(XENHSA_CMD_LEND, req);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, XENHSA_STATUS_OK);
    const auto rsp = payload_of<xenhsa_lend_rsp>(*r);
    EXPECT_EQ(xenhsa_check_lend_rsp(&rsp, &req), XENHSA_STATUS_OK);
    EXPECT_EQ(rsp.flags, XENHSA_MAP_INDIRECT);
    ASSERT_EQ(rsp.nrefs, 2u);
    const auto first = h.sharer.read_page(rsp.gref[0]);
    const auto second = h.sharer.read_page(rsp.gref[1]);
    ASSERT_EQ(first.size(), 4096u);
    ASSERT_EQ(second.size(), 4096u);
    const auto* refs1 = reinterpret_cast<const xen::GrantRef*>(second.data());
    // 1100 - 1024 = 76 refs on the second page, zero after them.
    for (uint32_t i = 0; i < 1024; ++i) {
        if (i < 76) {
            EXPECT_NE(refs1[i], 0u) << i;
            EXPECT_FALSE(h.sharer.read_page(refs1[i]).empty()) << i;  // a real lent page
        } else {
            ASSERT_EQ(refs1[i], 0u) << i;
        }
    }
}

TEST(Lend, FeatureGates) {
    RequestsHarness h;
    const uint64_t va = h.connect(XENHSA_FEATURE_LEND);  // no INDIRECT
    EXPECT_EQ(h.status(XENHSA_CMD_LEND, lend_req(va, 52)), XENHSA_STATUS_OK);
    EXPECT_EQ(h.status(XENHSA_CMD_LEND, lend_req(va + 0x100000, 53)), XENHSA_STATUS_UNSUPPORTED);

    RequestsHarness no_lend;
    const uint64_t va2 = no_lend.connect(XENHSA_FEATURE_INDIRECT);
    EXPECT_EQ(no_lend.status(XENHSA_CMD_LEND, lend_req(va2, 1)), XENHSA_STATUS_UNSUPPORTED);

    HarnessOptions o;
    o.sharer = false;  // no sharing seam: LEND is never granted
    RequestsHarness unshared(o);
    const uint64_t va3 = unshared.connect();
    EXPECT_EQ(unshared.requests->features() & XENHSA_FEATURE_LEND, 0u);
    EXPECT_EQ(unshared.status(XENHSA_CMD_LEND, lend_req(va3, 1)), XENHSA_STATUS_UNSUPPORTED);
}

TEST(Lend, ShareFailureIsNoMemoryWithNothingLeft) {
    RequestsHarness h;
    const uint64_t va = h.connect();
    h.sharer.fail_shares = 1;
    EXPECT_EQ(h.status(XENHSA_CMD_LEND, lend_req(va, 2)), XENHSA_STATUS_NO_MEMORY);
    EXPECT_EQ(h.sharer.live_shares(), 0u);
    EXPECT_EQ(protection_at(at(va)), "---p");
    // The listing (indirect) pages fail after the data pages were shared: those go too.
    h.sharer.fail_nth_share = 2;
    EXPECT_EQ(h.status(XENHSA_CMD_LEND, lend_req(va, 60)), XENHSA_STATUS_NO_MEMORY);
    EXPECT_EQ(h.sharer.live_shares(), 0u);
    EXPECT_EQ(protection_at(at(va)), "---p");
    EXPECT_EQ(h.requests->stats().lent_pages, 0u);
    EXPECT_EQ(h.requests->stats().handles, 0u);
    EXPECT_EQ(h.status(XENHSA_CMD_LEND, lend_req(va, 60)), XENHSA_STATUS_OK);
}

TEST(Lend, QuotaAndAddressChecks) {
    HarnessOptions o;
    o.quotas.max_lend_pages = 4;
    RequestsHarness h(o);
    const uint64_t base = h.connect();
    EXPECT_EQ(h.status(XENHSA_CMD_LEND, lend_req(base, 3)), XENHSA_STATUS_OK);
    EXPECT_EQ(h.status(XENHSA_CMD_LEND, lend_req(base + 0x10000, 2)), XENHSA_STATUS_QUOTA);
    EXPECT_EQ(h.status(XENHSA_CMD_LEND, lend_req(base + 0x1000, 1)), XENHSA_STATUS_BAD_ADDRESS);
    EXPECT_EQ(h.status(XENHSA_CMD_MAP, h.map_req(base + 0x2000, 1, 0)), XENHSA_STATUS_BAD_ADDRESS);
    EXPECT_EQ(h.status(XENHSA_CMD_LEND, lend_req(base - 0x1000, 1)), XENHSA_STATUS_BAD_ADDRESS);
}

TEST(Lend, UnmapEndsSharingAndScrubs) {
    RequestsHarness h;
    const uint64_t va = h.connect();
    auto r = h.send(XENHSA_CMD_LEND, lend_req(va, 2));
    const auto rsp = payload_of<xenhsa_lend_rsp>(*r);
    std::memset(at(va), 0x5A, 8192);
    EXPECT_EQ(h.handle_cmd(XENHSA_CMD_UNMAP, rsp.handle), XENHSA_STATUS_OK);
    EXPECT_EQ(h.sharer.live_shares(), 0u);
    EXPECT_NE(h.log.find("share_end"), EventLog::npos);
    EXPECT_EQ(protection_at(at(va)), "---p");
    EXPECT_EQ(h.requests->stats().lent_pages, 0u);
    EXPECT_EQ(h.handle_cmd(XENHSA_CMD_UNMAP, rsp.handle), XENHSA_STATUS_BAD_HANDLE);
}

TEST(Lend, UnmapWhileTheGuestStillMapsFallsBackToRevoke) {
    RequestsHarness h;
    const uint64_t va = h.connect();
    const auto rsp = payload_of<xenhsa_lend_rsp>(*h.send(XENHSA_CMD_LEND, lend_req(va, 1)));
    h.sharer.guest_maps.insert(rsp.gref[0]);
    EXPECT_EQ(h.handle_cmd(XENHSA_CMD_UNMAP, rsp.handle), XENHSA_STATUS_OK);
    EXPECT_NE(h.log.find("share_revoke"), EventLog::npos);
    EXPECT_EQ(h.sharer.live_shares(), 0u);
}

TEST(Lend, RevokePostsRevokedAndTheRangeAnswersRevokedUntilAcknowledged) {
    RequestsHarness h;
    const uint64_t base = h.connect();
    const uint64_t va = base + 0x80000;
    const auto rsp = payload_of<xenhsa_lend_rsp>(*h.send(XENHSA_CMD_LEND, lend_req(va, 4)));
    std::memset(at(va), 0x77, 4 * 4096);

    ASSERT_TRUE(h.requests->revoke_handle(rsp.handle));
    EXPECT_NE(h.log.find("share_revoke"), EventLog::npos);
    // REVOKED on the notify page: handle, va, npages.
    ASSERT_EQ(h.notify_page->prod, 1u);
    const xenhsa_notify& n = h.notify_page->slot[0];
    EXPECT_EQ(n.type, XENHSA_NOTIFY_REVOKED);
    EXPECT_EQ(n.handle, rsp.handle);
    EXPECT_EQ(n.arg0, va);
    EXPECT_EQ(n.arg1, 4u);
    // Revoke is idempotent: no second record.
    EXPECT_TRUE(h.requests->revoke_handle(rsp.handle));
    EXPECT_EQ(h.notify_page->prod, 1u);

    // Requests naming the range get REVOKED.
    EXPECT_EQ(h.status(XENHSA_CMD_MAP, h.map_req(va + 0x1000, 1, 0)), XENHSA_STATUS_REVOKED);
    EXPECT_EQ(h.status(XENHSA_CMD_LEND, lend_req(va - 0x1000, 2)), XENHSA_STATUS_REVOKED);
    xenhsa_pin_req pin{};
    pin.va = va;
    pin.size = 4096;
    EXPECT_EQ(h.status(XENHSA_CMD_PIN, pin), XENHSA_STATUS_REVOKED);
    xenhsa_alloc_req alloc{};
    alloc.va = va;
    alloc.size = 4096;
    alloc.node = 1;
    EXPECT_EQ(h.status(XENHSA_CMD_ALLOC, alloc), XENHSA_STATUS_REVOKED);
    // Elsewhere is fine.
    EXPECT_EQ(h.status(XENHSA_CMD_MAP, h.map_req(va + 0x10000, 1, 0)), XENHSA_STATUS_OK);

    // The acknowledgement.
    EXPECT_EQ(h.handle_cmd(XENHSA_CMD_UNMAP, rsp.handle), XENHSA_STATUS_OK);
    EXPECT_EQ(h.status(XENHSA_CMD_MAP, h.map_req(va, 1, 1)), XENHSA_STATUS_OK);
    EXPECT_EQ(h.requests->stats().lent_pages, 0u);
}

TEST(Lend, RevokedNotificationsAreNeverDroppedWhenThePageIsFull) {
    RequestsHarness h;
    const uint64_t base = h.connect();
    std::vector<hsa::Handle> lends;
    for (uint32_t i = 0; i < 70; ++i) {
        auto r = h.send(XENHSA_CMD_LEND, lend_req(base + i * 0x1000ull, 1));
        ASSERT_TRUE(r && r->status == XENHSA_STATUS_OK);
        lends.push_back(payload_of<xenhsa_lend_rsp>(*r).handle);
    }
    for (hsa::Handle l : lends) {
        ASSERT_TRUE(h.requests->revoke_handle(l));
    }
    EXPECT_EQ(h.notify_page->prod, 64u);  // the guest has consumed nothing
    EXPECT_EQ(h.requests->notify().backlog(), 6u);
    EXPECT_FALSE(h.requests->notify().overflowed());
    // The guest consumes everything published; the backlog follows, in order.
    h.notify_page->cons = 64;
    h.requests->notify().flush();
    EXPECT_EQ(h.notify_page->prod, 70u);
    for (uint32_t i = 64; i < 70; ++i) {
        EXPECT_EQ(h.notify_page->slot[i % 64].handle, lends[i]) << i;
    }
    for (uint32_t i = 6; i < 64; ++i) {
        EXPECT_EQ(h.notify_page->slot[i].handle, lends[i]) << i;
    }
}

TEST(Lend, QuotaBreachRevokesTheNewestLends) {
    RequestsHarness h;
    const uint64_t base = h.connect();
    std::vector<hsa::Handle> lends;
    for (uint32_t i = 0; i < 3; ++i) {
        auto r = h.send(XENHSA_CMD_LEND, lend_req(base + i * 0x10000ull, 2));
        lends.push_back(payload_of<xenhsa_lend_rsp>(*r).handle);
    }
    Quotas lower = h.requests->quotas();
    lower.max_lend_pages = 3;
    EXPECT_EQ(h.requests->enforce_quotas(lower), 2u);
    ASSERT_EQ(h.notify_page->prod, 2u);
    EXPECT_EQ(h.notify_page->slot[0].handle, lends[2]);
    EXPECT_EQ(h.notify_page->slot[1].handle, lends[1]);
    // New LENDs are refused by the lower quota.
    EXPECT_EQ(h.status(XENHSA_CMD_LEND, lend_req(base + 0x100000, 2)), XENHSA_STATUS_QUOTA);
}

}  // namespace
}  // namespace xenhsa::backend::core::testing
