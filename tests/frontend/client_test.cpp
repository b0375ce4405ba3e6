// The Client over a scripted in-process backend: HELLO's window negotiation, seqno
// matching, indirect MAPs, and a backend that breaks the protocol or dies.
#include <gtest/gtest.h>

#include <cstring>
#include <xenhsa/frontend/client.hpp>
#include <xenhsa/frontend/errors.hpp>
#include <xenhsa/frontend/probe.hpp>

#include "fake_link.hpp"

namespace {

using namespace xenhsa::frontend;
using namespace xenhsa::frontend::testing;
using namespace std::chrono_literals;

constexpr uint64_t kProposal = 0x300000000000ull;
constexpr uint64_t kWindow = 1ull << 30;

template <class Wire>
Wire req_as(const xenhsa_req_slot& slot) {
    return xenhsa::proto::payload_as<Wire>(slot);
}

xenhsa_hello_rsp hello_rsp(uint64_t base, uint64_t features = XENHSA_FEATURES_V1) {
    return {1, XENHSA_RING_SLOTS(FakeLink::kOrder), features, base, kWindow, 4096, 4096, 256, 15};
}

class ClientTest : public ::testing::Test {
protected:
    ClientTest() {
        link_.handler = [this](const xenhsa_req_slot& r) { return answer(r); };
    }

    // The default backend: proposes kProposal, confirms what the guest asks, else OK.
    std::optional<FakeAnswer> answer(const xenhsa_req_slot& req) {
        if (req.hdr.cmd == XENHSA_CMD_HELLO) {
            const auto hello = req_as<xenhsa_hello_req>(req);
            return FakeAnswer::ok(
                hello_rsp(hello.va_base == 0 ? kProposal : hello.va_base, hello.features));
        }
        return link_.default_answer(req);
    }

    void connect() {
        auto s = client_.hello({XENHSA_FEATURES_V1, kWindow, 0});
        ASSERT_TRUE(s) << s.error().message();
    }

    // Connected, then a backend that answers nothing; the requests it held land in held_.
    void go_silent() {
        connect();
        link_.handler = [this](const xenhsa_req_slot& req) {
            held_.push_back(req);
            return std::optional<FakeAnswer>{};
        };
    }
    std::vector<xenhsa_req_slot> held_;

