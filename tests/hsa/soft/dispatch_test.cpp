// Kernel dispatches: results of the built-ins, grids, ring wrap-around, completion signals.
#include <numeric>

#include "soft_fixture.hpp"

namespace xenhsa::hsa::soft_test {
namespace {

class DispatchTest : public SoftAgentTest {};

TEST_F(DispatchTest, VectorAddComputesEveryElement) {
    constexpr uint32_t n = 1000;  // not a multiple of the workgroup: a partial last group
    GpuBuffer a(device(), n * 4), b(device(), n * 4), c(device(), n * 4), args(device(), kPage);
    for (uint32_t i = 0; i < n; ++i) {
        a.at<float>()[i] = static_cast<float>(i);
        b.at<float>()[i] = static_cast<float>(2 * i);
        c.at<float>()[i] = -1.0f;
    }
    SignalPage signals(device());
    AqlTestQueue queue(device());
    const Va kernarg = put_kernarg(args, 0, xenhsa_kernarg_vector_add{a.va(), b.va(), c.va(), n});
    queue.submit(
        dispatch_packet(kernel_object("vector_add"), kernarg, grid_1d(n, 64), signals.init(0, 1)));

    ASSERT_TRUE(signals.wait_eq(0, 0));
    for (uint32_t i = 0; i < n; ++i) {
        ASSERT_EQ(c.at<float>()[i], static_cast<float>(3 * i)) << i;
    }
    EXPECT_EQ(queue.read_index(), 1u);
    EXPECT_TRUE(log().faults().empty());
}

TEST_F(DispatchTest, SaxpyUpdatesY) {
    constexpr uint32_t n = 4096;
    GpuBuffer x(device(), n * 4), y(device(), n * 4), args(device(), kPage);
    for (uint32_t i = 0; i < n; ++i) {
        x.at<float>()[i] = static_cast<float>(i);
        y.at<float>()[i] = 1.0f;
    }
    SignalPage signals(device());
    AqlTestQueue queue(device());
    const Va kernarg = put_kernarg(args, 0, xenhsa_kernarg_saxpy{x.va(), y.va(), n, 2.5f, 0});
    queue.submit(
        dispatch_packet(kernel_object("saxpy"), kernarg, grid_1d(n, 256), signals.init(0, 1)));

    ASSERT_TRUE(signals.wait_eq(0, 0));
    for (uint32_t i = 0; i < n; ++i) {
        ASSERT_EQ(y.at<float>()[i], 2.5f * static_cast<float>(i) + 1.0f) << i;
    }
}

TEST_F(DispatchTest, FillThenChecksumWithBarrierBit) {
    constexpr uint32_t words = 64 * 1024;
    GpuBuffer data(device(), words * 4), args(device(), kPage), result(device(), kPage);
    SignalPage signals(device());
    AqlTestQueue queue(device());
    const Va fill = put_kernarg(args, 0, xenhsa_kernarg_fill{data.va(), words, 7, 0});
    const Va sum = put_kernarg(args, 64, xenhsa_kernarg_checksum{data.va(), words, result.va()});
    queue.submit(dispatch_packet(kernel_object("fill"), fill, grid_1d(words, 256), 0));
    // The barrier bit: the checksum starts only once the fill is complete.
    queue.submit(dispatch_packet(kernel_object("checksum"), sum, grid_1d(words, 1024),
                                 signals.init(0, 1), /*barrier=*/true));

    ASSERT_TRUE(signals.wait_eq(0, 0));
    EXPECT_EQ(*result.at<uint64_t>(), 7ull * words);
}

TEST_F(DispatchTest, CopyMovesBytes) {
    constexpr uint32_t size = 10'000;
    GpuBuffer src(device(), size), dst(device(), size), args(device(), kPage);
    for (uint32_t i = 0; i < size; ++i) {
        src.at<uint8_t>()[i] = static_cast<uint8_t>(i * 7 + 3);
    }
    SignalPage signals(device());
    AqlTestQueue queue(device());
    const Va kernarg = put_kernarg(args, 0, xenhsa_kernarg_copy{dst.va(), src.va(), size});
    queue.submit(
        dispatch_packet(kernel_object("copy"), kernarg, grid_1d(size, 1024), signals.init(0, 1)));

    ASSERT_TRUE(signals.wait_eq(0, 0));
    EXPECT_EQ(std::memcmp(src.at<uint8_t>(), dst.at<uint8_t>(), size), 0);
}

TEST_F(DispatchTest, TwoAndThreeDimensionalGridsCoverEveryItem) {
    // 2D: 100 x 30 items in 16 x 4 workgroups (partial in both dimensions).
    // 3D: 10 x 6 x 5 items in 4 x 4 x 2 workgroups.
    const Grid grids[] = {Grid{{100, 30, 1}, {16, 4, 1}, 2}, Grid{{10, 6, 5}, {4, 4, 2}, 3}};
    for (const Grid& grid : grids) {
        const uint32_t items = grid.size[0] * grid.size[1] * grid.size[2];
        GpuBuffer data(device(), (items + 16) * 4), args(device(), kPage);
        SignalPage signals(device());
        AqlTestQueue queue(device());
        const Va kernarg = put_kernarg(args, 0, xenhsa_kernarg_fill{data.va(), items, 0xabcd, 0});
        queue.submit(dispatch_packet(kernel_object("fill"), kernarg, grid, signals.init(0, 1)));

        ASSERT_TRUE(signals.wait_eq(0, 0));
        for (uint32_t i = 0; i < items; ++i) {
            ASSERT_EQ(data.at<uint32_t>()[i], 0xabcdu) << i;
        }
        EXPECT_EQ(data.at<uint32_t>()[items], 0u);  // and nothing past the count
    }
}

TEST_F(DispatchTest, RingWrapsAroundManyTimes) {
    constexpr uint32_t packets = 300;  // a 64-slot ring, wrapped four times
    GpuBuffer data(device(), packets * 4), args(device(), packets * 64);
    SignalPage signals(device());
    AqlTestQueue queue(device(), QueueOptions{.packets = 64});
    const uint64_t counted = signals.init(0, packets);
    const uint64_t fill = kernel_object("fill");
    for (uint32_t k = 0; k < packets; ++k) {
        const Va kernarg =
            put_kernarg(args, k * 64, xenhsa_kernarg_fill{data.va(k * 4), 1, k + 1, 0});
        queue.submit(dispatch_packet(fill, kernarg, grid_1d(1, 1), counted));
    }

    ASSERT_TRUE(signals.wait_eq(0, 0));
    for (uint32_t k = 0; k < packets; ++k) {
        ASSERT_EQ(data.at<uint32_t>()[k], k + 1) << k;
    }
    ASSERT_TRUE(queue.wait_read_index(packets));
    // Every consumed slot went back to INVALID.
    for (uint32_t i = 0; i < 64; ++i) {
        EXPECT_EQ(queue.slot(i)->header & 0xff, HSA_PACKET_TYPE_INVALID) << i;
    }
}

TEST_F(DispatchTest, SignalDropsOnlyAfterTheDataIsWritten) {
    constexpr uint32_t words = 16 * 1024;
    constexpr uint32_t rounds = 100;
    GpuBuffer data(device(), words * 4), args(device(), kPage);
    SignalPage signals(device());
    AqlTestQueue queue(device());
    for (uint32_t round = 1; round <= rounds; ++round) {
        const Va kernarg =
            put_kernarg(args, (round % 2) * 64, xenhsa_kernarg_fill{data.va(), words, round, 0});
        queue.submit(dispatch_packet(kernel_object("fill"), kernarg, grid_1d(words, 128),
                                     signals.init(0, 1)));
        ASSERT_TRUE(signals.wait_eq(0, 0));  // acquire: the data must be there
        for (uint32_t i = 0; i < words; ++i) {
            ASSERT_EQ(data.at<uint32_t>()[i], round) << "round " << round << " word " << i;
        }
    }
}

TEST_F(DispatchTest, CountedSignalIsDecrementedOncePerPacket) {
    constexpr int64_t packets = 40;
    GpuBuffer data(device(), kPage), args(device(), kPage);
    SignalPage signals(device());
    AqlTestQueue queue(device());
    const uint64_t counted = signals.init(0, packets);
    const Va kernarg = put_kernarg(args, 0, xenhsa_kernarg_fill{data.va(), 16, 1, 0});
    for (int64_t i = 0; i < packets; ++i) {
        queue.submit(dispatch_packet(kernel_object("fill"), kernarg, grid_1d(16, 16), counted));
    }
    ASSERT_TRUE(signals.wait_eq(0, 0));
    // A later barrier with the barrier bit retires after every dispatch completed: by then
    // no extra decrement can be pending.
    queue.submit(barrier_packet({}, signals.init(1, 1), HSA_PACKET_TYPE_BARRIER_AND, true));
    ASSERT_TRUE(signals.wait_eq(1, 0));
    EXPECT_EQ(signals.value(0), 0);
}

TEST_F(DispatchTest, CompletionSignalWithEventIdSetsTheEventAndWritesTheMailbox) {
    const EventId other = make_event();
    GpuBuffer data(device(), kPage), args(device(), kPage), mailbox(device(), kPage);
    SignalPage signals(device());
    AqlTestQueue queue(device());

    // The event_id the agent gave the event, as ROCr puts it in an interrupt signal.
    EventSpec spec;
    auto created = device().create_event(spec);
    ASSERT_TRUE(created);
    const EventInfo interrupt = created.value();
    EXPECT_EQ(interrupt.mailbox, 0u);  // the agent has no events page
    const uint64_t signal = signals.init(0, 1, mailbox.va(8), interrupt.event_id);
    const Va kernarg = put_kernarg(args, 0, xenhsa_kernarg_fill{data.va(), 4, 9, 0});
    queue.submit(dispatch_packet(kernel_object("fill"), kernarg, grid_1d(4, 4), signal));

    EXPECT_TRUE(fired(interrupt.id));
    EXPECT_EQ(signals.value(0), 0);
    EXPECT_EQ(*mailbox.at<uint64_t>(8), interrupt.event_id);
    EXPECT_FALSE(fired(other, 0));  // only the named event
}

TEST_F(DispatchTest, EventIdWithoutMailboxStillSetsTheEvent) {
    GpuBuffer data(device(), kPage), args(device(), kPage);
    SignalPage signals(device());
    AqlTestQueue queue(device());
    auto created = device().create_event(EventSpec{});
    ASSERT_TRUE(created);
    const uint64_t signal = signals.init(0, 1, 0, created.value().event_id);
    const Va kernarg = put_kernarg(args, 0, xenhsa_kernarg_fill{data.va(), 4, 9, 0});
    queue.submit(dispatch_packet(kernel_object("fill"), kernarg, grid_1d(4, 4), signal));
    EXPECT_TRUE(fired(created.value().id));
}

TEST_F(DispatchTest, DispatchIntoAllocatedDeviceMemory) {
    HostMemory reservation(4 * kPage, /*reserve_only=*/true);
    ASSERT_TRUE(device().alloc(kSoftGpuNode, reservation.va(), reservation.size(),
                               XENHSA_ALLOC_DEVICE_LOCAL));
    ASSERT_TRUE(device().map_to_gpu(reservation.va(), kGpuNodeMask, false));
    GpuBuffer args(device(), kPage);
    SignalPage signals(device());
    AqlTestQueue queue(device());
    const uint32_t words = static_cast<uint32_t>(reservation.size() / 4);
    const Va kernarg = put_kernarg(args, 0, xenhsa_kernarg_fill{reservation.va(), words, 5, 0});
    queue.submit(
        dispatch_packet(kernel_object("fill"), kernarg, grid_1d(words, 256), signals.init(0, 1)));
    ASSERT_TRUE(signals.wait_eq(0, 0));
    for (uint32_t i = 0; i < words; ++i) {
        ASSERT_EQ(reservation.at<uint32_t>()[i], 5u) << i;
    }
    queue.destroy();
    EXPECT_TRUE(device().unmap_from_gpu(reservation.va()));
    EXPECT_TRUE(device().free(reservation.va()));
}

}  // namespace
}  // namespace xenhsa::hsa::soft_test
