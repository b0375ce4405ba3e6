// QUEUE_CREATE validation, doorbells, faults and queue/event quotas.
#include <mutex>
#include <set>
#include <thread>

#include "context_fixture.hpp"

namespace xenhsa::hsa::test {
namespace {

TEST_F(ContextTest, QueueMemoryMustBeGpuMappedMemoryOfTheContext) {
    pin_mapped(area(0), 2 * kPage);
    pin(area(1));  // pinned, not mapped
    const Handle other_node = pin(area(2));
    ASSERT_TRUE(context->map_to_gpu(other_node, 1u << 5, 0));
    alloc(area(3));  // allocated, not mapped

    const Va ptr = area(0) + kPage;
    EXPECT_EQ(context->create_queue(queue_req(area(1), ptr)).error(), efault());
    EXPECT_EQ(context->create_queue(queue_req(area(2), ptr)).error(), efault());
    EXPECT_EQ(context->create_queue(queue_req(area(3), ptr)).error(), efault());
    EXPECT_EQ(context->create_queue(queue_req(area(4), ptr)).error(), efault());  // nothing
    EXPECT_EQ(context->create_queue(queue_req(area(0), area(1))).error(), efault());
    // The ring runs past the end of its memory.
    EXPECT_EQ(context->create_queue(queue_req(area(0) + kPage, ptr, 0, 2 * kPage)).error(),
              efault());
    // Alignment.
    EXPECT_EQ(context->create_queue(queue_req(area(0) + 64, ptr)).error(), efault());
    auto req = queue_req(area(0), ptr);
    req.rptr_va = ptr + 4;
    EXPECT_EQ(context->create_queue(req).error(), efault());
    req = queue_req(area(0), ptr);
    req.wptr_va = 0;
    EXPECT_EQ(context->create_queue(req).error(), efault());
    // The last 8 bytes of the memory are fine, one more byte is not.
    req = queue_req(area(0), ptr);
    req.wptr_va = area(0) + 2 * kPage - 8;
    EXPECT_TRUE(context->create_queue(req));
    req.wptr_va = area(0) + 2 * kPage;
    EXPECT_EQ(context->create_queue(req).error(), efault());

    EXPECT_EQ(device.queues(), 1u);
    EXPECT_EQ(device.calls_of(Op::create_queue).size(), 1u);
}

TEST_F(ContextTest, QueueArgumentsAreChecked) {
    pin_mapped(area(0), 8 * kPage);
    const Va ptr = area(0) + 7 * kPage;
    for (uint64_t size :
         std::initializer_list<uint64_t>{0, 2048, 3 * kPage, 12288, XENHSA_QUEUE_RING_MAX * 2}) {
        EXPECT_EQ(context->create_queue(queue_req(area(0), ptr, 0, size)).error(), einval())
            << size;
    }
    auto req = queue_req(area(0), ptr);
    for (const uint32_t type : {0u, 3u, 21u}) {
        req.type = type;
        EXPECT_EQ(context->create_queue(req).error(), einval()) << type;
    }
    req = queue_req(area(0), ptr);
    req.priority = XENHSA_QUEUE_PRIORITY_MAX + 1;
    EXPECT_EQ(context->create_queue(req).error(), einval());
    req = queue_req(area(0), ptr);
    req.percentage = 101;
    EXPECT_EQ(context->create_queue(req).error(), einval());
    req = queue_req(area(0), ptr);
    req.node = XENHSA_QUERY_MAX_NODES;
    EXPECT_EQ(context->create_queue(req).error(), einval());
    EXPECT_EQ(context->create_queue(queue_req(area(0), ptr, 0xdeadbeef)).error(), ebadf());
    EXPECT_TRUE(context->create_queue(queue_req(area(0), ptr, 0, 4 * kPage)));
    EXPECT_EQ(device.calls_of(Op::create_queue).size(), 1u);
}

TEST_F(ContextTest, QueueTypeReachesTheDevice) {
    pin_mapped(area(0), 8 * kPage);
    EXPECT_TRUE(context->supports_queue_type(XENHSA_QUEUE_COMPUTE_AQL));
    EXPECT_TRUE(context->supports_queue_type(XENHSA_QUEUE_SDMA));
    EXPECT_FALSE(context->supports_queue_type(0));
    EXPECT_FALSE(context->supports_queue_type(3));

    auto aql = queue_req(area(0), area(0) + 7 * kPage);
    ASSERT_TRUE(context->create_queue(aql));
    EXPECT_EQ(device.queue_type(*device.last_queue()), QueueType::compute_aql);
    auto sdma = queue_req(area(0) + 4 * kPage, area(0) + 7 * kPage + 16);
    sdma.type = XENHSA_QUEUE_SDMA;
    const auto made = context->create_queue(sdma);
    ASSERT_TRUE(made);
    EXPECT_EQ(device.queue_type(*device.last_queue()), QueueType::sdma);
    // The two kinds share the doorbell page.
    EXPECT_LT(made.value().doorbell_index, XENHSA_DOORBELLS_PER_PAGE);
}

TEST_F(ContextTest, ADeviceWithoutSdmaRefusesItsQueues) {
    device.set_sdma(false);
    pin_mapped(area(0), 8 * kPage);
    EXPECT_FALSE(context->supports_queue_type(XENHSA_QUEUE_SDMA));
    auto sdma = queue_req(area(0), area(0) + 7 * kPage);
    sdma.type = XENHSA_QUEUE_SDMA;
    EXPECT_EQ(context->create_queue(sdma).error(), errc(std::errc::operation_not_supported));
    EXPECT_EQ(device.queues(), 0u);
    EXPECT_EQ(context->stats().queues, 0u);
    EXPECT_EQ(context->stats().handles, 1u);  // the PIN only
}

TEST_F(ContextTest, DoorbellsAreDistinctAndForwardedToTheirQueue) {
    pin_mapped(area(0));
    const auto a = queue(area(0), area(0) + 1024);
    const QueueId a_id = *device.last_queue();
    const auto b = queue(area(0), area(0) + 2048);
    const QueueId b_id = *device.last_queue();
    EXPECT_NE(a.doorbell_index, b.doorbell_index);
    EXPECT_LT(a.doorbell_index, XENHSA_DOORBELLS_PER_PAGE);
    EXPECT_LT(b.doorbell_index, XENHSA_DOORBELLS_PER_PAGE);

    context->doorbell(a.doorbell_index, 7);
    context->doorbell(b.doorbell_index, 9);
    EXPECT_EQ(device.doorbell_value(a_id), 7u);
    EXPECT_EQ(device.doorbell_value(b_id), 9u);

    device.clear_calls();
    for (uint32_t index : std::initializer_list<uint32_t>{XENHSA_DOORBELLS_PER_PAGE - 1,
                                                          XENHSA_DOORBELLS_PER_PAGE, UINT32_MAX}) {
        context->doorbell(index, 1);
    }
    EXPECT_EQ(device.calls(), std::vector<Call>{}) << "unknown doorbells are ignored";

    // A destroyed queue's index stops working, and is handed out again.
    ASSERT_TRUE(context->destroy_queue(a.handle, freed));
    device.clear_calls();
    context->doorbell(a.doorbell_index, 8);
    EXPECT_EQ(device.calls_of(Op::ring_doorbell), std::vector<uint64_t>{});
    const auto c = queue(area(0), area(0) + 1024);
    EXPECT_EQ(c.doorbell_index, a.doorbell_index);
}

TEST_F(ContextTest, RunningOutOfDoorbellsIsEnomem) {
    GpuLimits limits;
    limits.max_queues = XENHSA_DOORBELLS_PER_PAGE + 8;
    limits.max_handles = 2 * XENHSA_DOORBELLS_PER_PAGE;
    make_context(limits);
    pin_mapped(area(0));
    std::set<uint32_t> indices;
    for (uint32_t i = 0; i < XENHSA_DOORBELLS_PER_PAGE; ++i) {
        auto r = context->create_queue(queue_req(area(0), area(0) + 8 * (i % 500)));
        ASSERT_TRUE(r) << i;
        indices.insert(r.value().doorbell_index);
    }
    EXPECT_EQ(indices.size(), XENHSA_DOORBELLS_PER_PAGE);
    EXPECT_EQ(*indices.rbegin(), XENHSA_DOORBELLS_PER_PAGE - 1);
    EXPECT_EQ(context->create_queue(queue_req(area(0), area(0))).error(),
              errc(std::errc::not_enough_memory));
}

TEST_F(ContextTest, QueueAndEventQuotas) {
    GpuLimits limits;
    limits.max_queues = 2;
    limits.max_events = 2;
    make_context(limits);
    pin_mapped(area(0));
    const Handle q1 = queue(area(0), area(0) + 512).handle;
    queue(area(0), area(0) + 1024);
    EXPECT_EQ(context->create_queue(queue_req(area(0), area(0))).error(), edquot());
    ASSERT_TRUE(context->destroy_queue(q1, freed));
    EXPECT_TRUE(context->create_queue(queue_req(area(0), area(0))));

    const Handle e1 = event();
    event();
    xenhsa_event_create_req req{};
    EXPECT_EQ(context->create_event(req).error(), edquot());
    ASSERT_TRUE(context->destroy_event(e1));
    EXPECT_TRUE(context->create_event(req));
}

TEST_F(ContextTest, LimitsSetAtRunTimeApplyToNewObjectsUpToTheStartingOnes) {
    GpuLimits limits;
    limits.max_events = 3;
    make_context(limits);
    const Handle e1 = event();
    event();
    limits.max_events = 1;
    context->set_limits(limits);
    xenhsa_event_create_req req{};
    EXPECT_EQ(context->create_event(req).error(), edquot());  // the two stay
    EXPECT_EQ(context->stats().events, 2u);
    ASSERT_TRUE(context->destroy_event(e1));
    EXPECT_EQ(context->create_event(req).error(), edquot());  // still at the limit
    limits.max_events = 100;  // above what the context was made for: 3
    context->set_limits(limits);
    EXPECT_TRUE(context->create_event(req));
    EXPECT_TRUE(context->create_event(req));
    EXPECT_EQ(context->create_event(req).error(), edquot());
}

TEST_F(ContextTest, EventArgumentsAreChecked) {
    xenhsa_event_create_req req{};
    req.type = XENHSA_EVENT_TYPE_COUNT_;
    EXPECT_EQ(context->create_event(req).error(), einval());
    req = {};
    req.flags = 1u << 4;
    EXPECT_EQ(context->create_event(req).error(), einval());
    req = {};
    req.node = XENHSA_QUERY_MAX_NODES;
    EXPECT_EQ(context->create_event(req).error(), einval());
    req = {};
    req.pad = 1;
    EXPECT_EQ(context->create_event(req).error(), einval());
    EXPECT_EQ(device.events(), 0u);
}

TEST_F(ContextTest, FailedQueueCreateHoldsNothing) {
    const Handle mem = pin_mapped(area(0));
    device.fail_next(Op::create_queue, std::errc::io_error);
    EXPECT_EQ(context->create_queue(queue_req(area(0), area(0) + 512)).error(),
              errc(std::errc::io_error));
    EXPECT_EQ(context->stats().queues, 0u);
    // No reference was kept: the memory is released at once, not deferred.
    ASSERT_TRUE(context->unmap_from_gpu(mem));
    ASSERT_TRUE(context->unpin(mem));
    EXPECT_EQ(context->stats().deferred, 0u);
    EXPECT_EQ(device.live_objects(), 0u);
}

struct LostLog {
    std::mutex mutex;
    std::vector<std::pair<Handle, Va>> lost;
    void add(Handle h, Va va) {
        std::lock_guard lock(mutex);
        lost.emplace_back(h, va);
    }
    std::vector<std::pair<Handle, Va>> get() {
        std::lock_guard lock(mutex);
        return lost;
    }
};

TEST_F(ContextTest, DeviceFaultsAreReportedWithTheQueueHandle) {
    LostLog log;
    context->on_queue_lost([&log](Handle h, Va va, bool) { log.add(h, va); });
    pin_mapped(area(0));
    const Handle q = queue(area(0), area(0) + 512).handle;
    const QueueId id = *device.last_queue();

    // From another thread, as a device's fault thread would.
    std::thread([&] { device.inject_fault(id, 0xbad000); }).join();
    EXPECT_EQ(log.get(), (std::vector<std::pair<Handle, Va>>{{q, 0xbad000}}));

    device.inject_fault(id + 999, 0x1000);  // not a queue of this context
    ASSERT_TRUE(context->destroy_queue(q, freed));
    device.inject_fault(id, 0x2000);  // after destroy: dropped
    EXPECT_EQ(log.get().size(), 1u);
}

TEST_F(ContextTest, FaultsAfterTheContextIsGoneAreHarmless) {
    pin_mapped(area(0));
    queue(area(0), area(0) + 512);
    const QueueId id = *device.last_queue();
    context.reset();
    device.inject_fault(id, 0x1000);  // the context cleared its handler
    SUCCEED();
}

}  // namespace
}  // namespace xenhsa::hsa::test