    FakeLink link_;
    FakeSharer sharer_;
    FakeMapper mapper_{64};
    Client client_{link_, sharer_, mapper_, ClientOptions{2000ms}};
};

TEST_F(ClientTest, HelloTakesTheBackendsProposalWhenItIsFreeHere) {
    connect();
    ASSERT_EQ(link_.requests.size(), 2u);
    EXPECT_EQ(req_as<xenhsa_hello_req>(link_.requests[0]).va_base, 0u);
    EXPECT_EQ(req_as<xenhsa_hello_req>(link_.requests[1]).va_base, kProposal);
    EXPECT_EQ(client_.session()->va_base, kProposal);
    // The window is held here now: nobody else can map there.
    EXPECT_EQ(VaReservation::reserve_at(kProposal, 4096).error(), std::errc::file_exists);
    EXPECT_EQ(client_.window().base(), kProposal);
}

TEST_F(ClientTest, HelloAsksForItsOwnWindowWhenTheProposalIsTakenHere) {
    auto taken = VaReservation::reserve_at(kProposal, kWindow);
    ASSERT_TRUE(taken);
    connect();
    ASSERT_EQ(link_.requests.size(), 2u);
    const uint64_t own = req_as<xenhsa_hello_req>(link_.requests[1]).va_base;
    EXPECT_NE(own, 0u);
    EXPECT_NE(own, kProposal);
    EXPECT_EQ(client_.session()->va_base, own);
}

TEST_F(ClientTest, HelloFollowsABadAddressCounterProposal) {
    constexpr uint64_t kOther = 0x310000000000ull;
    link_.handler = [](const xenhsa_req_slot& req) -> std::optional<FakeAnswer> {
        const auto hello = req_as<xenhsa_hello_req>(req);
        if (hello.va_base == kOther) {
            return FakeAnswer::ok(hello_rsp(kOther));
        }
        // Whatever else the guest asks for is taken on the backend's side.
        xenhsa_hello_rsp proposal{};
        proposal.va_base = kOther;
        proposal.va_size = kWindow;
        FakeAnswer a = FakeAnswer::ok(proposal);
        a.status = XENHSA_STATUS_BAD_ADDRESS;
        return a;
    };
    auto s = client_.hello({XENHSA_FEATURES_V1, kWindow, 0});
    ASSERT_TRUE(s) << s.error().message();
    EXPECT_EQ(s.value().va_base, kOther);
    EXPECT_EQ(link_.requests.size(), 2u);
}

// A window the backend refuses outright (below the floor, say) comes back as BAD_ADDRESS
// without a proposal: that is the refusal, not a broken backend (issue 11, item 4).
TEST_F(ClientTest, HelloRefusedWithoutAProposalIsReportedAsTheRefusal) {
    link_.handler = [](const xenhsa_req_slot&) -> std::optional<FakeAnswer> {
        FakeAnswer a = FakeAnswer::ok(xenhsa_hello_rsp{});
        a.status = XENHSA_STATUS_BAD_ADDRESS;
        return a;
    };
    auto s = client_.hello({XENHSA_FEATURES_V1, kWindow, 0});
    ASSERT_FALSE(s);
    EXPECT_EQ(status_of(s.error()), int64_t{XENHSA_STATUS_BAD_ADDRESS}) << s.error().message();
    EXPECT_FALSE(link_.broken);
    EXPECT_FALSE(client_.broken());
    EXPECT_EQ(link_.requests.size(), 1u);
}

TEST_F(ClientTest, HelloVersionErrorIsReported) {
    link_.handler = [](const xenhsa_req_slot&) -> std::optional<FakeAnswer> {
        xenhsa_hello_rsp r{};
        r.version = 7;
        FakeAnswer a = FakeAnswer::ok(r);
        a.status = XENHSA_STATUS_VERSION;
        return a;
    };
    auto s = client_.hello();
    ASSERT_FALSE(s);
    EXPECT_EQ(status_of(s.error()), int64_t{XENHSA_STATUS_VERSION});
    EXPECT_FALSE(client_.session());
}

TEST_F(ClientTest, HelloWithAnotherRingSizeIsABrokenBackend) {
    link_.handler = [](const xenhsa_req_slot& req) -> std::optional<FakeAnswer> {
        auto r = hello_rsp(kProposal);
        r.ring_slots = 32;  // we granted a 16-slot ring
        r.features &= req_as<xenhsa_hello_req>(req).features;
        return FakeAnswer::ok(r);
    };
    EXPECT_EQ(client_.hello().error(), Errc::backend_broken);
    EXPECT_TRUE(link_.broken);
}

TEST_F(ClientTest, StatusErrorsComeBackAsValues) {
    connect();
    link_.handler = [](const xenhsa_req_slot&) {
        return std::optional<FakeAnswer>(FakeAnswer::status_only(XENHSA_STATUS_BAD_HANDLE));
    };
    auto r = client_.unmap(Handle{77});
    ASSERT_FALSE(r);
    EXPECT_EQ(status_of(r.error()), int64_t{XENHSA_STATUS_BAD_HANDLE});
    EXPECT_FALSE(client_.broken());
}

TEST_F(ClientTest, RepliesAreMatchedBySeqnoInAnyOrder) {
    connect();
    std::vector<xenhsa_req_slot> held;
    link_.handler = [&](const xenhsa_req_slot& req) {
        held.push_back(req);
        return std::optional<FakeAnswer>{};
    };
    const xenhsa_query_req q{XENHSA_QUERY_VERSION, 0, 0, 0};
    auto a = client_.send(XENHSA_CMD_QUERY, std::as_bytes(std::span(&q, 1)));
    const xenhsa_handle_req h{5};
    auto b = client_.send(XENHSA_CMD_EVENT_SET, std::as_bytes(std::span(&h, 1)));
    ASSERT_TRUE(a && b);
    link_.serve();
    ASSERT_EQ(held.size(), 2u);
    // Answer the second first.
    link_.respond(held[1].hdr.seqno, XENHSA_STATUS_BAD_HANDLE, {});
    xenhsa_query_rsp qr{};
    qr.total_len = sizeof(xenhsa_version_info);
    qr.chunk_len = qr.total_len;
    link_.respond(held[0].hdr.seqno, XENHSA_STATUS_OK, std::as_bytes(std::span(&qr, 1)));
    auto first = client_.receive(a.value());
    auto second = client_.receive(b.value());
    ASSERT_TRUE(first && second);
    EXPECT_EQ(first.value().status, uint32_t{XENHSA_STATUS_OK});
    EXPECT_EQ(second.value().status, uint32_t{XENHSA_STATUS_BAD_HANDLE});
    EXPECT_EQ(client_.outstanding(), 0u);
}

TEST_F(ClientTest, UnknownSeqnoIsABrokenBackend) {
    connect();
    link_.handler = [&](const xenhsa_req_slot& req) {
        link_.respond(req.hdr.seqno + 1000, XENHSA_STATUS_OK, {});
        return std::optional<FakeAnswer>{};
    };
    auto r = client_.event_set(Handle{3});
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error(), Errc::backend_broken);
    EXPECT_TRUE(link_.broken);
    // Broken for good.
    EXPECT_EQ(client_.query_version().error(), Errc::backend_broken);
}

