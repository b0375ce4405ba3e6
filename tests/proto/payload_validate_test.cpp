// Per-command payload checks, run on whole request slots as the backend runs them.
#include <gtest/gtest.h>
#include <xenhsa/proto.h>

#include "test_slots.hpp"

namespace {

using xenhsa::test::make_req;
using xenhsa::test::valid_map_req;

constexpr uint64_t kVa = 0x100000000000ull;

template <class Wire>
uint32_t check(uint32_t cmd, const Wire& payload) {
    const auto slot = make_req(cmd, payload);
    return xenhsa_check_req(&slot);
}

xenhsa_hello_req valid_hello() {
    return xenhsa_hello_req{1, 1, XENHSA_FEATURES_V1, 0, XENHSA_VA_WINDOW_MIN};
}

TEST(ProtoHello, AcceptsProposalAndExplicitWindow) {
    EXPECT_EQ(check(XENHSA_CMD_HELLO, valid_hello()), XENHSA_STATUS_OK);
    auto asked = valid_hello();
    asked.va_base = kVa;
    EXPECT_EQ(check(XENHSA_CMD_HELLO, asked), XENHSA_STATUS_OK);
    auto future = valid_hello();
    future.features = ~0ull;  // unknown feature bits are simply not granted
    future.version_max = 9;
    EXPECT_EQ(check(XENHSA_CMD_HELLO, future), XENHSA_STATUS_OK);
}

TEST(ProtoHello, RejectsBadVersionsSizesAndWindows) {
    auto req = valid_hello();
    req.version_min = 0;
    EXPECT_EQ(check(XENHSA_CMD_HELLO, req), XENHSA_STATUS_BAD_ARGUMENT);
    req = valid_hello();
    req.version_min = 3;
    req.version_max = 2;
    EXPECT_EQ(check(XENHSA_CMD_HELLO, req), XENHSA_STATUS_BAD_ARGUMENT);
    req = valid_hello();
    req.va_size = XENHSA_VA_WINDOW_MIN + 1;
    EXPECT_EQ(check(XENHSA_CMD_HELLO, req), XENHSA_STATUS_BAD_ARGUMENT);
    req.va_size = XENHSA_VA_WINDOW_MAX * 2;
    EXPECT_EQ(check(XENHSA_CMD_HELLO, req), XENHSA_STATUS_BAD_ARGUMENT);
    req = valid_hello();
    req.va_base = kVa + 1;
    EXPECT_EQ(check(XENHSA_CMD_HELLO, req), XENHSA_STATUS_BAD_ADDRESS);
    req.va_base = XENHSA_VA_LIMIT - XENHSA_PAGE_SIZE;  // window would cross the limit
    EXPECT_EQ(check(XENHSA_CMD_HELLO, req), XENHSA_STATUS_BAD_ADDRESS);
}

// A window may not start below 1 GiB: guest data must never sit where a NULL-plus-offset
// dereference in the worker lands (issue 11, item 4).
TEST(ProtoHello, RefusesAWindowBelowTheFloor) {
    auto req = valid_hello();
    req.va_base = 0x1000;
    EXPECT_EQ(check(XENHSA_CMD_HELLO, req), XENHSA_STATUS_BAD_ADDRESS);
    req.va_base = (1ull << 30) - XENHSA_PAGE_SIZE;
    EXPECT_EQ(check(XENHSA_CMD_HELLO, req), XENHSA_STATUS_BAD_ADDRESS);
    req.va_base = 1ull << 30;
    EXPECT_EQ(check(XENHSA_CMD_HELLO, req), XENHSA_STATUS_OK);
}

TEST(ProtoQuery, NodeAndIndexOnlyWhereTheKindHasThem) {
    EXPECT_EQ(check(XENHSA_CMD_QUERY, xenhsa_query_req{XENHSA_QUERY_SYSTEM, 0, 0, 0}),
              XENHSA_STATUS_OK);
    EXPECT_EQ(check(XENHSA_CMD_QUERY, xenhsa_query_req{XENHSA_QUERY_CACHE, 1, 3, 64}),
              XENHSA_STATUS_OK);
    EXPECT_EQ(check(XENHSA_CMD_QUERY, xenhsa_query_req{XENHSA_QUERY_SYSTEM, 1, 0, 0}),
              XENHSA_STATUS_BAD_PAD);
    EXPECT_EQ(check(XENHSA_CMD_QUERY, xenhsa_query_req{XENHSA_QUERY_NODE, 0, 2, 0}),
              XENHSA_STATUS_BAD_PAD);
    EXPECT_EQ(
        check(XENHSA_CMD_QUERY, xenhsa_query_req{XENHSA_QUERY_CACHE, 0, XENHSA_QUERY_MAX_INDEX, 0}),
        XENHSA_STATUS_BAD_ARGUMENT);
    EXPECT_EQ(
        check(XENHSA_CMD_QUERY, xenhsa_query_req{XENHSA_QUERY_NODE, XENHSA_QUERY_MAX_NODES, 0, 0}),
        XENHSA_STATUS_BAD_ARGUMENT);
    EXPECT_EQ(check(XENHSA_CMD_QUERY, xenhsa_query_req{XENHSA_QUERY_KIND_COUNT_, 0, 0, 0}),
              XENHSA_STATUS_BAD_ARGUMENT);
    EXPECT_EQ(check(XENHSA_CMD_QUERY, xenhsa_query_req{XENHSA_QUERY_TILE_CONFIG, 1, 0, 0}),
              XENHSA_STATUS_OK);
    EXPECT_EQ(check(XENHSA_CMD_QUERY, xenhsa_query_req{XENHSA_QUERY_TILE_CONFIG, 1, 1, 0}),
              XENHSA_STATUS_BAD_PAD);
    EXPECT_EQ(check(XENHSA_CMD_QUERY, xenhsa_query_req{XENHSA_QUERY_NODE, 0, 0, XENHSA_PAGE_SIZE}),
              XENHSA_STATUS_BAD_ARGUMENT);
}

TEST(ProtoMap, AcceptsDirectAndIndirect) {
    EXPECT_EQ(check(XENHSA_CMD_MAP, valid_map_req()), XENHSA_STATUS_OK);
    auto indirect = valid_map_req();
    indirect.flags = XENHSA_MAP_INDIRECT;
    indirect.npages = 4096;
    indirect.nrefs = 4;
    indirect.gref[3] = 11;
    EXPECT_EQ(check(XENHSA_CMD_MAP, indirect), XENHSA_STATUS_OK);
}

TEST(ProtoMap, RejectsInconsistentCounts) {
    auto req = valid_map_req();
    req.npages = 0;
    EXPECT_EQ(check(XENHSA_CMD_MAP, req), XENHSA_STATUS_BAD_ARGUMENT);
    req = valid_map_req();
    req.nrefs = 2;  // three pages named by two refs
    EXPECT_EQ(check(XENHSA_CMD_MAP, req), XENHSA_STATUS_BAD_ARGUMENT);
    req = valid_map_req();
    req.npages = XENHSA_MAP_INLINE_GREFS + 1;  // direct list too long for the slot
    req.nrefs = XENHSA_MAP_INLINE_GREFS + 1;
    EXPECT_EQ(check(XENHSA_CMD_MAP, req), XENHSA_STATUS_BAD_ARGUMENT);
    req = valid_map_req();
    req.flags = XENHSA_MAP_INDIRECT;
    req.npages = XENHSA_MAP_MAX_PAGES + 1;
    req.nrefs = XENHSA_MAP_INLINE_GREFS + 1;
    EXPECT_EQ(check(XENHSA_CMD_MAP, req), XENHSA_STATUS_BAD_ARGUMENT);
    req = valid_map_req();
    req.flags = 0x80;
    EXPECT_EQ(check(XENHSA_CMD_MAP, req), XENHSA_STATUS_BAD_ARGUMENT);
}

TEST(ProtoMap, RejectsGarbageInUnusedRefsAndPad) {
    auto req = valid_map_req();
    req.gref[XENHSA_MAP_INLINE_GREFS - 1] = 5;
    EXPECT_EQ(check(XENHSA_CMD_MAP, req), XENHSA_STATUS_BAD_PAD);
    req = valid_map_req();
    req.pad = 1;
    EXPECT_EQ(check(XENHSA_CMD_MAP, req), XENHSA_STATUS_BAD_PAD);
}

TEST(ProtoMap, RejectsMisalignedOrOutOfRangeAddresses) {
    auto req = valid_map_req();
    req.va += 8;
    EXPECT_EQ(check(XENHSA_CMD_MAP, req), XENHSA_STATUS_BAD_ADDRESS);
    req = valid_map_req();
    req.va = XENHSA_VA_LIMIT - XENHSA_PAGE_SIZE;  // 3 pages cross the limit
    EXPECT_EQ(check(XENHSA_CMD_MAP, req), XENHSA_STATUS_BAD_ADDRESS);
    req.va = 0xFFFFFFFFFFFFF000ull;  // would wrap around
    EXPECT_EQ(check(XENHSA_CMD_MAP, req), XENHSA_STATUS_BAD_ADDRESS);
}

TEST(ProtoHandles, ZeroIsNeverAHandle) {
    for (uint32_t cmd : {XENHSA_CMD_UNMAP, XENHSA_CMD_UNPIN, XENHSA_CMD_UNMAP_FROM_GPU,
                         XENHSA_CMD_FREE, XENHSA_CMD_QUEUE_DESTROY, XENHSA_CMD_EVENT_DESTROY,
                         XENHSA_CMD_EVENT_SET, XENHSA_CMD_EVENT_RESET}) {
        EXPECT_EQ(check(cmd, xenhsa_handle_req{0}), XENHSA_STATUS_BAD_HANDLE)
            << xenhsa_cmd_name(cmd);
        EXPECT_EQ(check(cmd, xenhsa_handle_req{42}), XENHSA_STATUS_OK) << xenhsa_cmd_name(cmd);
    }
    EXPECT_EQ(check(XENHSA_CMD_MAP_TO_GPU, xenhsa_map_to_gpu_req{0, 1, 0, 0}),
              XENHSA_STATUS_BAD_HANDLE);
}

TEST(ProtoLendPin, ChecksFlagsCountsAndRanges) {
    EXPECT_EQ(check(XENHSA_CMD_LEND, xenhsa_lend_req{kVa, 4, XENHSA_MAP_RW}), XENHSA_STATUS_OK);
    EXPECT_EQ(check(XENHSA_CMD_LEND, xenhsa_lend_req{kVa, 4, XENHSA_MAP_INDIRECT}),
              XENHSA_STATUS_BAD_ARGUMENT);
    EXPECT_EQ(check(XENHSA_CMD_LEND, xenhsa_lend_req{kVa, 0, 0}), XENHSA_STATUS_BAD_ARGUMENT);
    EXPECT_EQ(check(XENHSA_CMD_LEND, xenhsa_lend_req{kVa + 1, 1, 0}), XENHSA_STATUS_BAD_ADDRESS);
    EXPECT_EQ(check(XENHSA_CMD_PIN, xenhsa_pin_req{kVa, 8192, XENHSA_PIN_READ_ONLY, 0}),
              XENHSA_STATUS_OK);
    EXPECT_EQ(check(XENHSA_CMD_PIN, xenhsa_pin_req{kVa, 0, 0, 0}), XENHSA_STATUS_BAD_ADDRESS);
    EXPECT_EQ(check(XENHSA_CMD_PIN, xenhsa_pin_req{kVa, 4096, 0x10, 0}),
              XENHSA_STATUS_BAD_ARGUMENT);
    EXPECT_EQ(check(XENHSA_CMD_PIN, xenhsa_pin_req{kVa, 4096, 0, 9}), XENHSA_STATUS_BAD_PAD);
}

TEST(ProtoAlloc, BackendChosenOrExplicitAddress) {
    EXPECT_EQ(check(XENHSA_CMD_ALLOC, xenhsa_alloc_req{0, 1u << 20, 1, XENHSA_ALLOC_DEVICE_LOCAL}),
              XENHSA_STATUS_OK);
    EXPECT_EQ(check(XENHSA_CMD_ALLOC, xenhsa_alloc_req{kVa, 1u << 20, 1, 0}), XENHSA_STATUS_OK);
    EXPECT_EQ(check(XENHSA_CMD_ALLOC, xenhsa_alloc_req{kVa, 100, 1, 0}),
              XENHSA_STATUS_BAD_ARGUMENT);
    EXPECT_EQ(check(XENHSA_CMD_ALLOC, xenhsa_alloc_req{kVa, 4096, XENHSA_QUERY_MAX_NODES, 0}),
              XENHSA_STATUS_BAD_ARGUMENT);
    EXPECT_EQ(check(XENHSA_CMD_ALLOC, xenhsa_alloc_req{kVa + 4, 4096, 0, 0}),
              XENHSA_STATUS_BAD_ADDRESS);
}

xenhsa_queue_create_req valid_queue() {
    return xenhsa_queue_create_req{
        1, XENHSA_QUEUE_COMPUTE_AQL, 100, 0, kVa, 4096, kVa + 0x10000, kVa + 0x10008, 0};
}

TEST(ProtoQueue, ChecksTypeRingAndPointers) {
    EXPECT_EQ(check(XENHSA_CMD_QUEUE_CREATE, valid_queue()), XENHSA_STATUS_OK);
    auto q = valid_queue();
    q.type = XENHSA_QUEUE_SDMA;  // syntactically fine; the feature is the backend's check
    EXPECT_EQ(check(XENHSA_CMD_QUEUE_CREATE, q), XENHSA_STATUS_OK);
    for (const uint32_t type : {0u, 3u, 21u, 0xFFFFFFFFu}) {
        q.type = type;
        EXPECT_EQ(check(XENHSA_CMD_QUEUE_CREATE, q), XENHSA_STATUS_BAD_ARGUMENT) << type;
    }
    q = valid_queue();
    q.ring_size = 4096 * 3;  // not a power of two
    EXPECT_EQ(check(XENHSA_CMD_QUEUE_CREATE, q), XENHSA_STATUS_BAD_ARGUMENT);
    q = valid_queue();
    q.priority = 4;
    EXPECT_EQ(check(XENHSA_CMD_QUEUE_CREATE, q), XENHSA_STATUS_BAD_ARGUMENT);
    q = valid_queue();
    q.percentage = 101;
    EXPECT_EQ(check(XENHSA_CMD_QUEUE_CREATE, q), XENHSA_STATUS_BAD_ARGUMENT);
    q = valid_queue();
    q.rptr_va = 0;
    EXPECT_EQ(check(XENHSA_CMD_QUEUE_CREATE, q), XENHSA_STATUS_BAD_ADDRESS);
    q = valid_queue();
    q.wptr_va += 4;
    EXPECT_EQ(check(XENHSA_CMD_QUEUE_CREATE, q), XENHSA_STATUS_BAD_ADDRESS);
    q = valid_queue();
    q.ring_va += 256;
    EXPECT_EQ(check(XENHSA_CMD_QUEUE_CREATE, q), XENHSA_STATUS_BAD_ADDRESS);
}

// The agent writes the read index: it must not land in the packet ring or on the write
// index (issue 11, item 4).
TEST(ProtoQueue, RingAndPointersMustNotOverlap) {
    auto q = valid_queue();
    q.rptr_va = kVa + 64;  // inside the ring
    EXPECT_EQ(check(XENHSA_CMD_QUEUE_CREATE, q), XENHSA_STATUS_BAD_ADDRESS);
    q = valid_queue();
    q.wptr_va = kVa + 4096 - 8;  // the ring's last word
    EXPECT_EQ(check(XENHSA_CMD_QUEUE_CREATE, q), XENHSA_STATUS_BAD_ADDRESS);
    q = valid_queue();
    q.wptr_va = q.rptr_va;
    EXPECT_EQ(check(XENHSA_CMD_QUEUE_CREATE, q), XENHSA_STATUS_BAD_ADDRESS);
    q = valid_queue();
    q.rptr_va = kVa + 4096;  // right after the ring, and right before the write index
    q.wptr_va = kVa + 4096 + 8;
    EXPECT_EQ(check(XENHSA_CMD_QUEUE_CREATE, q), XENHSA_STATUS_OK);
    q.rptr_va = kVa - 8;  // right before the ring
    EXPECT_EQ(check(XENHSA_CMD_QUEUE_CREATE, q), XENHSA_STATUS_OK);
}

TEST(ProtoQueue, SdmaQueuesFollowTheSameRingAndPointerRules) {
    auto q = valid_queue();
    q.type = XENHSA_QUEUE_SDMA;
    q.ring_size = 1u << 20;  // ROCr's SDMA ring
    q.rptr_va = kVa + q.ring_size;
    q.wptr_va = q.rptr_va + 8;
    EXPECT_EQ(check(XENHSA_CMD_QUEUE_CREATE, q), XENHSA_STATUS_OK);
    q.ring_size = XENHSA_QUEUE_RING_MAX * 2;
    EXPECT_EQ(check(XENHSA_CMD_QUEUE_CREATE, q), XENHSA_STATUS_BAD_ARGUMENT);
    q.ring_size = 4096;
    q.rptr_va += 4;  // byte indexes are still 8-byte words
    EXPECT_EQ(check(XENHSA_CMD_QUEUE_CREATE, q), XENHSA_STATUS_BAD_ADDRESS);
}

TEST(ProtoFeatures, SdmaIsAKnownBitOutsideV1) {
    EXPECT_EQ(XENHSA_FEATURE_SDMA, 1ull << 4);
    EXPECT_EQ(XENHSA_FEATURES_V1 & XENHSA_FEATURE_SDMA, 0u);
    EXPECT_EQ(XENHSA_FEATURES_KNOWN, XENHSA_FEATURES_V1 | XENHSA_FEATURE_SDMA);
}

TEST(ProtoEvents, CreateAndWaitChecks) {
    EXPECT_EQ(check(XENHSA_CMD_EVENT_CREATE,
                    xenhsa_event_create_req{XENHSA_EVENT_SIGNAL, 0, XENHSA_EVENT_MANUAL_RESET, 0}),
              XENHSA_STATUS_OK);
    EXPECT_EQ(
        check(XENHSA_CMD_EVENT_CREATE, xenhsa_event_create_req{XENHSA_EVENT_TYPE_COUNT_, 0, 0, 0}),
        XENHSA_STATUS_BAD_ARGUMENT);
    EXPECT_EQ(check(XENHSA_CMD_EVENT_CREATE, xenhsa_event_create_req{0, 0, 0, 1}),
              XENHSA_STATUS_BAD_PAD);

    xenhsa_event_wait_req wait{};
    wait.count = 2;
    wait.timeout_ms = XENHSA_WAIT_INFINITE;
    wait.event[0] = 5;
    wait.event[1] = 6;
    EXPECT_EQ(check(XENHSA_CMD_EVENT_WAIT, wait), XENHSA_STATUS_OK);
    auto bad = wait;
    bad.count = XENHSA_WAIT_MAX_EVENTS + 1;
    EXPECT_EQ(check(XENHSA_CMD_EVENT_WAIT, bad), XENHSA_STATUS_BAD_ARGUMENT);
    bad = wait;
    bad.count = 0;
    EXPECT_EQ(check(XENHSA_CMD_EVENT_WAIT, bad), XENHSA_STATUS_BAD_ARGUMENT);
    bad = wait;
    bad.event[1] = 0;
    EXPECT_EQ(check(XENHSA_CMD_EVENT_WAIT, bad), XENHSA_STATUS_BAD_HANDLE);
    bad = wait;
    bad.event[2] = 7;  // past count
    EXPECT_EQ(check(XENHSA_CMD_EVENT_WAIT, bad), XENHSA_STATUS_BAD_PAD);
    EXPECT_EQ(check(XENHSA_CMD_EVENT_WAIT_CANCEL, xenhsa_event_wait_cancel_req{3, 0}),
              XENHSA_STATUS_OK);
    EXPECT_EQ(check(XENHSA_CMD_EVENT_WAIT_CANCEL, xenhsa_event_wait_cancel_req{3, 1}),
              XENHSA_STATUS_BAD_PAD);
}

}  // namespace
