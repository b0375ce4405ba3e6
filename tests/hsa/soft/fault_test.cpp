// GPU page faults: any access outside GPU-mapped memory stops that queue only, signals
// its error event and is reported once; the agent, its other queues and other agents go
// on.
#include <future>

#include "soft_fixture.hpp"

namespace xenhsa::hsa::soft_test {
namespace {

class FaultTest : public SoftAgentTest {
protected:
    // Runs vector_add on `queue` of `on` and checks the result.
    static void expect_vector_add_works(KfdDevice& on, AqlTestQueue& queue) {
        constexpr uint32_t n = 512;
        GpuBuffer a(on, n * 4), b(on, n * 4), c(on, n * 4), args(on, kPage);
        SignalPage signals(on);
        for (uint32_t i = 0; i < n; ++i) {
            a.at<float>()[i] = static_cast<float>(i);
            b.at<float>()[i] = 1.0f;
        }
        const xenhsa_kernarg_vector_add kernarg{a.va(), b.va(), c.va(), n};
        std::memcpy(args.at<std::byte>(), &kernarg, sizeof kernarg);
        queue.submit(dispatch_packet(find_builtin(on, "vector_add").kernel_object, args.va(),
                                     grid_1d(n, 64), signals.init(0, 1)));
        ASSERT_TRUE(signals.wait_eq(0, 0));
        for (uint32_t i = 0; i < n; ++i) {
            ASSERT_EQ(c.at<float>()[i], static_cast<float>(i) + 1.0f) << i;
        }
    }