TEST_F(ClientTest, AReusedHandleIsABrokenBackend) {
    connect();
    link_.handler = [](const xenhsa_req_slot&) {
        return std::optional<FakeAnswer>(FakeAnswer::ok(xenhsa_handle_rsp{42}));
    };
    auto buffer = client_.allocate(1);
    ASSERT_TRUE(buffer);
    auto first = client_.map(buffer.value());
    ASSERT_TRUE(first);
    EXPECT_EQ(first.value(), 42u);
    auto second = client_.pin(buffer.value().va(), 4096);
    ASSERT_FALSE(second);
    EXPECT_EQ(second.error(), Errc::backend_broken);
}

TEST_F(ClientTest, GarbledResponseIsABrokenBackend) {
    connect();
    link_.handler = [&](const xenhsa_req_slot& req) {
        xenhsa_rsp_slot raw{};
        raw.hdr.seqno = req.hdr.seqno;
        raw.hdr.status = XENHSA_STATUS_OK;
        raw.hdr.len = 8;  // UNPIN answers carry no payload
        link_.respond_raw(raw);
        return std::optional<FakeAnswer>{};
    };
    EXPECT_EQ(client_.unpin(Handle{9}).error(), Errc::backend_broken);
}

// A late QUEUE_CREATE or ALLOC would leave a live object the guest has no record of: a
// request that creates or destroys one ends the session when it times out.
TEST_F(ClientTest, AStateChangingRequestThatTimesOutEndsTheSession) {
    go_silent();
    Client quick(link_, sharer_, mapper_, ClientOptions{30ms});
    auto r = quick.call(XENHSA_CMD_QUEUE_DESTROY, xenhsa_handle_req{4});
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error(), std::errc::timed_out);
    EXPECT_TRUE(link_.broken) << "the device must be closing";
    link_.handler = nullptr;
    // Every later call says why the session ended.
    EXPECT_EQ(quick.call(XENHSA_CMD_EVENT_RESET, xenhsa_handle_req{4}).error(),
              Errc::session_timed_out);
    EXPECT_EQ(quick.broken_reason(), Errc::session_timed_out);
    EXPECT_TRUE(Client::changes_objects(XENHSA_CMD_ALLOC));
    EXPECT_TRUE(Client::changes_objects(XENHSA_CMD_QUEUE_CREATE));
    EXPECT_FALSE(Client::changes_objects(XENHSA_CMD_EVENT_WAIT));
}

TEST_F(ClientTest, SilentBackendTimesOutAndTheLateReplyIsDropped) {
    go_silent();
    Client quick(link_, sharer_, mapper_, ClientOptions{30ms});
    auto r = quick.call(XENHSA_CMD_EVENT_SET, xenhsa_handle_req{4});
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error(), std::errc::timed_out);
    EXPECT_FALSE(link_.broken) << "a late EVENT_SET changes nothing the guest keeps";
    ASSERT_EQ(held_.size(), 1u);
    EXPECT_EQ(quick.outstanding(), 1u);  // its credit stays taken until the reply comes
    link_.respond(held_[0].hdr.seqno, XENHSA_STATUS_OK, {});
    link_.handler = nullptr;
    auto next = quick.call(XENHSA_CMD_EVENT_RESET, xenhsa_handle_req{4});
    ASSERT_TRUE(next);
    EXPECT_EQ(quick.outstanding(), 0u);
}

TEST_F(ClientTest, DeadBackendIsNoticedWhileWaiting) {
    connect();
    link_.handler = [&](const xenhsa_req_slot&) {
        link_.kill_backend();
        return std::optional<FakeAnswer>{};
    };
    EXPECT_EQ(client_.event_set(Handle{1}).error(), Errc::backend_gone);
}

TEST_F(ClientTest, BuffersLiveInTheWindowAtTheirVa) {
    connect();
    auto a = client_.allocate(3);
    auto b = client_.allocate(1);
    ASSERT_TRUE(a && b);
    EXPECT_EQ(a.value().va(), kProposal);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(a.value().data()), a.value().va());
    EXPECT_EQ(b.value().va(), kProposal + 3 * 4096);
    const uint64_t free_before = client_.window().free_bytes();
    ASSERT_TRUE(a.value().release());
    EXPECT_EQ(client_.window().free_bytes(), free_before + 3 * 4096);
}

