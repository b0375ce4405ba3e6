// Revoke never allocates (docs/protocol.md §5.3): a MAP with a PIN and a live queue, a
// LEND, and the session-end revoke of everything, each run on the loop thread with the
// global operator new counting.
#include <boost/asio/post.hpp>
#include <support/alloc_counter.hpp>

#include "gpu_harness.hpp"

namespace xenhsa::backend::core::testing {
namespace {

using xenhsa::testing::CountAllocations;

HarnessOptions quiet() {
    HarnessOptions o;
    o.log_calls = false;
    return o;
}

template <class F>
std::size_t allocations_on_the_loop(RequestsHarness& h, F&& f) {
    std::size_t n = ~std::size_t{0};
    boost::asio::post(h.io, [&] {
        CountAllocations counter;
        f();
        n = counter.count();
    });
    h.io.restart();
    h.io.run_one();
    return n;
}

TEST(RevokeAllocations, OneMapWithAPinAndALiveQueue) {
    GpuHarness h(quiet());
    const auto s = h.map_pin_queue(h.base);
    ASSERT_EQ(h.kfd.live_queues(), 1u);
    EXPECT_EQ(allocations_on_the_loop(h, [&] { ASSERT_TRUE(h.requests->revoke_handle(s.map)); }),
              0u);
    EXPECT_EQ(h.mapper.live_mappings(), 0u);
    EXPECT_EQ(h.kfd.live_queues(), 0u);
    EXPECT_EQ(h.notify_page->prod, 1u);  // the queue's GPU_FAULT, posted without allocating
}

TEST(RevokeAllocations, ALend) {
    GpuHarness h(quiet());
    xenhsa_lend_req l{};
    l.va = h.base;
    l.npages = 60;
    auto r = h.send(XENHSA_CMD_LEND, l);
    ASSERT_TRUE(r && r->status == XENHSA_STATUS_OK);
    const hsa::Handle lend = payload_of<xenhsa_lend_rsp>(*r).handle;
    EXPECT_EQ(allocations_on_the_loop(h, [&] { ASSERT_TRUE(h.requests->revoke_handle(lend)); }),
              0u);
    EXPECT_EQ(h.sharer.live_shares(), 0u);
    EXPECT_EQ(h.notify_page->prod, 1u);
}

TEST(RevokeAllocations, SessionEnd) {
    GpuHarness h(quiet());
    h.map_pin_queue(h.base);
    h.map_ok(h.base + 0x100000, 3, 10);
    h.event_ok();
    xenhsa_lend_req l{};
    l.va = h.base + 0x200000;
    l.npages = 2;
    ASSERT_EQ(h.status(XENHSA_CMD_LEND, l), XENHSA_STATUS_OK);
    EXPECT_EQ(allocations_on_the_loop(h, [&] { h.requests->revoke_all(true); }), 0u);
    EXPECT_EQ(h.mapper.live_mappings(), 0u);
    EXPECT_EQ(h.sharer.live_shares(), 0u);
    EXPECT_EQ(h.requests->stats().handles, 0u);
}

TEST(RevokeAllocations, TheCounterCounts) {
    CountAllocations counter;
    auto p = std::make_unique<int>(1);
    EXPECT_EQ(counter.count(), 1u);
}

}  // namespace
}  // namespace xenhsa::backend::core::testing