    // The queue's error event fired; after the queue is gone exactly one fault remains
    // in the log, at `address`.
    void expect_one_fault(AqlTestQueue& queue, EventId error_event, Va address) {
        const QueueId id = queue.id();
        ASSERT_TRUE(fired(error_event));
        queue.destroy();  // joins: a second report could only come before this returns
        const auto faults = log().faults();
        ASSERT_EQ(faults.size(), 1u);
        EXPECT_EQ(faults[0].queue, id);
        EXPECT_EQ(faults[0].address, address);
    }
};

TEST_F(FaultTest, StrayBufferReadStopsOnlyThatQueue) {
    // Two pages, of which only the first is registered and GPU-mapped.
    HostMemory memory(2 * kPage);
    ASSERT_TRUE(device().register_user(memory.va(), kPage, false));
    ASSERT_TRUE(device().map_to_gpu(memory.va(), kGpuNodeMask, false));
    GpuBuffer out(device(), kPage), args(device(), kPage);
    SignalPage signals(device());
    const EventId error = make_event();
    AqlTestQueue faulting(device(), QueueOptions{.error_event = error});
    AqlTestQueue healthy(device());

    const Va oob = put_kernarg(args, 0, xenhsa_kernarg_oob_read{memory.va(), 1024, out.va()});
    faulting.submit(
        dispatch_packet(kernel_object("oob_read"), oob, grid_1d(1, 1), signals.init(0, 1)));
    ASSERT_TRUE(fired(error));

    // Stopped: a packet after the fault never runs.
    const Va fill = put_kernarg(args, 64, xenhsa_kernarg_fill{out.va(), 4, 77, 0});
    faulting.submit(
        dispatch_packet(kernel_object("fill"), fill, grid_1d(4, 4), signals.init(1, 1)));
    // The same agent's other queue, and another agent, still compute.
    expect_vector_add_works(device(), healthy);
    auto other = make_soft_agent();
    {
        AqlTestQueue queue(*other);
        expect_vector_add_works(*other, queue);
    }

    const QueueId id = faulting.id();
    faulting.destroy();
    EXPECT_EQ(signals.value(0), 1);  // the faulting dispatch never completed
    EXPECT_EQ(signals.value(1), 1);
    EXPECT_EQ(out.at<uint32_t>()[0], 0u);
    const auto faults = log().faults();
    ASSERT_EQ(faults.size(), 1u);
    EXPECT_EQ(faults[0].queue, id);
    EXPECT_EQ(faults[0].address, memory.va(kPage));
    healthy.destroy();
    ASSERT_TRUE(device().unmap_from_gpu(memory.va()));
    ASSERT_TRUE(device().deregister_user(memory.va()));
}

TEST_F(FaultTest, ManyFaultingWorkgroupsAreReportedOnce) {
    HostMemory stray(16 * kPage);  // host memory the GPU was never given
    GpuBuffer args(device(), kPage);
    const EventId error = make_event();
    AqlTestQueue queue(device(), QueueOptions{.error_event = error});
    const Va fill = put_kernarg(args, 0, xenhsa_kernarg_fill{stray.va(), 16 * 1024, 1, 0});
    queue.submit(dispatch_packet(kernel_object("fill"), fill, grid_1d(16 * 1024, 64), 0));
    ASSERT_TRUE(fired(error));
    const QueueId id = queue.id();
    queue.destroy();
    const auto faults = log().faults();
    ASSERT_EQ(faults.size(), 1u);
    EXPECT_EQ(faults[0].queue, id);
    // Which workgroup faulted first is up to the workers: the address is in the buffer.
    EXPECT_GE(faults[0].address, stray.va());
    EXPECT_LT(faults[0].address, stray.va(stray.size()));
    EXPECT_EQ(*stray.at<uint32_t>(), 0u);
}

// KFD signals a process's memory events on a VM fault; ROCr's VM-fault handler waits on
// one (HSA_EVENTTYPE_MEMORY) and reports the fault. Signal events are left alone.
TEST_F(FaultTest, PageFaultSetsEveryMemoryEvent) {
    HostMemory stray(kPage);
    GpuBuffer args(device(), kPage);
    EventSpec memory_spec;
    memory_spec.type = XENHSA_EVENT_MEMORY;
    memory_spec.manual_reset = true;
    auto vm_fault = device().create_event(memory_spec);
    ASSERT_TRUE(vm_fault);
    auto other_memory = device().create_event(memory_spec);
    ASSERT_TRUE(other_memory);
    const EventId signal = make_event();
    AqlTestQueue queue(device(), QueueOptions{});
    EXPECT_FALSE(fired(vm_fault.value().id, 0)) << "set before any fault";
    const Va fill = put_kernarg(args, 0, xenhsa_kernarg_fill{stray.va(), 16, 1, 0});
    queue.submit(dispatch_packet(kernel_object("fill"), fill, grid_1d(16, 16), 0));
    EXPECT_TRUE(fired(vm_fault.value().id));
    EXPECT_TRUE(fired(other_memory.value().id));
    EXPECT_FALSE(fired(signal, 50));
    queue.destroy();
    EXPECT_EQ(log().faults().size(), 1u);
}

TEST_F(FaultTest, StrayKernargAddress) {
    HostMemory stray(kPage);
    GpuBuffer data(device(), kPage);
    const EventId error = make_event();
    AqlTestQueue queue(device(), QueueOptions{.error_event = error});
    queue.submit(dispatch_packet(kernel_object("fill"), stray.va(8), grid_1d(4, 4), 0));
    expect_one_fault(queue, error, stray.va(8));
}

TEST_F(FaultTest, KernargRunningPastItsMapping) {
    HostMemory args(2 * kPage);  // only the first page is GPU-mapped
    ASSERT_TRUE(device().register_user(args.va(), kPage, false));
    ASSERT_TRUE(device().map_to_gpu(args.va(), kGpuNodeMask, false));
    const EventId error = make_event();
    AqlTestQueue queue(device(), QueueOptions{.error_event = error});
    // fill's 24-byte kernarg starts 8 bytes before the end of the mapped page.
    queue.submit(dispatch_packet(kernel_object("fill"), args.va(kPage - 8), grid_1d(4, 4), 0));
    expect_one_fault(queue, error, args.va(kPage));
    ASSERT_TRUE(device().unmap_from_gpu(args.va()));
    ASSERT_TRUE(device().deregister_user(args.va()));
}

TEST_F(FaultTest, StrayCompletionSignal) {
    HostMemory stray(kPage);
    GpuBuffer data(device(), kPage), args(device(), kPage);
    const EventId error = make_event();
    AqlTestQueue queue(device(), QueueOptions{.error_event = error});
    const Va fill = put_kernarg(args, 0, xenhsa_kernarg_fill{data.va(), 4, 3, 0});
    queue.submit(dispatch_packet(kernel_object("fill"), fill, grid_1d(4, 4), stray.va(64)));
    expect_one_fault(queue, error, stray.va(64));
    EXPECT_EQ(data.at<uint32_t>()[0], 3u);  // the kernel ran; its end could not be signalled
}

TEST_F(FaultTest, MisalignedCompletionSignal) {
    GpuBuffer data(device(), kPage), args(device(), kPage), signal(device(), kPage);
    const EventId error = make_event();
    AqlTestQueue queue(device(), QueueOptions{.error_event = error});
    const Va fill = put_kernarg(args, 0, xenhsa_kernarg_fill{data.va(), 4, 3, 0});
    queue.submit(dispatch_packet(kernel_object("fill"), fill, grid_1d(4, 4), signal.va(4)));
    expect_one_fault(queue, error, signal.va(4));
}

TEST_F(FaultTest, StrayDependencySignal) {
    HostMemory stray(kPage);
    const EventId error = make_event();
    AqlTestQueue queue(device(), QueueOptions{.error_event = error});
    queue.submit(barrier_packet({stray.va()}, 0));
    expect_one_fault(queue, error, stray.va());
}

TEST_F(FaultTest, StrayMailbox) {
    HostMemory stray(kPage);
    GpuBuffer data(device(), kPage), args(device(), kPage);
    SignalPage signals(device());
    const EventId error = make_event();
    AqlTestQueue queue(device(), QueueOptions{.error_event = error});
    const Va fill = put_kernarg(args, 0, xenhsa_kernarg_fill{data.va(), 4, 3, 0});
    queue.submit(dispatch_packet(kernel_object("fill"), fill, grid_1d(4, 4),
                                 signals.init(0, 1, stray.va(), 1)));
    expect_one_fault(queue, error, stray.va());
    EXPECT_EQ(signals.value(0), 1);  // checked before the decrement
}

TEST_F(FaultTest, WriteToGpuReadOnlyBuffer) {
    GpuBuffer data(device(), kPage, /*gpu_read_only=*/true), args(device(), kPage);
    const EventId error = make_event();
    AqlTestQueue queue(device(), QueueOptions{.error_event = error});
    const Va fill = put_kernarg(args, 0, xenhsa_kernarg_fill{data.va(16), 4, 3, 0});
    queue.submit(dispatch_packet(kernel_object("fill"), fill, grid_1d(4, 4), 0));
    expect_one_fault(queue, error, data.va(16));
    EXPECT_EQ(data.at<uint32_t>()[4], 0u);
}

TEST_F(FaultTest, WriteToReadOnlyRegistration) {
    GpuBuffer data(device(), kPage, false, /*register_read_only=*/true), args(device(), kPage);
    const EventId error = make_event();
    AqlTestQueue queue(device(), QueueOptions{.error_event = error});
    const Va fill = put_kernarg(args, 0, xenhsa_kernarg_fill{data.va(), 4, 3, 0});
    queue.submit(dispatch_packet(kernel_object("fill"), fill, grid_1d(4, 4), 0));
    expect_one_fault(queue, error, data.va());
}

TEST_F(FaultTest, BufferUnmappedFromTheGpuIsStray) {
    GpuBuffer data(device(), kPage), args(device(), kPage);
    ASSERT_TRUE(device().unmap_from_gpu(data.va()));
    const EventId error = make_event();
    AqlTestQueue queue(device(), QueueOptions{.error_event = error});
    const Va fill = put_kernarg(args, 0, xenhsa_kernarg_fill{data.va(), 4, 3, 0});
    queue.submit(dispatch_packet(kernel_object("fill"), fill, grid_1d(4, 4), 0));
    expect_one_fault(queue, error, data.va());
}

TEST_F(FaultTest, GpuReadOnlyRingFaultsOnTheHeaderWriteBack) {
    const EventId error = make_event();
    AqlTestQueue queue(device(), QueueOptions{.error_event = error, .ring_gpu_read_only = true});
    queue.submit(barrier_packet({}, 0));
    expect_one_fault(queue, error, queue.ring_va());
    EXPECT_EQ(queue.read_index(), 0u);
}

TEST_F(FaultTest, FaultWithoutErrorEventIsStillReported) {
    HostMemory stray(kPage);
    AqlTestQueue queue(device());
    queue.submit(barrier_packet({stray.va()}, 0));
    // No event to wait on: poll the log (bounded).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (log().faults().empty() && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::yield();
    }
    queue.destroy();
    ASSERT_EQ(log().faults().size(), 1u);
    EXPECT_EQ(log().faults()[0].address, stray.va());
}

TEST(SoftAgentFaultHandler, MayDestroyTheFaultingQueue) {
    auto device = make_soft_agent();
    std::promise<Result<void>> destroyed;
    device->set_fault_handler(
        [&](const GpuFault& fault) { destroyed.set_value(device->destroy_queue(fault.queue)); });
    HostMemory stray(kPage);
    AqlTestQueue queue(*device);
    queue.submit(barrier_packet({stray.va()}, 0));
    auto future = destroyed.get_future();
    ASSERT_EQ(future.wait_for(std::chrono::seconds(10)), std::future_status::ready);
    EXPECT_TRUE(future.get());
    // The queue is gone: its memory is free to unmap, and a second destroy finds nothing.
    EXPECT_TRUE(device->unmap_from_gpu(queue.ring_va()));
    EXPECT_EQ(device->destroy_queue(queue.id()).error(),
              std::make_error_code(std::errc::no_such_file_or_directory));
}

}  // namespace
}  // namespace xenhsa::hsa::soft_test
