// HELLO (docs/protocol.md §5.1): versions, features, the window negotiation, attempts.
#include <set>
#include <vector>
#include <xenhsa/backend/core/guest_core.hpp>

#include "requests_harness.hpp"

namespace xenhsa::backend::core::testing {
namespace {

constexpr uint64_t kGiB = 1ull << 30;

TEST(Hello, ProposeThenConfirm) {
    RequestsHarness h;
    auto first = h.send(XENHSA_CMD_HELLO, h.hello_req(0));
    ASSERT_TRUE(first);
    ASSERT_EQ(first->status, XENHSA_STATUS_OK);
    ASSERT_EQ(first->len, sizeof(xenhsa_hello_rsp));
    const auto p = payload_of<xenhsa_hello_rsp>(*first);
    EXPECT_EQ(h.requests->state(), GuestRequests::State::negotiating);
    EXPECT_EQ(p.version, 1u);
    EXPECT_EQ(p.ring_slots, 16u);
    EXPECT_EQ(p.va_size, kWindowSize);
    EXPECT_TRUE(xenhsa_va_range_ok(p.va_base, p.va_size));
    EXPECT_LT(p.max_in_flight, p.ring_slots);
    EXPECT_EQ(p.max_handles, Quotas{}.max_handles);
    const xenhsa_hello_req req = h.hello_req(0);
    EXPECT_EQ(xenhsa_check_hello_rsp(&p, &req), XENHSA_STATUS_OK);
    // The proposal is reserved in the worker.
    EXPECT_EQ(protection_at(reinterpret_cast<void*>(p.va_base)), "---p");

    auto second = h.send(XENHSA_CMD_HELLO, h.hello_req(p.va_base));
    ASSERT_TRUE(second);
    EXPECT_EQ(second->status, XENHSA_STATUS_OK);
    EXPECT_EQ(h.requests->state(), GuestRequests::State::connected);
    EXPECT_EQ(h.requests->window().base(), p.va_base);
    EXPECT_EQ(h.requests->features(), XENHSA_FEATURES_V1);
}

TEST(Hello, GuestChosenFreeWindowConnectsAtOnce) {
    RequestsHarness h;
    uint64_t base = 0;
    {
        auto probe = VaReservation::anywhere(kWindowSize, WindowNegotiation::kDefaultProposalBase);
        ASSERT_TRUE(probe);
        base = probe.value().base();
    }  // free again
    auto r = h.send(XENHSA_CMD_HELLO, h.hello_req(base));
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, XENHSA_STATUS_OK);
    EXPECT_EQ(payload_of<xenhsa_hello_rsp>(*r).va_base, base);
    EXPECT_EQ(h.requests->state(), GuestRequests::State::connected);
}

TEST(Hello, GuestWindowOverTheWorkersOwnMemoryIsRefusedWithAProposal) {
    RequestsHarness h;
    std::vector<char> own(1 << 20, 'w');
    const uint64_t base = reinterpret_cast<uint64_t>(own.data()) & ~(kGiB - 1);
    auto r = h.send(XENHSA_CMD_HELLO, h.hello_req(base));
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, XENHSA_STATUS_BAD_ADDRESS);
    ASSERT_EQ(r->len, sizeof(xenhsa_hello_rsp));  // every HELLO carries the payload
    const auto p = payload_of<xenhsa_hello_rsp>(*r);
    EXPECT_NE(p.va_base, 0u);
    EXPECT_NE(p.va_base, base);
    EXPECT_EQ(p.va_size, kWindowSize);
    EXPECT_TRUE(xenhsa_va_range_ok(p.va_base, p.va_size));
    EXPECT_EQ(p.version, 0u);  // fields without a meaning for BAD_ADDRESS are zero
    EXPECT_EQ(p.features, 0u);
    EXPECT_EQ(p.max_handles, 0u);
    EXPECT_NE(h.requests->state(), GuestRequests::State::connected);
    EXPECT_EQ(own[4242], 'w');  // the worker's memory was not touched
    own[4242] = 'x';
    // The guest takes the proposal.
    auto ok = h.send(XENHSA_CMD_HELLO, h.hello_req(p.va_base));
    ASSERT_TRUE(ok);
    EXPECT_EQ(ok->status, XENHSA_STATUS_OK);
}