TEST_F(ClientTest, SmallMapListsItsRefsInline) {
    connect();
    auto buffer = client_.allocate(5);
    ASSERT_TRUE(buffer);
    auto handle = client_.map(buffer.value(), false);
    ASSERT_TRUE(handle);
    const auto req = req_as<xenhsa_map_req>(link_.requests.back());
    EXPECT_EQ(req.va, buffer.value().va());
    EXPECT_EQ(req.flags, 0u);
    EXPECT_EQ(req.nrefs, 5u);
    for (uint32_t i = 0; i < 5; ++i) {
        EXPECT_EQ(req.gref[i], buffer.value().refs()[i]);
    }
}

TEST_F(ClientTest, LargeMapGoesThroughIndirectPages) {
    connect();
    auto buffer = client_.allocate(1500);
    ASSERT_TRUE(buffer);
    std::vector<xenhsa::xen::GrantRef> listed;
    link_.handler = [&](const xenhsa_req_slot& r) -> std::optional<FakeAnswer> {
        if (r.hdr.cmd == XENHSA_CMD_MAP) {
            // What the backend does: read each indirect page (once) by its grant ref.
            const auto req = req_as<xenhsa_map_req>(r);
            for (uint32_t i = 0; i < req.nrefs; ++i) {
                const std::byte* page = sharer_.page(req.gref[i]);
                if (page == nullptr) {
                    return FakeAnswer::status_only(XENHSA_STATUS_GRANT_FAILED);
                }
                const auto* refs = reinterpret_cast<const xenhsa::xen::GrantRef*>(page);
                listed.insert(listed.end(), refs, refs + 1024);
            }
        }
        return answer(r);
    };
    auto handle = client_.map(buffer.value());
    ASSERT_TRUE(handle) << handle.error().message();
    const auto req = req_as<xenhsa_map_req>(link_.requests.back());
    EXPECT_EQ(req.flags, XENHSA_MAP_RW | XENHSA_MAP_INDIRECT);
    EXPECT_EQ(req.npages, 1500u);
    EXPECT_EQ(req.nrefs, 2u);
    ASSERT_EQ(listed.size(), 2048u);
    for (std::size_t i = 0; i < 1500; ++i) {
        ASSERT_EQ(listed[i], buffer.value().refs()[i]);
    }
    for (std::size_t i = 1500; i < 2048; ++i) {
        ASSERT_EQ(listed[i], 0u);
    }
    // The indirect pages were given back once the backend answered.
    EXPECT_EQ(sharer_.page(req.gref[0]), nullptr);
}

TEST_F(ClientTest, IndirectMapNeedsTheFeature) {
    auto s = client_.hello({XENHSA_FEATURE_GPU, kWindow, 0});
    ASSERT_TRUE(s);
    auto buffer = client_.allocate(60);
    ASSERT_TRUE(buffer);
    auto r = client_.map(buffer.value());
    ASSERT_FALSE(r);
    EXPECT_EQ(status_of(r.error()), int64_t{XENHSA_STATUS_UNSUPPORTED});
}

TEST_F(ClientTest, GpuVaMustMirrorThePin) {
    connect();
    auto pin = client_.pin(kProposal, 4096);
    ASSERT_TRUE(pin);
    link_.handler = [](const xenhsa_req_slot&) {
        return std::optional<FakeAnswer>(FakeAnswer::ok(xenhsa_map_to_gpu_rsp{kProposal + 4096}));
    };
    EXPECT_EQ(client_.map_to_gpu(pin.value(), 2).error(), Errc::backend_broken);
}

TEST_F(ClientTest, LendIsMappedAtItsVaAndRevokeIsDetected) {
    connect();
    link_.handler = [&](const xenhsa_req_slot& r) -> std::optional<FakeAnswer> {
        if (r.hdr.cmd != XENHSA_CMD_LEND) {
            return answer(r);
        }
        const auto req = req_as<xenhsa_lend_req>(r);
        xenhsa_lend_rsp rsp{};
        rsp.handle = 0x77;
        rsp.npages = req.npages;
        rsp.flags = req.flags;
        rsp.nrefs = req.npages;
        for (uint32_t i = 0; i < req.npages; ++i) {
            rsp.gref[i] = FakeMapper::kBase + i;
        }
        return FakeAnswer::ok(rsp);
    };
    auto lent = client_.lend(2, true);
    ASSERT_TRUE(lent) << lent.error().message();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(lent.value().data()), lent.value().va);
    EXPECT_TRUE(probe(lent.value().data(), ProbeAccess::write));

    // The backend takes the pages back and says so.
    mapper_.revoke_all();
    link_.post({XENHSA_NOTIFY_REVOKED, 0, 0x77, lent.value().va, 2});
    auto notice = client_.wait_notification(XENHSA_NOTIFY_REVOKED, 0x77, 1000ms);
    ASSERT_TRUE(notice);
    EXPECT_TRUE(client_.revoked(0x77));
    EXPECT_EQ(probe(lent.value().data()).error(), Errc::revoked_access);

    link_.handler = nullptr;
    ASSERT_TRUE(client_.unmap(lent.value()));
    EXPECT_FALSE(client_.revoked(0x77));
    EXPECT_EQ(client_.live_handles(), 0u);
}

