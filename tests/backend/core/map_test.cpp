// MAP and UNMAP (docs/protocol.md §5.4-5.5), handles, quotas.
#include <cstring>
#include <vector>

#include "requests_harness.hpp"

namespace xenhsa::backend::core::testing {
namespace {

TEST(Map, InlinePagesAppearAtTheGuestsAddress) {
    RequestsHarness h;
    const uint64_t base = h.connect();
    const uint64_t va = base + 0x100000;
    std::memcpy(h.memory.page(10), "hello", 6);
    std::memcpy(h.memory.page(11), "world", 6);
    const hsa::Handle handle = h.map_ok(va, 2, 10);
    ASSERT_NE(handle, 0u);
    EXPECT_STREQ(static_cast<const char*>(at(va)), "hello");
    EXPECT_STREQ(static_cast<const char*>(at(va + 4096)), "world");
    // Shared memory: the backend's writes are the guest's.
    std::memcpy(at(va), "HELLO", 6);
    EXPECT_EQ(std::memcmp(h.memory.page(10), "HELLO", 6), 0);
    EXPECT_EQ(protection_at(at(va)), "rw-s");
    EXPECT_EQ(h.requests->stats().mapped_pages, 2u);
    EXPECT_EQ(h.requests->stats().handles, 1u);
}

TEST(Map, ReadOnlyMapIsReadOnly) {
    RequestsHarness h;
    const uint64_t va = h.connect() + 0x200000;
    h.map_ok(va, 1, 3, /*rw=*/false);
    EXPECT_EQ(protection_at(at(va)), "r--s");
}

TEST(Map, WritableMapOfReadOnlyGrantFailsWithNothingMapped) {
    RequestsHarness h;
    const uint64_t va = h.connect();
    xenhsa_map_req req = h.map_req(va, 2, 0, /*rw=*/false);
    req.flags = XENHSA_MAP_RW;
    EXPECT_EQ(h.status(XENHSA_CMD_MAP, req), XENHSA_STATUS_GRANT_FAILED);
    EXPECT_EQ(h.mapper.live_mappings(), 0u);
}

TEST(Map, UnmapPutsTheReservationBackAndTheHandleGoesStale) {
    RequestsHarness h;
    const uint64_t va = h.connect();
    const hsa::Handle m = h.map_ok(va, 4, 0);
    EXPECT_EQ(h.handle_cmd(XENHSA_CMD_UNMAP, m), XENHSA_STATUS_OK);
    EXPECT_EQ(protection_at(at(va)), "---p");
    EXPECT_EQ(h.mapper.live_mappings(), 0u);
    EXPECT_EQ(h.handle_cmd(XENHSA_CMD_UNMAP, m), XENHSA_STATUS_BAD_HANDLE);  // stale
    EXPECT_EQ(h.requests->stats().mapped_pages, 0u);
    // The range is free again, and a new handle differs from the stale one.
    const hsa::Handle again = h.map_ok(va, 4, 0);
    EXPECT_NE(again, m);
}

TEST(Map, IndirectPagesAreCopiedOnceAndUnmapped) {
    RequestsHarness h;
    const uint64_t va = h.connect() + 0x1000000;
    constexpr uint32_t kPages = 1500;  // two indirect pages
    // Indirect pages live in guest pages 0 and 1; data pages from 100.
    auto* list0 = reinterpret_cast<xen::GrantRef*>(h.memory.page(0));
    auto* list1 = reinterpret_cast<xen::GrantRef*>(h.memory.page(1));
    std::memset(list0, 0, 4096);
    std::memset(list1, 0, 4096);
    for (uint32_t i = 0; i < kPages; ++i) {
        const xen::GrantRef ref = h.memory.grant(100 + i, true);
        (i < 1024 ? list0[i] : list1[i - 1024]) = ref;
    }
    std::memcpy(h.memory.page(100 + 1499), "last", 5);
    xenhsa_map_req req{};
    req.va = va;
    req.npages = kPages;
    req.flags = XENHSA_MAP_RW | XENHSA_MAP_INDIRECT;
    req.nrefs = 2;
    req.gref[0] = h.memory.grant(0, false);
    req.gref[1] = h.memory.grant(1, false);
    auto r = h.send(XENHSA_CMD_MAP, req);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, XENHSA_STATUS_OK);
    EXPECT_STREQ(static_cast<const char*>(at(va + 1499 * 4096ull)), "last");
    EXPECT_EQ(h.mapper.live_mappings(), 1u);  // the indirect pages are unmapped again
    EXPECT_EQ(h.mapper.live_pages(), kPages);
    EXPECT_EQ(h.requests->stats().mapped_pages, kPages);
}

TEST(Map, HostileIndirectTailIsBadPadWithNothingMapped) {
    RequestsHarness h;
    const uint64_t va = h.connect();
    auto* list = reinterpret_cast<xen::GrantRef*>(h.memory.page(0));
    std::memset(list, 0, 4096);
    for (uint32_t i = 0; i < 10; ++i) {
        list[i] = h.memory.grant(100 + i, true);
    }
    list[1023] = 12345;  // past npages: must be zero
    xenhsa_map_req req{};
    req.va = va;
    req.npages = 10;
    req.flags = XENHSA_MAP_RW | XENHSA_MAP_INDIRECT;
    req.nrefs = 1;
    req.gref[0] = h.memory.grant(0, false);
    EXPECT_EQ(h.status(XENHSA_CMD_MAP, req), XENHSA_STATUS_BAD_PAD);
    EXPECT_EQ(h.mapper.live_mappings(), 0u);
    EXPECT_EQ(protection_at(at(va)), "---p");
    EXPECT_EQ(h.requests->stats().handles, 0u);
}

TEST(Map, OneBadGrantFailsTheWholeMap) {
    RequestsHarness h;
    const uint64_t va = h.connect();
    xenhsa_map_req req = h.map_req(va, 8, 20);
    h.mapper.fail_refs.insert(req.gref[5]);
    EXPECT_EQ(h.status(XENHSA_CMD_MAP, req), XENHSA_STATUS_GRANT_FAILED);
    EXPECT_EQ(h.mapper.live_mappings(), 0u);
    EXPECT_EQ(protection_at(at(va)), "---p");
    EXPECT_EQ(protection_at(at(va + 7 * 4096)), "---p");
    EXPECT_EQ(h.requests->stats().mapped_pages, 0u);
    EXPECT_EQ(h.requests->stats().handles, 0u);
    // Nothing stayed behind: the same range maps once the grant is good.
    h.mapper.fail_refs.clear();
    EXPECT_EQ(h.status(XENHSA_CMD_MAP, req), XENHSA_STATUS_OK);
}

TEST(Map, OneBadIndirectPageFailsTheMap) {
    RequestsHarness h;
    const uint64_t va = h.connect();
    xenhsa_map_req req{};
    req.va = va;
    req.npages = 2000;
    req.flags = XENHSA_MAP_INDIRECT;
    req.nrefs = 2;
    req.gref[0] = h.memory.grant(0, false);
    req.gref[1] = h.memory.grant(1, false);
    h.mapper.fail_refs.insert(req.gref[1]);
    EXPECT_EQ(h.status(XENHSA_CMD_MAP, req), XENHSA_STATUS_GRANT_FAILED);
    EXPECT_EQ(h.mapper.live_mappings(), 0u);
}

TEST(Map, OutOfMaptrackIsNoMemory) {
    RequestsHarness h;
    const uint64_t va = h.connect();
    xenhsa_map_req req = h.map_req(va, 1, 0);
    h.mapper.fail_refs.insert(req.gref[0]);
    h.mapper.fail_errno = ENOMEM;
    EXPECT_EQ(h.status(XENHSA_CMD_MAP, req), XENHSA_STATUS_NO_MEMORY);
}

TEST(Map, AddressChecks) {
    RequestsHarness h;
    const uint64_t base = h.connect();
    EXPECT_EQ(h.status(XENHSA_CMD_MAP, h.map_req(base - 4096, 1, 0)), XENHSA_STATUS_BAD_ADDRESS);
    EXPECT_EQ(h.status(XENHSA_CMD_MAP, h.map_req(base + kWindowSize - 4096, 2, 0)),
              XENHSA_STATUS_BAD_ADDRESS);
    h.map_ok(base + 0x10000, 4, 0);
    EXPECT_EQ(h.status(XENHSA_CMD_MAP, h.map_req(base + 0x13000, 1, 10)),
              XENHSA_STATUS_BAD_ADDRESS);  // overlaps
    EXPECT_EQ(h.status(XENHSA_CMD_MAP, h.map_req(base + 0x14000, 1, 10)), XENHSA_STATUS_OK);
    EXPECT_EQ(h.mapper.maps_attempted(), 2u);  // refused requests never reach the mapper
}

TEST(Map, IndirectNeedsTheFeature) {
    RequestsHarness h;
    const uint64_t va = h.connect(XENHSA_FEATURE_GPU);
    xenhsa_map_req req{};
    req.va = va;
    req.npages = 100;
    req.flags = XENHSA_MAP_INDIRECT;
    req.nrefs = 1;
    req.gref[0] = h.memory.grant(0, false);
    EXPECT_EQ(h.status(XENHSA_CMD_MAP, req), XENHSA_STATUS_UNSUPPORTED);
}

TEST(Map, PageQuota) {
    HarnessOptions o;
    o.quotas.max_map_pages = 6;
    RequestsHarness h(o);
    const uint64_t base = h.connect();
    h.map_ok(base, 4, 0);
    EXPECT_EQ(h.status(XENHSA_CMD_MAP, h.map_req(base + 0x10000, 3, 10)), XENHSA_STATUS_QUOTA);
    EXPECT_EQ(h.status(XENHSA_CMD_MAP, h.map_req(base + 0x10000, 2, 10)), XENHSA_STATUS_OK);
}

TEST(Map, HandleQuota) {
    HarnessOptions o;
    o.quotas.max_handles = 2;
    RequestsHarness h(o);
    const uint64_t base = h.connect();
    h.map_ok(base, 1, 0);
    h.map_ok(base + 0x1000, 1, 1);
    EXPECT_EQ(h.status(XENHSA_CMD_MAP, h.map_req(base + 0x2000, 1, 2)), XENHSA_STATUS_QUOTA);
}

TEST(Map, AddressIsCheckedBeforeQuota) {
    HarnessOptions o;
    o.quotas.max_map_pages = 1;
    RequestsHarness h(o);
    const uint64_t base = h.connect();
    h.map_ok(base, 1, 0);
    // Over quota AND overlapping: the address step comes first.
    EXPECT_EQ(h.status(XENHSA_CMD_MAP, h.map_req(base, 1, 1)), XENHSA_STATUS_BAD_ADDRESS);
}

TEST(Handles, ForgedStaleAndCrossKind) {
    RequestsHarness h;
    const uint64_t base = h.connect();
    const hsa::Handle m = h.map_ok(base, 1, 0);
    xenhsa_lend_req lend{};
    lend.va = base + 0x100000;
    lend.npages = 1;
    auto lr = h.send(XENHSA_CMD_LEND, lend);
    ASSERT_TRUE(lr && lr->status == XENHSA_STATUS_OK);
    const hsa::Handle l = payload_of<xenhsa_lend_rsp>(*lr).handle;

    // Forged: near misses of a live handle, and arbitrary values.
    for (hsa::Handle forged : {m ^ 1ull, m ^ (1ull << 40), m + (1ull << 32), 0x1234ull, ~0ull}) {
        EXPECT_EQ(h.handle_cmd(XENHSA_CMD_UNMAP, forged), XENHSA_STATUS_BAD_HANDLE) << forged;
    }
    // Cross-kind: memory handles where other kinds belong.
    EXPECT_EQ(h.handle_cmd(XENHSA_CMD_UNPIN, m), XENHSA_STATUS_BAD_HANDLE);
    EXPECT_EQ(h.handle_cmd(XENHSA_CMD_FREE, l), XENHSA_STATUS_BAD_HANDLE);
    EXPECT_EQ(h.handle_cmd(XENHSA_CMD_QUEUE_DESTROY, m), XENHSA_STATUS_BAD_HANDLE);
    EXPECT_EQ(h.handle_cmd(XENHSA_CMD_EVENT_SET, l), XENHSA_STATUS_BAD_HANDLE);
    xenhsa_map_to_gpu_req g{};
    g.handle = m;
    g.node_mask = 2;
    EXPECT_EQ(h.status(XENHSA_CMD_MAP_TO_GPU, g), XENHSA_STATUS_BAD_HANDLE);
    // Still live after all that.
    EXPECT_EQ(h.handle_cmd(XENHSA_CMD_UNMAP, m), XENHSA_STATUS_OK);
    EXPECT_EQ(h.handle_cmd(XENHSA_CMD_UNMAP, l), XENHSA_STATUS_OK);
    // Stale.
    EXPECT_EQ(h.handle_cmd(XENHSA_CMD_UNMAP, m), XENHSA_STATUS_BAD_HANDLE);
    EXPECT_EQ(h.handle_cmd(XENHSA_CMD_UNMAP, l), XENHSA_STATUS_BAD_HANDLE);
}

TEST(Handles, AnotherGuestsHandleIsUnknown) {
    RequestsHarness a;
    RequestsHarness b;
    const hsa::Handle ha = a.map_ok(a.connect(), 1, 0);
    b.connect();
    EXPECT_EQ(b.handle_cmd(XENHSA_CMD_UNMAP, ha), XENHSA_STATUS_BAD_HANDLE);
    EXPECT_EQ(a.handle_cmd(XENHSA_CMD_UNMAP, ha), XENHSA_STATUS_OK);
}

TEST(Handles, StaleAfterSessionRevokeAll) {
    RequestsHarness h;
    const uint64_t base = h.connect();
    const hsa::Handle m = h.map_ok(base, 2, 0);
    h.requests->revoke_all(false);  // the operator's: the connection stays up
    EXPECT_EQ(h.mapper.live_mappings(), 0u);
    EXPECT_EQ(h.handle_cmd(XENHSA_CMD_UNMAP, m), XENHSA_STATUS_BAD_HANDLE);
    EXPECT_EQ(h.requests->state(), GuestRequests::State::connected);
    h.map_ok(base, 2, 0);  // and the guest can map again
}

}  // namespace
}  // namespace xenhsa::backend::core::testing
