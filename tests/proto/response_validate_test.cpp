// The frontend's checks on response payloads: a backend is a peer, not trusted.
#include <gtest/gtest.h>
#include <xenhsa/proto.h>

#include <cstring>

namespace {

constexpr uint64_t kResponseVa = 0x100000000000ull;

TEST(ProtoResponses, HelloGrantsOnlyWhatWasAskedInASaneWindow) {
    const xenhsa_hello_req req{1, 1, XENHSA_FEATURE_LEND, 0, 1ull << 32};
    xenhsa_hello_rsp rsp{1, 16, XENHSA_FEATURE_LEND, kResponseVa, 1ull << 32, 100, 100, 100, 15};
    EXPECT_EQ(xenhsa_check_hello_rsp(&rsp, &req), XENHSA_STATUS_OK);
    auto bad = rsp;
    bad.features |= XENHSA_FEATURE_GPU;
    EXPECT_EQ(xenhsa_check_hello_rsp(&bad, &req), XENHSA_STATUS_BAD_ARGUMENT);
    bad = rsp;
    bad.max_in_flight = 16;  // would let waits starve the cancel
    EXPECT_EQ(xenhsa_check_hello_rsp(&bad, &req), XENHSA_STATUS_BAD_ARGUMENT);
    bad = rsp;
    bad.va_base = XENHSA_VA_LIMIT - 4096;
    EXPECT_EQ(xenhsa_check_hello_rsp(&bad, &req), XENHSA_STATUS_BAD_ADDRESS);
}

TEST(ProtoResponses, HelloWindowBelowTheFloorIsRefused) {
    const xenhsa_hello_req req{1, 1, 0, 0, 1ull << 30};
    xenhsa_hello_rsp rsp{1, 16, 0, 1ull << 30, 1ull << 30, 100, 100, 100, 15};
    EXPECT_EQ(xenhsa_check_hello_rsp(&rsp, &req), XENHSA_STATUS_OK);
    rsp.va_base = 0x10000;
    EXPECT_EQ(xenhsa_check_hello_rsp(&rsp, &req), XENHSA_STATUS_BAD_ADDRESS);
}

TEST(ProtoResponses, QueryChunkStaysInsideTheResult) {
    const xenhsa_query_req req{XENHSA_QUERY_NODE, 1, 0, 224};
    xenhsa_query_rsp rsp{};
    rsp.total_len = 296;
    rsp.chunk_len = 72;
    EXPECT_EQ(xenhsa_check_query_rsp(&rsp, &req), XENHSA_STATUS_OK);
    rsp.chunk_len = 73;
    EXPECT_EQ(xenhsa_check_query_rsp(&rsp, &req), XENHSA_STATUS_BAD_LENGTH);
    rsp.chunk_len = 72;
    rsp.data[100] = 1;  // bytes past the chunk
    EXPECT_EQ(xenhsa_check_query_rsp(&rsp, &req), XENHSA_STATUS_BAD_PAD);
}

TEST(ProtoResponses, LendMustDescribeWhatWasLent) {
    const xenhsa_lend_req req{kResponseVa, 2, XENHSA_MAP_RW};
    xenhsa_lend_rsp rsp{};
    rsp.handle = 9;
    rsp.npages = 2;
    rsp.flags = XENHSA_MAP_RW;
    rsp.nrefs = 2;
    EXPECT_EQ(xenhsa_check_lend_rsp(&rsp, &req), XENHSA_STATUS_OK);
    auto bad = rsp;
    bad.flags = 0;  // read-only when RW was asked
    EXPECT_EQ(xenhsa_check_lend_rsp(&bad, &req), XENHSA_STATUS_BAD_ARGUMENT);
    bad = rsp;
    bad.gref[10] = 4;
    EXPECT_EQ(xenhsa_check_lend_rsp(&bad, &req), XENHSA_STATUS_BAD_PAD);
    bad = rsp;
    bad.handle = 0;
    EXPECT_EQ(xenhsa_check_lend_rsp(&bad, &req), XENHSA_STATUS_BAD_HANDLE);
}

TEST(ProtoResponses, QueueDoorbellIndexMustBeOnThePage) {
    xenhsa_queue_create_rsp rsp{5, XENHSA_DOORBELLS_PER_PAGE - 1, 0};
    EXPECT_EQ(xenhsa_check_queue_create_rsp(&rsp), XENHSA_STATUS_OK);
    rsp.doorbell_index = XENHSA_DOORBELLS_PER_PAGE;
    EXPECT_EQ(xenhsa_check_queue_create_rsp(&rsp), XENHSA_STATUS_BAD_ARGUMENT);
}

TEST(ProtoRingInit, BothEventIndicesStartAtOne) {
    xenhsa_sring s;
    std::memset(&s, 0xAB, sizeof s);
    xenhsa_sring_init(&s);
    EXPECT_EQ(s.req_event, 1u);
    EXPECT_EQ(s.rsp_event, 1u);
    EXPECT_EQ(s.req_prod, 0u);
    EXPECT_EQ(s.be_alive, 0u);
    // The first request is notified though the backend armed nothing yet.
    EXPECT_TRUE(xenhsa_ring_publish(&s.req_prod, &s.req_event, 0, 1));
}

TEST(ProtoDoorbell, RingingAsksForAKickOnlyWhenTheAgentSleeps) {
    xenhsa_doorbell_page page{};
    EXPECT_FALSE(xenhsa_doorbell_ring(&page, 3, 64));
    EXPECT_EQ(page.doorbell[3], 64u);
    page.kick_requested = 1;
    EXPECT_TRUE(xenhsa_doorbell_ring(&page, 3, 65));
}

}  // namespace