TEST(Hello, AFreshProposalIsNotTheRejectedOne) {
    RequestsHarness h;
    const auto a = payload_of<xenhsa_hello_rsp>(*h.send(XENHSA_CMD_HELLO, h.hello_req(0)));
    const auto b = payload_of<xenhsa_hello_rsp>(*h.send(XENHSA_CMD_HELLO, h.hello_req(0)));
    EXPECT_NE(a.va_base, b.va_base);
    EXPECT_EQ(protection_at(reinterpret_cast<void*>(a.va_base)), "");  // released
}

// Guest data never sits where a NULL-plus-offset dereference in the worker lands: a
// window below 1 GiB is refused without a proposal, and nothing is reserved there.
TEST(Hello, WindowBelowTheFloorIsRefusedWithoutAProposal) {
    RequestsHarness h;
    for (const uint64_t low : {uint64_t{0x1000}, uint64_t{0x10000}, kGiB - kGiB / 2}) {
        auto r = h.send(XENHSA_CMD_HELLO, h.hello_req(low & ~0xFFFull));
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, XENHSA_STATUS_BAD_ADDRESS) << std::hex << low;
        ASSERT_EQ(r->len, sizeof(xenhsa_hello_rsp));
        const auto p = payload_of<xenhsa_hello_rsp>(*r);
        EXPECT_EQ(p.va_base, 0u);
        EXPECT_EQ(p.va_size, 0u);
        EXPECT_EQ(protection_at(reinterpret_cast<void*>(low & ~0xFFFull)), "");
    }
    EXPECT_NE(h.requests->state(), GuestRequests::State::connected);
}

// A proposal tells the guest where a free window lies, nothing more: not the first free
// range past a fixed base, which probing HELLOs would turn into a map of the worker
// (issue 11, item 5).
TEST(Hello, ProposalsAreRandomAboveTheFloor) {
    std::set<uint64_t> first_proposals;
    for (int session = 0; session < 4; ++session) {
        RequestsHarness h;
        auto r = h.send(XENHSA_CMD_HELLO, h.hello_req(0));
        ASSERT_TRUE(r && r->status == XENHSA_STATUS_OK);
        const auto p = payload_of<xenhsa_hello_rsp>(*r);
        EXPECT_GE(p.va_base, WindowNegotiation::kDefaultProposalBase);
        EXPECT_TRUE(xenhsa_va_range_ok(p.va_base, p.va_size));
        first_proposals.insert(p.va_base);
    }
    EXPECT_GT(first_proposals.size(), 1u) << "every session proposed the same window";
}

TEST(Hello, VersionWithoutCommonGround) {
    RequestsHarness h;
    xenhsa_hello_req req = h.hello_req(0);
    req.version_min = 2;
    req.version_max = 5;
    auto r = h.send(XENHSA_CMD_HELLO, req);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, XENHSA_STATUS_VERSION);
    ASSERT_EQ(r->len, sizeof(xenhsa_hello_rsp));
    const auto p = payload_of<xenhsa_hello_rsp>(*r);
    EXPECT_EQ(p.version, 1u);
    EXPECT_EQ(p.va_base, 0u);
}

TEST(Hello, SyntacticFailureStillCarriesThePayloadAndCounts) {
    RequestsHarness h;
    xenhsa_hello_req req = h.hello_req(0);
    req.version_min = 0;
    auto r = h.send(XENHSA_CMD_HELLO, req);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, XENHSA_STATUS_BAD_ARGUMENT);
    EXPECT_EQ(r->len, sizeof(xenhsa_hello_rsp));
    // A HELLO with the wrong length: BAD_LENGTH, still 48 bytes (all zero).
    auto bad = h.send_raw(XENHSA_CMD_HELLO, &req, 24);
    ASSERT_TRUE(bad);
    EXPECT_EQ(bad->status, XENHSA_STATUS_BAD_LENGTH);
    EXPECT_EQ(bad->len, sizeof(xenhsa_hello_rsp));
    for (std::byte b : bad->payload) {
        ASSERT_EQ(b, std::byte{0});
    }
}

TEST(Hello, NinthAttemptIsBadState) {
    RequestsHarness h;
    xenhsa_hello_req broken = h.hello_req(0);
    broken.va_size = 5;  // BAD_ARGUMENT, but it counts
    for (int i = 0; i < 7; ++i) {
        EXPECT_EQ(h.status(XENHSA_CMD_HELLO, broken), XENHSA_STATUS_BAD_ARGUMENT);
    }
    // The 8th may still succeed ...
    EXPECT_EQ(h.status(XENHSA_CMD_HELLO, h.hello_req(0)), XENHSA_STATUS_OK);
    // ... the 9th may not, whatever it asks.
    const auto proposal = h.requests->state();
    EXPECT_EQ(proposal, GuestRequests::State::negotiating);
    EXPECT_EQ(h.status(XENHSA_CMD_HELLO, h.hello_req(0)), XENHSA_STATUS_BAD_STATE);
    // Syntactic checks still come first.
    EXPECT_EQ(h.status(XENHSA_CMD_HELLO, broken), XENHSA_STATUS_BAD_ARGUMENT);
}

