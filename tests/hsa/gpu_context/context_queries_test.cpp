// What the backend's checks ask GpuContext (it keeps the GPU objects alone), and where it
// hands back an ALLOC's range: exactly when the device memory goes.
#include "context_fixture.hpp"

namespace xenhsa::hsa::test {
namespace {

using Ranges = std::vector<std::pair<Va, uint64_t>>;

TEST_F(ContextTest, MemoryIsDescribedAsTheGuestSeesIt) {
    const Handle p = pin(area(0), 2 * kPage);
    const Handle a = alloc(area(1));
    auto pm = context->memory(p);
    ASSERT_TRUE(pm);
    EXPECT_EQ(pm->va, area(0));
    EXPECT_EQ(pm->size, 2 * kPage);
    EXPECT_FALSE(pm->alloc);
    EXPECT_FALSE(pm->gpu_mapped);
    ASSERT_TRUE(context->memory(a));
    EXPECT_TRUE(context->memory(a)->alloc);

    map(p);
    queue(area(0), area(0) + 64);
    EXPECT_TRUE(context->memory(p)->gpu_mapped);
    ASSERT_TRUE(context->unmap_from_gpu(p));  // deferred for the queue
    EXPECT_FALSE(context->memory(p)->gpu_mapped) << "the guest unmapped it";
    ASSERT_TRUE(context->unpin(p));
    EXPECT_FALSE(context->memory(p)) << "a released handle is gone at once";

    const Handle ev = event();
    EXPECT_TRUE(context->event_live(ev));
    EXPECT_FALSE(context->event_live(a)) << "another kind's handle";
    EXPECT_FALSE(context->memory(ev));
    EXPECT_FALSE(context->queue_live(ev));
}

TEST_F(ContextTest, AQueueHoldsItsRangesAndTheMemoryTheyLieIn) {
    EXPECT_FALSE(context->has_queues());
    const Handle ring = pin_mapped(area(0), 2 * kPage);
    pin_mapped(area(1));
    const Handle plain = pin(area(2));
    const Handle q = queue(area(0), area(1)).handle;
    EXPECT_TRUE(context->has_queues());
    EXPECT_TRUE(context->queue_live(q));

    EXPECT_TRUE(context->range_held(area(0) + kPage, kPage)) << "the ring's memory";
    EXPECT_TRUE(context->range_held(area(1) + 8, 8)) << "a pointer";
    EXPECT_FALSE(context->range_held(area(2), kPage));
    EXPECT_TRUE(context->pinned(area(2), kPage));
    EXPECT_FALSE(context->pinned(area(3), kPage));

    // A queue's ring or pointer is its own; free mapped memory is a place for one.
    EXPECT_FALSE(context->queue_range_free(area(0), kPage, kGpuNode));
    EXPECT_FALSE(context->queue_range_free(area(1) + 8, 8, kGpuNode));
    EXPECT_TRUE(context->queue_range_free(area(0) + kPage, 8, kGpuNode));
    EXPECT_FALSE(context->queue_range_free(area(0) + kPage, 8, kGpuNode + 1)) << "other node";
    EXPECT_FALSE(context->queue_range_free(area(2), 8, kGpuNode)) << "not GPU-mapped";

    ASSERT_TRUE(context->unpin(ring));  // deferred: still held, no longer a guest PIN
    EXPECT_TRUE(context->range_held(area(0), kPage));
    EXPECT_FALSE(context->pinned(area(0), 2 * kPage));
    ASSERT_TRUE(context->destroy_queue(q, freed));
    EXPECT_FALSE(context->range_held(area(0), 2 * kPage));
    EXPECT_FALSE(context->has_queues());
    ASSERT_TRUE(context->unpin(plain));
}

TEST_F(ContextTest, AnAllocRangeIsHandedBackWhenTheDeviceMemoryGoes) {
    const Handle now = alloc(area(0));
    ASSERT_TRUE(context->free(now, freed));
    EXPECT_EQ(freed.ranges, (Ranges{{area(0), kPage}}));

    const Handle ring = alloc(area(1), 2 * kPage);
    map(ring);
    const Handle q = queue(area(1), area(1) + kPage).handle;
    ASSERT_TRUE(context->unmap_from_gpu(ring));
    ASSERT_TRUE(context->free(ring, freed));
    EXPECT_EQ(freed.ranges.size(), 1u) << "a queue holds it: not yet";
    ASSERT_TRUE(context->destroy_queue(q, freed));
    EXPECT_EQ(freed.ranges, (Ranges{{area(0), kPage}, {area(1), 2 * kPage}}));

    const Handle pinned = pin(area(2));
    ASSERT_TRUE(context->unpin(pinned));
    EXPECT_EQ(freed.ranges.size(), 2u) << "a PIN's range is not the context's to hand back";
}

TEST_F(ContextTest, ARevokeHandsBackTheAllocsOfTheQueuesItDestroyed) {
    std::vector<std::pair<Handle, Va>> lost;
    context->on_queue_lost([&lost](Handle h, Va va, bool) { lost.emplace_back(h, va); });
    pin_mapped(area(0));
    const Handle ptrs = alloc(area(1));
    map(ptrs);
    const Handle q = queue(area(0), area(1)).handle;
    ASSERT_TRUE(context->free(ptrs, freed));
    EXPECT_TRUE(freed.ranges.empty());

    context->revoke_range(area(0), kPage, freed);
    EXPECT_EQ(freed.ranges, (Ranges{{area(1), kPage}}));
    EXPECT_EQ(lost, (std::vector<std::pair<Handle, Va>>{{q, 0}}));
    EXPECT_EQ(device.live_objects(), 0u);
}

TEST_F(ContextTest, AQueueIsReportedLostOnce) {
    std::vector<std::pair<Handle, Va>> lost;
    context->on_queue_lost([&lost](Handle h, Va va, bool) { lost.emplace_back(h, va); });
    pin_mapped(area(0));
    pin_mapped(area(1));
    const Handle faulted = queue(area(0), area(0) + 64).handle;
    const QueueId id = *device.last_queue();
    const Handle quiet = queue(area(1), area(1) + 64).handle;
    device.inject_fault(id, 0x1000);
    device.inject_fault(id, 0x2000);
    context->teardown();
    EXPECT_EQ(lost, (std::vector<std::pair<Handle, Va>>{{faulted, 0x1000}, {quiet, 0}}));
}

TEST_F(ContextTest, OnlyDoorbellsThatMovedAreForwarded) {
    xenhsa_doorbell_page page{};
    pin_mapped(area(0));
    pin_mapped(area(1));
    const auto a = queue(area(0), area(0) + 64);
    const auto b = queue(area(1), area(1) + 64);
    EXPECT_EQ(context->forward_doorbells(page), 0u);
    page.doorbell[a.doorbell_index] = 5;
    EXPECT_EQ(context->forward_doorbells(page), 1u);
    EXPECT_EQ(context->forward_doorbells(page), 0u) << "seen already";
    page.doorbell[b.doorbell_index] = 9;
    page.doorbell[a.doorbell_index] = 6;
    page.doorbell[XENHSA_DOORBELLS_PER_PAGE - 1] = 1;  // no queue behind it
    EXPECT_EQ(context->forward_doorbells(page), 2u);
}

}  // namespace
}  // namespace xenhsa::hsa::test
