// Layout of the shared pages: what the guest and the backend must agree on byte for byte.
#include <gtest/gtest.h>
#include <xenhsa/proto.h>

#include <cstddef>
#include <set>

namespace {

constexpr uint32_t kCacheLine = 64;

TEST(ProtoLayout, ProducerIndicesSitOnSeparateCacheLines) {
    EXPECT_NE(offsetof(xenhsa_sring, req_prod) / kCacheLine,
              offsetof(xenhsa_sring, rsp_prod) / kCacheLine);
    // Each side's fields share the line that side writes.
    EXPECT_EQ(offsetof(xenhsa_sring, req_prod) / kCacheLine,
              offsetof(xenhsa_sring, rsp_event) / kCacheLine);
    EXPECT_EQ(offsetof(xenhsa_sring, rsp_prod) / kCacheLine,
              offsetof(xenhsa_sring, req_event) / kCacheLine);
    EXPECT_EQ(offsetof(xenhsa_sring, be_alive), XENHSA_SRING_ALIVE_OFFSET);
}

TEST(ProtoLayout, EveryRingOrderHoldsItsSlotsInsideItsPages) {
    for (uint32_t order = 0; order <= XENHSA_RING_MAX_ORDER; ++order) {
        const uint32_t slots = XENHSA_RING_SLOTS(order);
        ASSERT_EQ(slots & (slots - 1), 0u) << "slot count must be a power of two";
        std::set<uint32_t> offsets;
        for (uint32_t i = 0; i < slots; ++i) {
            const uint32_t off = xenhsa_ring_slot_offset(i, slots);
            EXPECT_GE(off, XENHSA_RING_HEADER_SIZE);
            EXPECT_LE(off + XENHSA_SLOT_SIZE, XENHSA_RING_BYTES(order));
            EXPECT_EQ(off % 8, 0u);
            offsets.insert(off);
        }
        EXPECT_EQ(offsets.size(), slots) << "slots overlap at order " << order;
    }
}

TEST(ProtoLayout, SlotIndexWrapsWithTheFreeRunningCounter) {
    const uint32_t slots = XENHSA_RING_SLOTS(0);
    EXPECT_EQ(xenhsa_ring_slot_offset(0, slots), xenhsa_ring_slot_offset(slots, slots));
    EXPECT_EQ(xenhsa_ring_slot_offset(0xFFFFFFFFu, slots),
              xenhsa_ring_slot_offset(slots - 1, slots));
}

TEST(ProtoLayout, EveryRequestFitsItsSlot) {
    for (uint32_t cmd = 1; cmd < XENHSA_CMD_COUNT_; ++cmd) {
        const uint32_t req = xenhsa_req_len(cmd);
        const uint32_t rsp = xenhsa_rsp_len(cmd);
        ASSERT_NE(req, XENHSA_LEN_UNKNOWN) << xenhsa_cmd_name(cmd);
        ASSERT_NE(rsp, XENHSA_LEN_UNKNOWN) << xenhsa_cmd_name(cmd);
        EXPECT_LE(req, XENHSA_SLOT_PAYLOAD_MAX) << xenhsa_cmd_name(cmd);
        EXPECT_LE(rsp, XENHSA_SLOT_PAYLOAD_MAX) << xenhsa_cmd_name(cmd);
        EXPECT_EQ(req % 8, 0u) << xenhsa_cmd_name(cmd);
        EXPECT_EQ(rsp % 8, 0u) << xenhsa_cmd_name(cmd);
    }
}

TEST(ProtoLayout, SharedPagesAreExactlyOnePage) {
    EXPECT_EQ(sizeof(xenhsa_notify_page), XENHSA_PAGE_SIZE);
    EXPECT_EQ(sizeof(xenhsa_doorbell_page), XENHSA_PAGE_SIZE);
    EXPECT_NE(offsetof(xenhsa_notify_page, prod) / kCacheLine,
              offsetof(xenhsa_notify_page, cons) / kCacheLine);
    EXPECT_GE(offsetof(xenhsa_doorbell_page, doorbell), kCacheLine);
    EXPECT_EQ(offsetof(xenhsa_doorbell_page, doorbell[XENHSA_DOORBELLS_PER_PAGE - 1]) + 8,
              XENHSA_PAGE_SIZE);
}

TEST(ProtoLayout, QueryResultsAreReadableInChunks) {
    // The largest result needs several chunks; the offset bound covers every result.
    const size_t largest = sizeof(xenhsa_node_props);
    EXPECT_GT(largest, XENHSA_QUERY_CHUNK_MAX);
    EXPECT_LT(largest, XENHSA_PAGE_SIZE);
    EXPECT_LE(offsetof(xenhsa_query_rsp, data) + XENHSA_QUERY_CHUNK_MAX, XENHSA_SLOT_PAYLOAD_MAX);
}

TEST(ProtoLayout, IndirectMapCoversTheLargestBatch) {
    EXPECT_EQ(xenhsa_map_nrefs(XENHSA_MAP_MAX_PAGES, XENHSA_MAP_INDIRECT), XENHSA_MAP_INLINE_GREFS);
    EXPECT_EQ(xenhsa_map_nrefs(1, XENHSA_MAP_INDIRECT), 1u);
    EXPECT_EQ(xenhsa_map_nrefs(1025, XENHSA_MAP_INDIRECT), 2u);
    EXPECT_EQ(xenhsa_map_nrefs(5, 0), 5u);
}

TEST(ProtoLayout, NamesCoverEveryCommandAndStatus) {
    for (uint32_t cmd = 1; cmd < XENHSA_CMD_COUNT_; ++cmd) {
        EXPECT_STRNE(xenhsa_cmd_name(cmd), "UNKNOWN_COMMAND") << cmd;
    }
    EXPECT_STREQ(xenhsa_cmd_name(XENHSA_CMD_COUNT_), "UNKNOWN_COMMAND");
    for (uint32_t st = 0; st < XENHSA_STATUS_COUNT_; ++st) {
        EXPECT_STRNE(xenhsa_status_name(st), "UNKNOWN_STATUS") << st;
    }
    EXPECT_STREQ(xenhsa_status_name(XENHSA_STATUS_COUNT_), "UNKNOWN_STATUS");
}

}  // namespace