TEST(Hello, AfterConnectedIsBadState) {
    RequestsHarness h;
    h.connect();
    EXPECT_EQ(h.status(XENHSA_CMD_HELLO, h.hello_req(0)), XENHSA_STATUS_BAD_STATE);
}

TEST(Hello, FeaturesAreTheRequestsBitsTheBackendSupports) {
    HarnessOptions o;
    o.gpu = false;
    o.sharer = false;
    RequestsHarness h(o);
    const uint64_t asked = XENHSA_FEATURES_V1 | (1ull << 40);  // an unknown bit too
    auto r = h.send(XENHSA_CMD_HELLO, h.hello_req(0, asked));
    ASSERT_TRUE(r);
    EXPECT_EQ(payload_of<xenhsa_hello_rsp>(*r).features, XENHSA_FEATURE_INDIRECT);
    h.connect(asked);
    EXPECT_EQ(h.requests->features(), XENHSA_FEATURE_INDIRECT);
}

TEST(Hello, SdmaIsGrantedWhenAskedForAndTheGpuSeamMakesSdmaQueues) {
    {
        RequestsHarness h;
        h.connect(XENHSA_FEATURES_KNOWN | (1ull << 40));
        EXPECT_EQ(h.requests->features(), XENHSA_FEATURES_KNOWN);
    }
    {
        RequestsHarness h;  // an older guest
        h.connect(XENHSA_FEATURES_V1);
        EXPECT_EQ(h.requests->features(), XENHSA_FEATURES_V1);
    }
    {
        RequestsHarness h;  // a seam without SDMA (the libhsakmt adapter)
        h.kfd.set_sdma(false);
        h.connect(XENHSA_FEATURES_KNOWN);
        EXPECT_EQ(h.requests->features(), XENHSA_FEATURES_V1);
    }
    {
        HarnessOptions o;  // no GPU seam at all
        o.gpu = false;
        RequestsHarness h(o);
        h.connect(XENHSA_FEATURES_KNOWN);
        EXPECT_EQ(h.requests->features() & (XENHSA_FEATURE_GPU | XENHSA_FEATURE_SDMA), 0u);
    }
    EXPECT_EQ(RequestOptions{}.features, XENHSA_FEATURES_KNOWN) << "the default allows SDMA";
    EXPECT_EQ(GuestOptions{}.features, XENHSA_FEATURES_KNOWN);
}

TEST(Hello, CommandsBeforeConnectedAreBadStateUnlessMalformed) {
    RequestsHarness h;
    xenhsa_query_req q{};
    q.kind = XENHSA_QUERY_VERSION;
    EXPECT_EQ(h.status(XENHSA_CMD_QUERY, q), XENHSA_STATUS_BAD_STATE);
    q.node = 3;  // unused field: syntactic BAD_PAD comes first
    EXPECT_EQ(h.status(XENHSA_CMD_QUERY, q), XENHSA_STATUS_BAD_PAD);
    h.send(XENHSA_CMD_HELLO, h.hello_req(0));
    q.node = 0;
    EXPECT_EQ(h.status(XENHSA_CMD_QUERY, q), XENHSA_STATUS_BAD_STATE);  // NEGOTIATING too
}

TEST(Hello, MaxInFlightStaysBelowRingSlots) {
    HarnessOptions o;
    o.quotas.max_in_flight = 127;
    o.ring_slots = 32;
    RequestsHarness h(o);
    auto r = h.send(XENHSA_CMD_HELLO, h.hello_req(0));
    ASSERT_TRUE(r);
    const auto p = payload_of<xenhsa_hello_rsp>(*r);
    EXPECT_EQ(p.ring_slots, 32u);
    EXPECT_EQ(p.max_in_flight, 31u);
}

TEST(Hello, SessionEndReleasesTheWindow) {
    uint64_t base = 0;
    {
        RequestsHarness h;
        base = h.connect();
        EXPECT_EQ(protection_at(reinterpret_cast<void*>(base)), "---p");
    }
    EXPECT_EQ(protection_at(reinterpret_cast<void*>(base)), "");
}

}  // namespace
}  // namespace xenhsa::backend::core::testing
