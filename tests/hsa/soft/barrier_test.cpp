// Barrier-AND and barrier-OR packets: dependencies across queues and from the host.
#include "soft_fixture.hpp"

namespace xenhsa::hsa::soft_test {
namespace {

class BarrierTest : public SoftAgentTest {};

TEST_F(BarrierTest, AndChainOrdersWorkAcrossThreeQueues) {
    constexpr uint32_t words = 8 * 1024;
    GpuBuffer x(device(), words * 4), y(device(), words * 4), z(device(), words * 4);
    GpuBuffer args(device(), kPage);
    SignalPage signals(device());
    AqlTestQueue first(device()), second(device()), third(device());
    const uint64_t filled = signals.init(0, 1);
    const uint64_t copied = signals.init(1, 1);
    const uint64_t done = signals.init(2, 1);
    const Va fill = put_kernarg(args, 0, xenhsa_kernarg_fill{x.va(), words, 0x5a5a, 0});
    const Va copy_xy = put_kernarg(args, 64, xenhsa_kernarg_copy{y.va(), x.va(), words * 4});
    const Va copy_yz = put_kernarg(args, 128, xenhsa_kernarg_copy{z.va(), y.va(), words * 4});

    // Submitted last stage first: each stage waits for the one before it.
    third.submit(barrier_packet({copied}, 0));
    third.submit(dispatch_packet(kernel_object("copy"), copy_yz, grid_1d(words * 4, 1024), done));
    second.submit(barrier_packet({filled}, 0));
    second.submit(
        dispatch_packet(kernel_object("copy"), copy_xy, grid_1d(words * 4, 1024), copied));
    EXPECT_EQ(signals.value(2), 1);  // nothing can have run: the chain's head is not there
    EXPECT_EQ(signals.value(1), 1);
    first.submit(dispatch_packet(kernel_object("fill"), fill, grid_1d(words, 256), filled));

    ASSERT_TRUE(signals.wait_eq(2, 0));
    EXPECT_EQ(signals.value(0), 0);
    EXPECT_EQ(signals.value(1), 0);
    for (uint32_t i = 0; i < words; ++i) {
        ASSERT_EQ(z.at<uint32_t>()[i], 0x5a5au) << i;
    }
}

TEST_F(BarrierTest, AndWaitsForEveryDependencyStoredByTheHost) {
    SignalPage signals(device());
    AqlTestQueue queue(device()), probe(device());
    const uint64_t a = signals.init(0, 1);
    const uint64_t b = signals.init(1, 1);
    const uint64_t c = signals.init(2, 1);
    const uint64_t done = signals.init(3, 1);
    queue.submit(barrier_packet({a, 0, b, c}, done));  // handle 0 counts as satisfied

    signals.store(0, 0);
    signals.store(1, 0);
    // The probe queue sees a and b at 0: the agent has seen those stores.
    probe.submit(barrier_packet({a, b}, signals.init(4, 1)));
    ASSERT_TRUE(signals.wait_eq(4, 0));
    EXPECT_EQ(signals.value(3), 1);  // c is still 1
    EXPECT_EQ(queue.read_index(), 0u);

    signals.store(2, 0);
    ASSERT_TRUE(signals.wait_eq(3, 0));
    EXPECT_TRUE(queue.wait_read_index(1));
}

TEST_F(BarrierTest, AndWithoutDependenciesCompletesAtOnce) {
    SignalPage signals(device());
    AqlTestQueue queue(device());
    queue.submit(barrier_packet({}, signals.init(0, 1)));
    ASSERT_TRUE(signals.wait_eq(0, 0));
}

TEST_F(BarrierTest, OrCompletesWhenAnyDependencyIsZero) {
    SignalPage signals(device());
    AqlTestQueue queue(device());
    const uint64_t a = signals.init(0, 1);
    const uint64_t b = signals.init(1, 3);
    queue.submit(barrier_packet({0, a, b}, signals.init(2, 1), HSA_PACKET_TYPE_BARRIER_OR));
    signals.store(1, 0);
    ASSERT_TRUE(signals.wait_eq(2, 0));
    EXPECT_EQ(signals.value(0), 1);  // untouched
}

TEST_F(BarrierTest, OrCompletedByAnotherQueuesDispatch) {
    GpuBuffer data(device(), kPage), args(device(), kPage);
    SignalPage signals(device());
    AqlTestQueue waiting(device()), working(device());
    const uint64_t never = signals.init(0, 1);
    const uint64_t dispatched = signals.init(1, 1);
    waiting.submit(
        barrier_packet({never, dispatched}, signals.init(2, 1), HSA_PACKET_TYPE_BARRIER_OR));
    const Va fill = put_kernarg(args, 0, xenhsa_kernarg_fill{data.va(), 8, 1, 0});
    working.submit(dispatch_packet(kernel_object("fill"), fill, grid_1d(8, 8), dispatched));
    ASSERT_TRUE(signals.wait_eq(2, 0));
    EXPECT_EQ(signals.value(0), 1);
}

TEST_F(BarrierTest, PacketsAfterABarrierWaitForIt) {
    GpuBuffer data(device(), kPage), args(device(), kPage);
    SignalPage signals(device());
    AqlTestQueue queue(device());
    const uint64_t gate = signals.init(0, 1);
    const Va fill = put_kernarg(args, 0, xenhsa_kernarg_fill{data.va(), 4, 42, 0});
    queue.submit(barrier_packet({gate}, 0));
    queue.submit(dispatch_packet(kernel_object("fill"), fill, grid_1d(4, 4), signals.init(1, 1)));
    EXPECT_EQ(signals.value(1), 1);  // the gate is closed
    EXPECT_EQ(data.at<uint32_t>()[0], 0u);
    signals.store(0, 0);
    ASSERT_TRUE(signals.wait_eq(1, 0));
    EXPECT_EQ(data.at<uint32_t>()[0], 42u);
}

}  // namespace
}  // namespace xenhsa::hsa::soft_test
