// The doorbell watch: for a GPU seam that does not track kicks (the recording device, as
// the libhsakmt adapter), doorbell stores the guest makes without a kick still reach the
// device; it polls only while queues exist, backs off, and slows down when idle.
#include <chrono>
#include <cstring>
#include <memory>
#include <xenhsa/backend/core/doorbell_watch.hpp>

#include "gpu_harness.hpp"

namespace xenhsa::backend::core::testing {
namespace {

using namespace std::chrono_literals;

struct FreeDeleter {
    void operator()(void* p) const noexcept { std::free(p); }
};

class DoorbellWatchTest : public ::testing::Test {
protected:
    DoorbellWatchTest() : page(static_cast<xenhsa_doorbell_page*>(std::aligned_alloc(4096, 4096))) {
        std::memset(page.get(), 0, sizeof *page);
    }

    // Runs the loop for `d` (or until it runs out of work).
    void run_for(std::chrono::milliseconds d) {
        h.io.restart();
        h.io.run_for(d);
    }
    void store(uint32_t index, uint64_t value) {
        __atomic_store_n(&page->doorbell[index], value, __ATOMIC_RELEASE);
    }

    GpuHarness h;
    std::unique_ptr<xenhsa_doorbell_page, FreeDeleter> page;
};

DoorbellPollPolicy quick_policy() {
    DoorbellPollPolicy p;
    p.spin_polls = 8;
    p.backoff_min = 20us;
    p.backoff_max = 1ms;
    p.slow_after = 40ms;
    p.slow_interval = 20ms;
    return p;
}

TEST_F(DoorbellWatchTest, AStoreWithoutAKickReachesTheDevice) {
    const auto s = h.map_pin_queue(h.base);
    ASSERT_NE(s.queue, 0u);
    DoorbellWatch watch(h.io, *page, *h.requests, quick_policy());
    watch.update();
    EXPECT_TRUE(watch.polling());
    store(h.doorbell, 7);
    ASSERT_TRUE(h.run_until([&] { return h.kfd.last_doorbell() == 7; }));
    // Idle long enough for the slow phase: a store is still seen, within about one period.
    run_for(100ms);
    store(h.doorbell, 8);
    const auto start = std::chrono::steady_clock::now();
    ASSERT_TRUE(h.run_until([&] { return h.kfd.last_doorbell() == 8; }));
    EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
    EXPECT_EQ(h.log.count("doorbell"), 2u) << "each change once";
    EXPECT_EQ(h.requests->stats().doorbells_forwarded, 2u);
    EXPECT_EQ(h.requests->stats().doorbell_polls, watch.polls());
}

TEST_F(DoorbellWatchTest, WithoutQueuesItHoldsNoTimer) {
    DoorbellWatch watch(h.io, *page, *h.requests, quick_policy());
    watch.update();
    EXPECT_FALSE(watch.polling());
    const auto s = h.map_pin_queue(h.base);
    watch.update();
    ASSERT_TRUE(watch.polling());
    run_for(10ms);
    EXPECT_EQ(h.handle_cmd(XENHSA_CMD_QUEUE_DESTROY, s.queue), XENHSA_STATUS_OK);
    // The next poll finds no queue and does not re-arm: the loop runs out of work.
    const auto start = std::chrono::steady_clock::now();
    run_for(2s);
    EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
    EXPECT_FALSE(watch.polling());
    const uint64_t polls = watch.polls();
    run_for(50ms);
    EXPECT_EQ(watch.polls(), polls);
}

TEST_F(DoorbellWatchTest, IdleItSlowsDownToTheSlowInterval) {
    h.map_pin_queue(h.base);
    DoorbellWatch watch(h.io, *page, *h.requests, quick_policy());
    watch.update();
    run_for(100ms);  // spin, back off, reach the slow phase
    const uint64_t before = watch.polls();
    run_for(200ms);
    const uint64_t slow = watch.polls() - before;
    EXPECT_GE(slow, 3u);   // 200 ms / 20 ms = 10, less on a loaded machine
    EXPECT_LE(slow, 14u);  // and never the backoff's rate
}

TEST_F(DoorbellWatchTest, ActivityReturnsItToTheSpinPhase) {
    h.map_pin_queue(h.base);
    auto policy = quick_policy();
    policy.slow_interval = 500ms;
    DoorbellWatch watch(h.io, *page, *h.requests, policy);
    watch.update();
    run_for(100ms);
    // A pass forwarded a change (a kick, a request): the long timer gives way at once.
    const uint64_t before = watch.polls();
    const auto start = std::chrono::steady_clock::now();
    watch.activity();
    ASSERT_TRUE(h.run_until([&] { return watch.polls() - before >= policy.spin_polls; }));
    EXPECT_LT(std::chrono::steady_clock::now() - start, 400ms) << "not after the slow timer";
}

TEST_F(DoorbellWatchTest, StopEndsItForGood) {
    h.map_pin_queue(h.base);
    DoorbellWatch watch(h.io, *page, *h.requests, quick_policy());
    watch.update();
    watch.stop();
    watch.update();
    run_for(20ms);
    EXPECT_EQ(watch.polls(), 0u);
    store(h.doorbell, 3);
    run_for(20ms);
    EXPECT_EQ(h.kfd.last_doorbell(), 0u);
}

}  // namespace
}  // namespace xenhsa::backend::core::testing
