// Malformed requests get the status docs/protocol.md gives them, in the documented order,
// and never end the session.
#include <cstring>

#include "requests_harness.hpp"

namespace xenhsa::backend::core::testing {
namespace {

class Malformed : public ::testing::Test {
protected:
    void SetUp() override { base = h.connect(); }

    uint32_t raw(uint32_t cmd, const void* payload, uint32_t len, uint32_t pad = 0) {
        auto r = h.send_raw(cmd, payload, len, 0, pad);
        return r ? r->status : 0xFFFFFFFFu;
    }

    RequestsHarness h;
    uint64_t base = 0;
};

TEST_F(Malformed, Header) {
    const uint8_t zeros[232] = {};
    EXPECT_EQ(raw(0, zeros, 0), XENHSA_STATUS_BAD_COMMAND);
    EXPECT_EQ(raw(20, zeros, 8), XENHSA_STATUS_BAD_COMMAND);
    EXPECT_EQ(raw(0xFFFFFFFF, zeros, 8), XENHSA_STATUS_BAD_COMMAND);
    EXPECT_EQ(raw(XENHSA_CMD_UNMAP, zeros, 16), XENHSA_STATUS_BAD_LENGTH);
    EXPECT_EQ(raw(XENHSA_CMD_MAP, zeros, 8), XENHSA_STATUS_BAD_LENGTH);
    xenhsa_handle_req hr{};
    hr.handle = 1;
    EXPECT_EQ(raw(XENHSA_CMD_UNMAP, &hr, 8, /*pad=*/1), XENHSA_STATUS_BAD_PAD);
    // A length past the slot (the slot copy is 248 bytes; len is a header field).
    xenhsa_req_slot slot{};
    slot.hdr.cmd = XENHSA_CMD_UNMAP;
    slot.hdr.len = 4000;
    slot.hdr.seqno = 77;
    h.requests->handle(slot, h.sink);
    EXPECT_EQ(h.sink.replies.back().status, XENHSA_STATUS_BAD_LENGTH);
    EXPECT_EQ(h.sink.replies.back().seqno, 77u);
    EXPECT_EQ(h.sink.replies.back().len, 0u);
}

TEST_F(Malformed, MapPayload) {
    xenhsa_map_req m = h.map_req(base, 2, 0);
    xenhsa_map_req bad = m;
    bad.pad = 1;
    EXPECT_EQ(h.status(XENHSA_CMD_MAP, bad), XENHSA_STATUS_BAD_PAD);
    bad = m;
    bad.flags = 4;
    EXPECT_EQ(h.status(XENHSA_CMD_MAP, bad), XENHSA_STATUS_BAD_ARGUMENT);
    bad = m;
    bad.npages = 0;
    EXPECT_EQ(h.status(XENHSA_CMD_MAP, bad), XENHSA_STATUS_BAD_ARGUMENT);
    bad = m;
    bad.nrefs = 3;
    EXPECT_EQ(h.status(XENHSA_CMD_MAP, bad), XENHSA_STATUS_BAD_ARGUMENT);
    bad = m;
    bad.gref[40] = 9;  // an unused slot
    EXPECT_EQ(h.status(XENHSA_CMD_MAP, bad), XENHSA_STATUS_BAD_PAD);
    bad = m;
    bad.va = base + 1;
    EXPECT_EQ(h.status(XENHSA_CMD_MAP, bad), XENHSA_STATUS_BAD_ADDRESS);
    bad = m;
    bad.va = XENHSA_VA_LIMIT - 4096;
    EXPECT_EQ(h.status(XENHSA_CMD_MAP, bad), XENHSA_STATUS_BAD_ADDRESS);
    EXPECT_EQ(h.mapper.maps_attempted(), 0u);
    EXPECT_EQ(h.status(XENHSA_CMD_MAP, m), XENHSA_STATUS_OK);  // the session lives on
}

TEST_F(Malformed, LendPinAllocPayloads) {
    xenhsa_lend_req l{};
    l.va = base;
    l.npages = 1;
    l.flags = XENHSA_MAP_INDIRECT;  // only RW may be asked for
    EXPECT_EQ(h.status(XENHSA_CMD_LEND, l), XENHSA_STATUS_BAD_ARGUMENT);
    l.flags = 0;
    l.npages = XENHSA_MAP_MAX_PAGES + 1;
    EXPECT_EQ(h.status(XENHSA_CMD_LEND, l), XENHSA_STATUS_BAD_ARGUMENT);

    xenhsa_pin_req p{};
    p.va = base;
    p.size = 4096;
    p.pad = 1;
    EXPECT_EQ(h.status(XENHSA_CMD_PIN, p), XENHSA_STATUS_BAD_PAD);
    p.pad = 0;
    p.flags = 8;
    EXPECT_EQ(h.status(XENHSA_CMD_PIN, p), XENHSA_STATUS_BAD_ARGUMENT);
    p.flags = 0;
    p.size = 100;
    EXPECT_EQ(h.status(XENHSA_CMD_PIN, p), XENHSA_STATUS_BAD_ADDRESS);
    p.size = 4096;  // syntactically fine, but not in a MAP
    EXPECT_EQ(h.status(XENHSA_CMD_PIN, p), XENHSA_STATUS_BAD_ADDRESS);

    xenhsa_alloc_req a{};
    a.size = 4096;
    a.node = 64;
    EXPECT_EQ(h.status(XENHSA_CMD_ALLOC, a), XENHSA_STATUS_BAD_ARGUMENT);
    a.node = 5;  // syntactically fine, not a node of this host
    EXPECT_EQ(h.status(XENHSA_CMD_ALLOC, a), XENHSA_STATUS_BAD_ARGUMENT);
    a.node = 1;
    a.va = base + 3;
    EXPECT_EQ(h.status(XENHSA_CMD_ALLOC, a), XENHSA_STATUS_BAD_ADDRESS);
}

TEST_F(Malformed, HandlesQueryEventsAndQueues) {
    xenhsa_handle_req zero{};
    for (uint32_t cmd : {XENHSA_CMD_UNMAP, XENHSA_CMD_UNPIN, XENHSA_CMD_UNMAP_FROM_GPU,
                         XENHSA_CMD_FREE, XENHSA_CMD_QUEUE_DESTROY, XENHSA_CMD_EVENT_DESTROY,
                         XENHSA_CMD_EVENT_SET, XENHSA_CMD_EVENT_RESET}) {
        EXPECT_EQ(h.status(cmd, zero), XENHSA_STATUS_BAD_HANDLE) << cmd;
    }
    xenhsa_query_req q{};
    EXPECT_EQ(h.status(XENHSA_CMD_QUERY, q), XENHSA_STATUS_BAD_ARGUMENT);  // kind 0
    q.kind = XENHSA_QUERY_SYSTEM;
    q.index = 1;
    EXPECT_EQ(h.status(XENHSA_CMD_QUERY, q), XENHSA_STATUS_BAD_PAD);
    q.kind = XENHSA_QUERY_NODE;
    q.index = 0;
    q.node = 64;
    EXPECT_EQ(h.status(XENHSA_CMD_QUERY, q), XENHSA_STATUS_BAD_ARGUMENT);
    q.node = 7;  // fine syntactically; no node 7 here
    EXPECT_EQ(h.status(XENHSA_CMD_QUERY, q), XENHSA_STATUS_BAD_ARGUMENT);

    xenhsa_event_create_req ec{};
    ec.pad = 1;
    EXPECT_EQ(h.status(XENHSA_CMD_EVENT_CREATE, ec), XENHSA_STATUS_BAD_PAD);
    ec.pad = 0;
    ec.type = 9;
    EXPECT_EQ(h.status(XENHSA_CMD_EVENT_CREATE, ec), XENHSA_STATUS_BAD_ARGUMENT);

    xenhsa_event_wait_req w{};
    EXPECT_EQ(h.status(XENHSA_CMD_EVENT_WAIT, w), XENHSA_STATUS_BAD_ARGUMENT);  // count 0
    w.count = 1;
    w.event[3] = 5;
    EXPECT_EQ(h.status(XENHSA_CMD_EVENT_WAIT, w), XENHSA_STATUS_BAD_PAD);
    w.event[3] = 0;
    EXPECT_EQ(h.status(XENHSA_CMD_EVENT_WAIT, w), XENHSA_STATUS_BAD_HANDLE);  // event[0] == 0
    w.event[0] = 0x1234;                                                      // not a live event
    EXPECT_EQ(h.status(XENHSA_CMD_EVENT_WAIT, w), XENHSA_STATUS_BAD_HANDLE);

    xenhsa_event_wait_cancel_req c{};
    c.pad = 1;
    EXPECT_EQ(h.status(XENHSA_CMD_EVENT_WAIT_CANCEL, c), XENHSA_STATUS_BAD_PAD);
    c.pad = 0;
    c.wait_seqno = 999;
    EXPECT_EQ(h.status(XENHSA_CMD_EVENT_WAIT_CANCEL, c), XENHSA_STATUS_BAD_ARGUMENT);

    xenhsa_queue_create_req qc{};
    qc.type = XENHSA_QUEUE_COMPUTE_AQL;
    qc.node = 1;
    qc.ring_size = 4096;
    qc.ring_va = base;
    qc.rptr_va = base + 4096 + 4;
    qc.wptr_va = base + 4096 + 8;
    EXPECT_EQ(h.status(XENHSA_CMD_QUEUE_CREATE, qc), XENHSA_STATUS_BAD_ADDRESS);  // misaligned
    qc.rptr_va = base + 4096 + 16;
    qc.error_event = 0x4444;  // not an event: the handle step comes before addresses
    EXPECT_EQ(h.status(XENHSA_CMD_QUEUE_CREATE, qc), XENHSA_STATUS_BAD_HANDLE);
    qc.error_event = 0;
    EXPECT_EQ(h.status(XENHSA_CMD_QUEUE_CREATE, qc), XENHSA_STATUS_BAD_ADDRESS);  // not pinned
    qc.priority = 4;
    EXPECT_EQ(h.status(XENHSA_CMD_QUEUE_CREATE, qc), XENHSA_STATUS_BAD_ARGUMENT);

    xenhsa_map_to_gpu_req g{};
    g.handle = 5;
    g.node_mask = 0;
    EXPECT_EQ(h.status(XENHSA_CMD_MAP_TO_GPU, g), XENHSA_STATUS_BAD_ARGUMENT);
}

TEST_F(Malformed, FeatureStepComesBeforeHandles) {
    RequestsHarness plain;
    plain.connect(XENHSA_FEATURE_INDIRECT);  // no GPU, no WAIT_CANCEL
    xenhsa_handle_req hr{};
    hr.handle = 0x999;
    for (uint32_t cmd :
         {XENHSA_CMD_UNPIN, XENHSA_CMD_UNMAP_FROM_GPU, XENHSA_CMD_FREE, XENHSA_CMD_QUEUE_DESTROY,
          XENHSA_CMD_EVENT_DESTROY, XENHSA_CMD_EVENT_SET, XENHSA_CMD_EVENT_RESET}) {
        EXPECT_EQ(plain.status(cmd, hr), XENHSA_STATUS_UNSUPPORTED) << cmd;
    }
    xenhsa_event_wait_cancel_req c{};
    EXPECT_EQ(plain.status(XENHSA_CMD_EVENT_WAIT_CANCEL, c), XENHSA_STATUS_UNSUPPORTED);
    // MAP and UNMAP need nothing.
    EXPECT_EQ(plain.status(XENHSA_CMD_UNMAP, hr), XENHSA_STATUS_BAD_HANDLE);
}

TEST_F(Malformed, EveryResponseIsZeroPastItsLength) {
    xenhsa_query_req q{};
    q.kind = XENHSA_QUERY_VERSION;
    auto ok = h.send(XENHSA_CMD_QUERY, q);
    ASSERT_TRUE(ok);
    const auto rsp = payload_of<xenhsa_query_rsp>(*ok);
    EXPECT_EQ(xenhsa_check_query_rsp(&rsp, &q), XENHSA_STATUS_OK);
    for (const Reply& r : h.sink.replies) {
        for (std::size_t i = r.len; i < r.payload.size(); ++i) {
            ASSERT_EQ(r.payload[i], std::byte{0});
        }
    }
}

}  // namespace
}  // namespace xenhsa::backend::core::testing