TEST_F(ClientTest, SecondRevokeOfOneLendIsABrokenBackend) {
    connect();
    link_.handler = [&](const xenhsa_req_slot& r) -> std::optional<FakeAnswer> {
        if (r.hdr.cmd != XENHSA_CMD_LEND) {
            return answer(r);
        }
        xenhsa_lend_rsp rsp{};
        rsp.handle = 0x78;
        rsp.npages = 1;
        rsp.flags = XENHSA_MAP_RW;
        rsp.nrefs = 1;
        rsp.gref[0] = FakeMapper::kBase;
        return FakeAnswer::ok(rsp);
    };
    auto lent = client_.lend(1, true);
    ASSERT_TRUE(lent);
    link_.post({XENHSA_NOTIFY_REVOKED, 0, 0x78, lent.value().va, 1});
    ASSERT_TRUE(client_.pump(10ms));
    link_.post({XENHSA_NOTIFY_REVOKED, 0, 0x78, lent.value().va, 1});
    EXPECT_EQ(client_.pump(10ms).error(), Errc::backend_broken);
}

TEST_F(ClientTest, FullRingWaitsForCreditInsteadOfOverrunning) {
    connect();
    std::vector<xenhsa_req_slot> held;
    link_.handler = [&](const xenhsa_req_slot& req) {
        held.push_back(req);
        return std::optional<FakeAnswer>{};
    };
    std::vector<uint32_t> seqnos;
    for (uint32_t i = 0; i < link_.ring().slots(); ++i) {
        auto s =
            client_.send(XENHSA_CMD_EVENT_SET, std::as_bytes(std::span("\x01\0\0\0\0\0\0\0", 8)));
        ASSERT_TRUE(s);
        seqnos.push_back(s.value());
    }
    link_.serve();
    ASSERT_EQ(held.size(), std::size_t{link_.ring().slots()});
    // One more: no credit; once the backend answers the first, it goes through.
    link_.respond(held.front().hdr.seqno, XENHSA_STATUS_OK, {});
    auto extra =
        client_.send(XENHSA_CMD_EVENT_SET, std::as_bytes(std::span("\x02\0\0\0\0\0\0\0", 8)));
    ASSERT_TRUE(extra) << extra.error().message();
    EXPECT_EQ(client_.outstanding(), link_.ring().slots());
    for (std::size_t i = 1; i < held.size(); ++i) {
        link_.respond(held[i].hdr.seqno, XENHSA_STATUS_OK, {});
    }
    link_.handler = nullptr;  // the extra one is answered when the backend sees it
    for (std::size_t i = 1; i < seqnos.size(); ++i) {
        ASSERT_TRUE(client_.receive(seqnos[i]));
    }
    ASSERT_TRUE(client_.receive(extra.value()));
    EXPECT_EQ(client_.outstanding(), 0u);
}

TEST_F(ClientTest, EventWaitMaskAndTimeout) {
    connect();
    link_.handler = [](const xenhsa_req_slot& r) -> std::optional<FakeAnswer> {
        const auto w = req_as<xenhsa_event_wait_req>(r);
        if (w.timeout_ms == 0) {
            return FakeAnswer::status_only(XENHSA_STATUS_TIMEOUT);
        }
        return FakeAnswer::ok(xenhsa_event_wait_rsp{0b10, 0});
    };
    const std::array<Handle, 2> events{11, 12};
    auto mask = client_.event_wait(events, false, 100);
    ASSERT_TRUE(mask);
    EXPECT_EQ(mask.value(), 0b10u);
    auto timed = client_.event_wait(events, false, 0);
    ASSERT_FALSE(timed);
    EXPECT_EQ(status_of(timed.error()), int64_t{XENHSA_STATUS_TIMEOUT});
}

}  // namespace
