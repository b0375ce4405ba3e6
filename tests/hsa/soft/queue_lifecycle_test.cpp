// Queue and agent lifetimes: destroy with work in flight, inactive queues, many queues on
// one worker pool, and an agent destroyed with everything still live.
#include <future>
#include <thread>

#include "soft_fixture.hpp"

namespace xenhsa::hsa::soft_test {
namespace {

class QueueLifecycleTest : public SoftAgentTest {};

TEST_F(QueueLifecycleTest, DestroyWithDispatchesInFlight) {
    GpuBuffer data(device(), kPage), args(device(), kPage);
    SignalPage signals(device());
    auto queue = std::make_unique<AqlTestQueue>(device());
    // Each dispatch is 2^32 - 1 work-items in 4 Mi workgroups (they do nothing past the
    // first four words): far more than a test waits for.
    const Va fill = put_kernarg(args, 0, xenhsa_kernarg_fill{data.va(), 4, 8, 0});
    const Grid huge{{0xFFFFFFFFu, 1, 1}, {1024, 1, 1}, 1};
    const uint64_t counted = signals.init(0, 8);
    for (int i = 0; i < 8; ++i) {
        queue->submit(dispatch_packet(kernel_object("fill"), fill, huge, counted));
    }
    ASSERT_TRUE(queue->wait_read_index(1));  // the first one is running
    const Va ring = queue->ring_va();
    queue->destroy();  // stops, cancels the workgroups not started, joins
    const int64_t left = signals.value(0);
    EXPECT_GT(left, 0);
    // Nothing of the queue runs after destroy: the ring can go, the signal stays.
    EXPECT_TRUE(device().unmap_from_gpu(ring));
    AqlTestQueue other(device());
    other.submit(barrier_packet({}, signals.init(1, 1)));
    ASSERT_TRUE(signals.wait_eq(1, 0));
    EXPECT_EQ(signals.value(0), left);
    EXPECT_TRUE(log().faults().empty());
}

// A halt ends a dispatch in the time of the workgroups already running, however many
// are left: here 2^32 - 1 one-item workgroups (item 3 of issue 11).
TEST_F(QueueLifecycleTest, DestroyEndsAHugeGridOfTinyWorkgroupsAtOnce) {
    GpuBuffer data(device(), kPage), args(device(), kPage);
    SignalPage signals(device());
    auto queue = std::make_unique<AqlTestQueue>(device());
    const Va fill = put_kernarg(args, 0, xenhsa_kernarg_fill{data.va(), 4, 8, 0});
    const Grid tiny{{0xFFFFFFFFu, 1, 1}, {1, 1, 1}, 1};
    queue->submit(dispatch_packet(kernel_object("fill"), fill, tiny, signals.init(0, 1)));
    ASSERT_TRUE(queue->wait_read_index(1));
    ASSERT_TRUE(signals.wait_eq(0, 1));  // running, far from done

    const auto start = std::chrono::steady_clock::now();
    queue->destroy();
    const auto took = std::chrono::steady_clock::now() - start;
    EXPECT_LT(took, std::chrono::milliseconds(500));
    EXPECT_EQ(signals.value(0), 1);

    // The workers are free again: another queue's dispatch runs at once.
    AqlTestQueue other(device());
    other.submit(dispatch_packet(kernel_object("fill"), fill, grid_1d(4, 4), signals.init(1, 1)));
    EXPECT_TRUE(signals.wait_eq(1, 0, std::chrono::seconds(2)));
}

TEST_F(QueueLifecycleTest, DestroyWhileWaitingOnABarrier) {
    SignalPage signals(device());
    AqlTestQueue queue(device());
    queue.submit(barrier_packet({signals.init(0, 1)}, signals.init(1, 1)));
    queue.destroy();
    EXPECT_EQ(signals.value(1), 1);
}

TEST_F(QueueLifecycleTest, CreateAndDestroyManyTimes) {
    SignalPage signals(device());
    for (uint32_t i = 0; i < 40; ++i) {
        AqlTestQueue queue(device());
        queue.submit(barrier_packet({}, signals.init(i % SignalPage::kSignals, 1)));
        if (i % 2 == 0) {
            ASSERT_TRUE(signals.wait_eq(i % SignalPage::kSignals, 0));
        }
    }
}

TEST_F(QueueLifecycleTest, InactiveQueueRunsNothing) {
    SignalPage signals(device());
    AqlTestQueue inactive(device(), QueueOptions{.percentage = 0});
    inactive.submit(barrier_packet({}, signals.init(0, 1)));
    AqlTestQueue active(device());
    active.submit(barrier_packet({}, signals.init(1, 1)));
    ASSERT_TRUE(signals.wait_eq(1, 0));
    inactive.destroy();
    EXPECT_EQ(signals.value(0), 1);
    EXPECT_EQ(inactive.read_index(), 0u);
}

TEST_F(QueueLifecycleTest, ManyQueuesShareTheWorkers) {
    constexpr uint32_t queues = 8;
    constexpr uint32_t n = 2048;
    GpuBuffer a(device(), n * 4), b(device(), n * 4), args(device(), queues * 64);
    std::vector<std::unique_ptr<GpuBuffer>> outs;
    std::vector<std::unique_ptr<AqlTestQueue>> qs;
    SignalPage signals(device());
    for (uint32_t i = 0; i < n; ++i) {
        a.at<float>()[i] = static_cast<float>(i);
        b.at<float>()[i] = 0.5f;
    }
    for (uint32_t q = 0; q < queues; ++q) {
        outs.push_back(std::make_unique<GpuBuffer>(device(), n * 4));
        qs.push_back(std::make_unique<AqlTestQueue>(device()));
        const Va kernarg =
            put_kernarg(args, q * 64, xenhsa_kernarg_vector_add{a.va(), b.va(), outs[q]->va(), n});
        qs[q]->submit(dispatch_packet(kernel_object("vector_add"), kernarg, grid_1d(n, 128),
                                      signals.init(q, 1)));
    }
    for (uint32_t q = 0; q < queues; ++q) {
        ASSERT_TRUE(signals.wait_eq(q, 0));
        for (uint32_t i = 0; i < n; ++i) {
            ASSERT_EQ(outs[q]->at<float>()[i], static_cast<float>(i) + 0.5f) << q << " " << i;
        }
    }
}

TEST(SoftAgentTeardown, DestructorReleasesEverythingStillLive) {
    HostMemory reservation(2 * kPage, true);
    HostMemory registered(kPage);
    auto device = make_soft_agent();
    auto& d = *device;
    ASSERT_TRUE(d.alloc(kSoftCpuNode, reservation.va(), 2 * kPage, 0));
    ASSERT_TRUE(d.map_to_gpu(reservation.va(), kGpuNodeMask, false));
    ASSERT_TRUE(d.register_user(registered.va(), kPage, false));
    ASSERT_TRUE(d.map_to_gpu(registered.va(), kGpuNodeMask, false));
    auto event = d.create_event(EventSpec{});
    ASSERT_TRUE(event);

    // A queue on the allocation, busy with a barrier that never opens.
    Va ring = reservation.va();
    Va pointers = reservation.va(kPage);
    QueueSpec spec;
    spec.node = kSoftGpuNode;
    spec.ring = ring;
    spec.ring_size = kPage;
    spec.rptr = pointers;
    spec.wptr = pointers + 8;
    ASSERT_TRUE(d.create_queue(spec));
    auto* packet = reservation.at<hsa_barrier_and_packet_t>();
    *packet = barrier_packet({registered.va()}, 0);
    *registered.at<int64_t>(8) = 1;  // the dependency's value: never 0
    std::atomic_ref<uint64_t>(*reservation.at<uint64_t>(kPage + 8)).store(1);

    // A waiter blocked on the event.
    auto waiter = std::async(std::launch::async, [&] {
        const EventId events[] = {event.value().id};
        return d.wait_events(events, false, XENHSA_WAIT_INFINITE);
    });
    // Give the waiter a chance to block (not needed for correctness: a wait that starts
    // after the agent is gone would be a caller bug, so join it before destroying).
    const EventId events[] = {event.value().id};
    ASSERT_EQ(d.wait_events(events, false, 50).error(), std::make_error_code(std::errc::timed_out));
    ASSERT_TRUE(d.destroy_event(event.value().id));  // wakes the waiter with an error
    auto result = waiter.get();
    ASSERT_FALSE(result);
    EXPECT_EQ(result.error(), std::make_error_code(std::errc::no_such_file_or_directory));

    EXPECT_EQ(protection_at(reservation.va()).substr(0, 2), "rw");
    device.reset();  // queue stopped, allocation back to PROT_NONE, registration dropped
    EXPECT_EQ(protection_at(reservation.va()), "---p");
}

}  // namespace
}  // namespace xenhsa::hsa::soft_test
