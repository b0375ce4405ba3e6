// The whole core on a Boost.Asio loop: the guest's FrontRing on one side, an eventfd event
// channel, and GuestCore serving kicks.
#include <cstring>
#include <optional>
#include <vector>
#include <xenhsa/backend/core/guest_core.hpp>
#include <xenhsa/frontend/front_ring.hpp>

#include "fake_event_channel.hpp"
#include "gpu_harness.hpp"

namespace xenhsa::backend::core::testing {
namespace {

class GuestCoreTest : public ::testing::Test {
protected:
    void SetUp() override {
        ring_pages.resize(XENHSA_RING_BYTES(0));
        notify.reset(static_cast<xenhsa_notify_page*>(std::aligned_alloc(4096, 4096)));
        doorbells.reset(static_cast<xenhsa_doorbell_page*>(std::aligned_alloc(4096, 4096)));
        std::memset(notify.get(), 0, 4096);
        std::memset(doorbells.get(), 0, 4096);
        front = std::make_unique<frontend::FrontRing>(ring_pages, 0);
    }

    void start(const GuestOptions& options = {}) {
        gpu = std::make_unique<hsa::GpuContext>(base.kfd, gpu_limits(options.quotas, 16));
        GuestPages pages{ring_pages, 0, notify.get(), doorbells.get()};
        auto core =
            GuestCore::start(base.io, events, FakeEventChannel::kPort, pages,
                             RequestSeams{kGuestDomId, base.mapper, &base.sharer, gpu.get()},
                             options, [this](std::string reason) {
                                 ++fatal;
                                 reason_ = std::move(reason);
                             });
        ASSERT_TRUE(core);
        guest = std::move(core).value();
    }

    void TearDown() override {
        guest.reset();
        gpu.reset();
    }

    template <class Wire>
    void push(uint32_t cmd, uint32_t seqno, const Wire& w) {
        ASSERT_TRUE(front->push(cmd, seqno, std::as_bytes(std::span(&w, 1))));
    }
    void publish_and_kick() {
        if (front->publish()) {
            events.kick();
        }
    }
    // Pops until `n` responses arrived (10 s at most).
    std::vector<xenhsa_rsp_slot> collect(std::size_t n) {
        std::vector<xenhsa_rsp_slot> out;
        base.run_until([&] {
            for (;;) {
                auto r = front->pop();
                if (!r || !r.value()) {
                    break;
                }
                out.push_back(*r.value());
            }
            if (out.size() >= n) {
                front->final_check();  // caught up: ask for a kick before "sleeping"
                return true;
            }
            return false;
        });
        return out;
    }

    // HELLO, then guest memory MAPped, PINned and MAPped to the GPU, and an AQL queue in
    // it: its doorbell index (nullopt after a failure, already reported).
    std::optional<uint32_t> connect_with_queue() {
        uint32_t seqno = 0;
        const auto request = [&](uint32_t cmd, const auto& payload) {
            push(cmd, ++seqno, payload);
            publish_and_kick();
            auto got = collect(1);
            EXPECT_EQ(got.size(), 1u);
            return got.empty() ? xenhsa_rsp_slot{} : got[0];
        };
        auto first = request(XENHSA_CMD_HELLO, base.hello_req(0));
        xenhsa_hello_rsp p{};
        std::memcpy(&p, first.payload, sizeof p);
        xenhsa_pin_req pin{};
        pin.va = p.va_base;
        pin.size = 0x2000;
        if (request(XENHSA_CMD_HELLO, base.hello_req(p.va_base)).hdr.status != XENHSA_STATUS_OK ||
            request(XENHSA_CMD_MAP, base.map_req(p.va_base, 2, 0)).hdr.status != XENHSA_STATUS_OK) {
            ADD_FAILURE() << "HELLO or MAP refused";
            return std::nullopt;
        }
        const auto pinned = request(XENHSA_CMD_PIN, pin);
        xenhsa_handle_rsp pin_rsp{};
        std::memcpy(&pin_rsp, pinned.payload, sizeof pin_rsp);
        xenhsa_map_to_gpu_req to_gpu{};
        to_gpu.handle = pin_rsp.handle;
        to_gpu.node_mask = kGpuMask;
        if (pinned.hdr.status != XENHSA_STATUS_OK ||
            request(XENHSA_CMD_MAP_TO_GPU, to_gpu).hdr.status != XENHSA_STATUS_OK) {
            ADD_FAILURE() << "PIN or MAP_TO_GPU refused";
            return std::nullopt;
        }
        xenhsa_queue_create_req q{};
        q.node = kGpuNode;
        q.type = XENHSA_QUEUE_COMPUTE_AQL;
        q.percentage = 100;
        q.ring_va = p.va_base;
        q.ring_size = 0x1000;
        q.rptr_va = p.va_base + 0x1000;
        q.wptr_va = p.va_base + 0x1008;
        const auto made = request(XENHSA_CMD_QUEUE_CREATE, q);
        if (made.hdr.status != XENHSA_STATUS_OK) {
            ADD_FAILURE() << "QUEUE_CREATE refused";
            return std::nullopt;
        }
        xenhsa_queue_create_rsp queue{};
        std::memcpy(&queue, made.payload, sizeof queue);
        return queue.doorbell_index;
    }

