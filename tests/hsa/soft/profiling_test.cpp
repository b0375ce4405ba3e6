// A queue that profiles (ENABLE_PROFILING in its amd_queue_t) gets each packet's start and
// end written to its completion signal, as a command processor writes them: on the
// agent's clock (clock.hpp), start before end, within the time the packet was in the
// queue; a queue that does not profile leaves them alone.
#include "clock.hpp"
#include "soft_fixture.hpp"

namespace xenhsa::hsa::soft_test {
namespace {

class ProfilingTest : public SoftAgentTest {};

struct Times {
    uint64_t start, end;
};

Times times_of(uint64_t signal) {
    const auto* s = reinterpret_cast<const amd_signal_t*>(signal);
    return {s->start_ts, s->end_ts};
}

TEST_F(ProfilingTest, EachPacketOfAProfilingQueueHasItsTimes) {
    GpuBuffer small(device(), kPage), big(device(), 4u << 20), args(device(), kPage);
    SignalPage signals(device());
    AqlTestQueue queue(device(), QueueOptions{.profiling = true});
    const Va fill_small = put_kernarg(args, 0, xenhsa_kernarg_fill{small.va(), 16, 1, 0});
    const Va fill_big = put_kernarg(args, 64, xenhsa_kernarg_fill{big.va(), (4u << 20) / 4, 2, 0});
    const uint64_t before = soft::clock_now();
    // An inline dispatch, one on the pool, and a barrier.
    queue.submit(
        dispatch_packet(kernel_object("fill"), fill_small, grid_1d(16, 16), signals.init(0, 1)));
    queue.submit(dispatch_packet(kernel_object("fill"), fill_big, grid_1d((4u << 20) / 4, 256),
                                 signals.init(1, 1)));
    queue.submit(barrier_packet({signals.signal(1)}, signals.init(2, 1)));
    for (uint32_t i = 0; i < 3; ++i) {
        ASSERT_TRUE(signals.wait_eq(i, 0)) << i;
    }
    const uint64_t after = soft::clock_now();
    uint64_t previous_end = before;
    for (uint32_t i = 0; i < 3; ++i) {
        const Times t = times_of(signals.signal(i));
        EXPECT_GE(t.start, before) << i;
        EXPECT_LE(t.start, t.end) << i;
        EXPECT_LE(t.end, after) << i;
        EXPECT_GE(t.end, previous_end) << i << ": packets end in order here";
        previous_end = t.end;
    }
    EXPECT_GT(times_of(signals.signal(1)).end - times_of(signals.signal(1)).start, 0u)
        << "4 MiB of fill takes time";
}

TEST_F(ProfilingTest, AQueueThatDoesNotProfileLeavesTheTimesAlone) {
    GpuBuffer data(device(), kPage), args(device(), kPage);
    SignalPage signals(device());
    AqlTestQueue queue(device());
    const Va fill = put_kernarg(args, 0, xenhsa_kernarg_fill{data.va(), 16, 1, 0});
    queue.submit(dispatch_packet(kernel_object("fill"), fill, grid_1d(16, 16), signals.init(0, 1)));
    ASSERT_TRUE(signals.wait_eq(0, 0));
    EXPECT_EQ(times_of(signals.signal(0)).start, 0u);
    EXPECT_EQ(times_of(signals.signal(0)).end, 0u);
}

}  // namespace
}  // namespace xenhsa::hsa::soft_test