    struct FreeDeleter {
        void operator()(void* p) const noexcept { std::free(p); }
    };

    RequestsHarness base{[] {
        HarnessOptions o;
        o.gpu = false;  // the fixture builds its own GpuContext and GuestRequests (GuestCore)
        return o;
    }()};
    FakeEventChannel events;
    std::vector<std::byte> ring_pages;
    std::unique_ptr<xenhsa_notify_page, FreeDeleter> notify;
    std::unique_ptr<xenhsa_doorbell_page, FreeDeleter> doorbells;
    std::unique_ptr<frontend::FrontRing> front;
    std::unique_ptr<hsa::GpuContext> gpu;
    std::unique_ptr<GuestCore> guest;
    int fatal = 0;
    std::string reason_;
};

TEST_F(GuestCoreTest, HelloOverTheRingDrivenByKicks) {
    start();
    EXPECT_EQ(doorbells->kick_requested, 1u);
    EXPECT_EQ(reinterpret_cast<xenhsa_sring*>(ring_pages.data())->be_alive, 1u);
    push(XENHSA_CMD_HELLO, 1, base.hello_req(0));
    publish_and_kick();
    auto first = collect(1);
    ASSERT_EQ(first.size(), 1u);
    EXPECT_EQ(first[0].hdr.seqno, 1u);
    EXPECT_EQ(first[0].hdr.status, XENHSA_STATUS_OK);
    xenhsa_hello_rsp p{};
    std::memcpy(&p, first[0].payload, sizeof p);
    push(XENHSA_CMD_HELLO, 2, base.hello_req(p.va_base));
    publish_and_kick();
    auto second = collect(1);
    ASSERT_EQ(second.size(), 1u);
    EXPECT_EQ(second[0].hdr.status, XENHSA_STATUS_OK);
    EXPECT_EQ(guest->requests().state(), GuestRequests::State::connected);
    EXPECT_GE(events.notified(), 2u);  // the guest asked for a kick each time
    EXPECT_EQ(fatal, 0);
}

TEST_F(GuestCoreTest, ABudgetedPassPostsTheRestInsteadOfLooping) {
    GuestOptions o;
    o.quotas.ring_budget = 2;
    start(o);
    xenhsa_query_req q{};
    q.kind = XENHSA_QUERY_VERSION;
    for (uint32_t i = 0; i < 10; ++i) {
        push(XENHSA_CMD_QUERY, 100 + i, q);  // BAD_STATE: not CONNECTED yet
    }
    publish_and_kick();
    auto all = collect(10);
    ASSERT_EQ(all.size(), 10u);
    for (uint32_t i = 0; i < 10; ++i) {
        EXPECT_EQ(all[i].hdr.seqno, 100 + i);
        EXPECT_EQ(all[i].hdr.status, XENHSA_STATUS_BAD_STATE);
    }
}

TEST_F(GuestCoreTest, AfterServingTheWorkerPollsTheRingAndTheGuestNeedNotKick) {
    GuestOptions o;
    o.ring_spin = std::chrono::milliseconds(500);  // long enough for a loaded machine
    start(o);
    xenhsa_query_req q{};
    q.kind = XENHSA_QUERY_VERSION;
    push(XENHSA_CMD_QUERY, 1, q);
    publish_and_kick();  // req_event starts at 1
    ASSERT_EQ(collect(1).size(), 1u);
    const auto* sring = reinterpret_cast<const xenhsa_sring*>(ring_pages.data());
    EXPECT_EQ(sring->req_event, 1u);  // not armed while the worker polls
    // The next request publishes without asking for a kick and is served all the same.
    push(XENHSA_CMD_QUERY, 2, q);
    EXPECT_FALSE(front->publish());
    auto second = collect(1);
    ASSERT_EQ(second.size(), 1u);
    EXPECT_EQ(second[0].hdr.seqno, 2u);
    // Polling gives up: req_event is armed, and the next request kicks.
    ASSERT_TRUE(base.run_until([&] { return sring->req_event == 3u; }));
    push(XENHSA_CMD_QUERY, 3, q);
    EXPECT_TRUE(front->publish());
    EXPECT_EQ(fatal, 0);
}

TEST_F(GuestCoreTest, WithoutASpinTheWorkerArmsTheRingAtOnce) {
    GuestOptions o;
    o.ring_spin = std::chrono::microseconds(0);
    start(o);
    xenhsa_query_req q{};
    q.kind = XENHSA_QUERY_VERSION;
    push(XENHSA_CMD_QUERY, 1, q);
    publish_and_kick();
    ASSERT_EQ(collect(1).size(), 1u);
    EXPECT_EQ(reinterpret_cast<const xenhsa_sring*>(ring_pages.data())->req_event, 2u);
    push(XENHSA_CMD_QUERY, 2, q);
    EXPECT_TRUE(front->publish());
}

TEST_F(GuestCoreTest, ProducerPastTheRingDisconnectsTheGuest) {
    start();
    front->force_req_prod(40);
    events.kick();
    ASSERT_TRUE(base.run_until([&] { return fatal != 0; }));
    EXPECT_EQ(fatal, 1);
    EXPECT_NE(reason_.find("ring"), std::string::npos);
    EXPECT_EQ(reinterpret_cast<xenhsa_sring*>(ring_pages.data())->rsp_prod, 0u);
    // Nothing more is served, and the disconnect is reported once.
    events.kick();
    base.io.restart();
    base.io.poll();
    EXPECT_EQ(fatal, 1);
}

TEST_F(GuestCoreTest, WaitAnsweredLaterThroughTheRing) {
    start();
    push(XENHSA_CMD_HELLO, 1, base.hello_req(0));
    publish_and_kick();
    auto r = collect(1);
    xenhsa_hello_rsp p{};
    std::memcpy(&p, r[0].payload, sizeof p);
    push(XENHSA_CMD_HELLO, 2, base.hello_req(p.va_base));
    xenhsa_event_create_req ec{};
    ec.node = 1;
    push(XENHSA_CMD_EVENT_CREATE, 3, ec);
    publish_and_kick();
    auto created = collect(2);
    ASSERT_EQ(created.size(), 2u);
    xenhsa_event_create_rsp ev{};
    std::memcpy(&ev, created[1].payload, sizeof ev);
    ASSERT_EQ(created[1].hdr.status, XENHSA_STATUS_OK);

    xenhsa_event_wait_req w{};
    w.count = 1;
    w.timeout_ms = XENHSA_WAIT_INFINITE;
    w.event[0] = ev.handle;
    push(XENHSA_CMD_EVENT_WAIT, 4, w);
    xenhsa_handle_req set{};
    set.handle = ev.handle;
    push(XENHSA_CMD_EVENT_SET, 5, set);
    publish_and_kick();
    auto later = collect(2);
    ASSERT_EQ(later.size(), 2u);
    // The SET is answered in the same pass; the wait when its completion is posted back.
    EXPECT_EQ(later[0].hdr.seqno, 5u);
    EXPECT_EQ(later[1].hdr.seqno, 4u);
    EXPECT_EQ(later[1].hdr.status, XENHSA_STATUS_OK);
}

TEST_F(GuestCoreTest, NotifyBacklogDrainsWithoutAKickFromTheGuest) {
    start();
    push(XENHSA_CMD_HELLO, 1, base.hello_req(0));
    publish_and_kick();
    auto r = collect(1);
    xenhsa_hello_rsp p{};
    std::memcpy(&p, r[0].payload, sizeof p);
    push(XENHSA_CMD_HELLO, 2, base.hello_req(p.va_base));
    publish_and_kick();
    collect(1);
    std::vector<hsa::Handle> lends;
    for (uint32_t i = 0; i < 70; ++i) {
        xenhsa_lend_req l{};
        l.va = p.va_base + i * 0x1000ull;
        l.npages = 1;
        push(XENHSA_CMD_LEND, 10 + i, l);
        publish_and_kick();
        auto got = collect(1);
        ASSERT_EQ(got.size(), 1u);
        ASSERT_EQ(got[0].hdr.status, XENHSA_STATUS_OK);
        xenhsa_lend_rsp rsp{};
        std::memcpy(&rsp, got[0].payload, sizeof rsp);
        lends.push_back(rsp.handle);
    }
    for (hsa::Handle l : lends) {
        ASSERT_TRUE(guest->revoke_handle(l));
    }
    EXPECT_EQ(notify->prod, 64u);
    // The guest consumes without kicking the backend; the retry publishes the rest.
    xenhsa_index_store(&notify->cons, 64);
    ASSERT_TRUE(base.run_until([&] { return xenhsa_index_load(&notify->prod) == 70u; }));
    EXPECT_EQ(notify->slot[69 % 64].handle, lends[69]);
    EXPECT_EQ(fatal, 0);
}

// A guest that kicks its event channel in a loop without work is slowed down, as Linux
// backends do since XSA-332; a fair guest is not (issue 11, item 3).
TEST_F(GuestCoreTest, KicksWithoutWorkAreThrottledAndRealWorkIsNot) {
    start();
    push(XENHSA_CMD_HELLO, 1, base.hello_req(0));
    publish_and_kick();
    ASSERT_EQ(collect(1).size(), 1u);
    const unsigned before = events.delivered();
    for (int i = 0; i < 2000; ++i) {
        events.kick();
        base.io.restart();
        base.io.poll();
    }
    const unsigned flood = events.delivered() - before;
    EXPECT_LT(flood, 100u) << "every kick without work woke the worker";
    EXPECT_GT(guest->spurious_events().throttled(), 0u);

    // A request is still served (once the channel is unmasked again) ...
    xenhsa_query_req q{};
    q.kind = XENHSA_QUERY_VERSION;
    push(XENHSA_CMD_QUERY, 2, q);
    publish_and_kick();
    ASSERT_EQ(collect(1).size(), 1u);
    // ... and a guest that kicks only for work is never held back.
    const uint64_t throttled = guest->spurious_events().throttled();
    const unsigned fair_before = events.delivered();
    for (uint32_t i = 0; i < 50; ++i) {
        push(XENHSA_CMD_QUERY, 100 + i, q);
        publish_and_kick();
        auto got = collect(1);
        ASSERT_EQ(got.size(), 1u);
        ASSERT_EQ(got[0].hdr.seqno, 100 + i);
    }
    EXPECT_EQ(guest->spurious_events().throttled(), throttled);
    EXPECT_EQ(guest->spurious_events().spurious_in_a_row(), 0u);
    EXPECT_GE(events.delivered() - fair_before, 25u);  // it kicked, and was woken for it
    EXPECT_EQ(fatal, 0);
}

// The recording device does not track kicks, as the libhsakmt adapter: the core keeps
// kick_requested at 1 and also polls the doorbells of live queues, so a guest that only
// stores its doorbell (ROCr) is served without kicking.
TEST_F(GuestCoreTest, ADoorbellStoredWithoutAKickReachesASeamThatDoesNotTrackKicks) {
    GuestOptions o;
    o.doorbell_poll.slow_after = std::chrono::milliseconds(20);
    start(o);
    EXPECT_EQ(doorbells->kick_requested, 1u);
    ASSERT_NE(guest->doorbell_watch(), nullptr);
    EXPECT_FALSE(guest->doorbell_watch()->polling()) << "no queue yet";
    const auto queue = connect_with_queue();
    ASSERT_TRUE(queue);
    EXPECT_TRUE(guest->doorbell_watch()->polling());

    // Well past the backoff: the store alone, no kick.
    base.io.restart();
    base.io.run_for(std::chrono::milliseconds(60));
    __atomic_store_n(&doorbells->doorbell[*queue], 42u, __ATOMIC_RELEASE);
    ASSERT_TRUE(base.run_until([&] { return base.kfd.last_doorbell() == 42; }));
    EXPECT_GE(guest->stats().doorbells_forwarded, 1u);
    EXPECT_GT(guest->stats().doorbell_polls, 0u);
    EXPECT_EQ(fatal, 0);
}

// A kick that only moves a doorbell, with no packet behind it, is no work either (issue
// 25, item 3): on a device that tells what its queues took, a guest that bumps its
// doorbell before each kick is throttled; one whose doorbells bring packets is not.
TEST_F(GuestCoreTest, KicksThatOnlyMoveADoorbellAreThrottled) {
    base.kfd.take_packets(0);
    start();
    const auto queue = connect_with_queue();
    ASSERT_TRUE(queue);
    const unsigned before = events.delivered();
    for (uint64_t i = 1; i <= 2000; ++i) {
        __atomic_store_n(&doorbells->doorbell[*queue], i, __ATOMIC_RELEASE);
        events.kick();
        base.io.restart();
        base.io.poll();
    }
    EXPECT_LT(events.delivered() - before, 100u) << "every doorbell-only kick woke the worker";
    EXPECT_GT(guest->spurious_events().throttled(), 0u);
    EXPECT_GT(guest->stats().doorbells_forwarded, 0u);

    // The same doorbell stores, each bringing a packet the device took: never held back.
    base.kfd.take_packets(1);
    xenhsa_query_req q{};
    q.kind = XENHSA_QUERY_VERSION;
    push(XENHSA_CMD_QUERY, 900, q);
    publish_and_kick();
    ASSERT_EQ(collect(1).size(), 1u);  // once the channel is unmasked again
    const uint64_t throttled = guest->spurious_events().throttled();
    for (uint64_t i = 3000; i < 3050; ++i) {
        __atomic_store_n(&doorbells->doorbell[*queue], i, __ATOMIC_RELEASE);
        events.kick();
        ASSERT_TRUE(base.run_until([&] { return base.kfd.last_doorbell() == i; }));
    }
    EXPECT_EQ(guest->spurious_events().throttled(), throttled);
    EXPECT_EQ(fatal, 0);
}

// A device that cannot tell (hardware) takes every doorbell as work.
TEST_F(GuestCoreTest, ADoorbellIsWorkForADeviceThatCannotTellWhatItTook) {
    start();
    const auto queue = connect_with_queue();
    ASSERT_TRUE(queue);
    const uint64_t throttled = guest->spurious_events().throttled();
    for (uint64_t i = 1; i <= 50; ++i) {
        __atomic_store_n(&doorbells->doorbell[*queue], i, __ATOMIC_RELEASE);
        events.kick();
        ASSERT_TRUE(base.run_until([&] { return base.kfd.last_doorbell() == i; }));
    }
    EXPECT_EQ(guest->spurious_events().throttled(), throttled);
    EXPECT_EQ(fatal, 0);
}

}  // namespace
}  // namespace xenhsa::backend::core::testing
