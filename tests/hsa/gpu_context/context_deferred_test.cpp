// A live queue holds its memory: releases of that memory are deferred until the queue is
// destroyed, and the device sees the same calls whatever order the guest releases in.
#include <algorithm>

#include "context_fixture.hpp"

namespace xenhsa::hsa::test {
namespace {

enum class MemoryKind { pinned, allocated };

class DeferredTest : public ContextTest, public ::testing::WithParamInterface<MemoryKind> {
protected:
    Va ring_va = area(0);
    Va ptr_va = area(1);
    Handle ring = 0;
    Handle ptrs = 0;
    Handle q = 0;

    Op release_op() const {
        return GetParam() == MemoryKind::pinned ? Op::deregister_user : Op::free;
    }
    Result<void> release(Handle h) {
        return GetParam() == MemoryKind::pinned ? context->unpin(h) : context->free(h, freed);
    }
    void build() {
        if (GetParam() == MemoryKind::pinned) {
            ring = pin(ring_va, 2 * kPage);
            ptrs = pin(ptr_va);
        } else {
            ring = alloc(ring_va, 2 * kPage);
            ptrs = alloc(ptr_va);
        }
        map(ring);
        map(ptrs);
        q = queue(ring_va, ptr_va).handle;
        ASSERT_NE(q, 0u);
        device.clear_calls();
    }
    std::vector<Call> sorted_calls() const {
        auto calls = device.calls();
        for (Call& call : calls) {
            if (call.op == Op::destroy_queue) {
                call.arg = 0;  // each build makes a new queue id
            }
        }
        std::sort(calls.begin(), calls.end());
        return calls;
    }
};

TEST_P(DeferredTest, MemoryReleasedBeforeTheQueueIsDeferredThenReleased) {
    build();
    // The guest releases everything while the queue lives: each answer is OK at once.
    ASSERT_TRUE(context->unmap_from_gpu(ring));
    ASSERT_TRUE(release(ring));
    ASSERT_TRUE(release(ptrs));  // still GPU-mapped: both deferred together
    EXPECT_EQ(device.calls(), std::vector<Call>{}) << "nothing may reach the device yet";
    EXPECT_EQ(context->stats().deferred, 2u);
    EXPECT_EQ(context->stats().handles, 1u);  // only the queue
    // The handles are gone for the guest.
    EXPECT_EQ(release(ring).error(), ebadf());
    EXPECT_EQ(context->map_to_gpu(ptrs, kGpuMask, 0).error(), ebadf());
    EXPECT_TRUE(device.mapped(ring_va));

    ASSERT_TRUE(context->destroy_queue(q, freed));
    const auto calls = device.calls();
    ASSERT_EQ(calls.size(), 5u);
    EXPECT_EQ(calls[0].op, Op::destroy_queue);
    EXPECT_EQ(calls[1].op, Op::unmap_from_gpu);
    EXPECT_EQ(calls[2].op, Op::unmap_from_gpu);
    EXPECT_EQ(calls[3].op, release_op());
    EXPECT_EQ(calls[4].op, release_op());
    EXPECT_EQ(device.live_objects(), 0u);
    EXPECT_EQ(context->stats().deferred, 0u);
    EXPECT_EQ(context->stats().pinned_pages, 0u);
    EXPECT_EQ(context->stats().alloc_bytes, 0u);
}

TEST_P(DeferredTest, BothFreeOrdersEndInTheSameDeviceCalls) {
    build();
    ASSERT_TRUE(context->unmap_from_gpu(ring));
    ASSERT_TRUE(context->unmap_from_gpu(ptrs));
    ASSERT_TRUE(release(ptrs));
    ASSERT_TRUE(release(ring));
    ASSERT_TRUE(context->destroy_queue(q, freed));
    const auto memory_first = sorted_calls();
    EXPECT_EQ(device.live_objects(), 0u);

    build();
    ASSERT_TRUE(context->destroy_queue(q, freed));
    ASSERT_TRUE(context->unmap_from_gpu(ring));
    ASSERT_TRUE(context->unmap_from_gpu(ptrs));
    ASSERT_TRUE(release(ptrs));
    ASSERT_TRUE(release(ring));
    const auto queue_first = sorted_calls();
    EXPECT_EQ(device.live_objects(), 0u);

    EXPECT_EQ(memory_first, queue_first);
    EXPECT_EQ(memory_first.size(), 5u);
}

TEST_P(DeferredTest, ADeferredUnmapKeepsTheMemoryUsable) {
    build();
    ASSERT_TRUE(context->unmap_from_gpu(ring));
    EXPECT_EQ(context->stats().deferred, 1u);
    EXPECT_EQ(context->unmap_from_gpu(ring).error(), ebusy());  // unmapped for the guest
    // A queue cannot be built on memory the guest unmapped.
    EXPECT_EQ(context->create_queue(queue_req(ring_va, ptr_va)).error(), efault());

    ASSERT_TRUE(context->destroy_queue(q, freed));
    EXPECT_EQ(device.calls_of(Op::unmap_from_gpu), std::vector<uint64_t>{ring_va});
    EXPECT_EQ(context->stats().deferred, 0u);
    // The handle lived on: mapping and releasing it works normally.
    map(ring);
    ASSERT_TRUE(context->unmap_from_gpu(ring));
    ASSERT_TRUE(release(ring));
    ASSERT_TRUE(context->unmap_from_gpu(ptrs));
    ASSERT_TRUE(release(ptrs));
    EXPECT_EQ(device.live_objects(), 0u);
}

TEST_P(DeferredTest, MappingAgainCancelsADeferredUnmap) {
    build();
    ASSERT_TRUE(context->unmap_from_gpu(ring));
    EXPECT_EQ(context->map_to_gpu(ring, kGpuMask | 1, 0).error(), ebusy());  // another mapping
    ASSERT_TRUE(context->map_to_gpu(ring, kGpuMask, 0));
    EXPECT_EQ(context->stats().deferred, 0u);
    ASSERT_TRUE(context->destroy_queue(q, freed));
    EXPECT_EQ(device.calls_of(Op::unmap_from_gpu), std::vector<uint64_t>{});
    EXPECT_TRUE(device.mapped(ring_va));
}

TEST_P(DeferredTest, SharedMemoryIsReleasedWithTheLastQueue) {
    build();
    const Handle q2 = queue(ring_va, ptr_va + 64).handle;  // same ring and pointer page
    ASSERT_NE(q2, 0u);
    ASSERT_TRUE(context->unmap_from_gpu(ring));
    ASSERT_TRUE(context->unmap_from_gpu(ptrs));
    ASSERT_TRUE(release(ring));
    ASSERT_TRUE(release(ptrs));
    ASSERT_TRUE(context->destroy_queue(q, freed));
    EXPECT_EQ(device.memory_objects(), 2u);
    EXPECT_EQ(context->stats().deferred, 2u);
    ASSERT_TRUE(context->destroy_queue(q2, freed));
    EXPECT_EQ(device.live_objects(), 0u);
}

TEST_P(DeferredTest, DeferredPagesStillCountAgainstTheQuota) {
    if (GetParam() == MemoryKind::pinned) {
        GpuLimits limits;
        limits.max_pinned_pages = 3;
        make_context(limits);
        build();  // 3 pages pinned
        ASSERT_TRUE(release(ptrs));
        EXPECT_EQ(context->stats().pinned_pages, 3u);
        EXPECT_EQ(context->pin(area(5), kPage, 0).error(), edquot());
        ASSERT_TRUE(context->destroy_queue(q, freed));
        EXPECT_EQ(context->stats().pinned_pages, 2u);
        EXPECT_TRUE(context->pin(area(5), kPage, 0));
    } else {
        GpuLimits limits;
        limits.max_alloc_bytes = 3 * kPage;
        make_context(limits);
        build();
        ASSERT_TRUE(release(ptrs));
        EXPECT_EQ(context->stats().alloc_bytes, 3 * kPage);
        EXPECT_EQ(context->alloc(area(5), kPage, kGpuNode, 0).error(), edquot());
        ASSERT_TRUE(context->destroy_queue(q, freed));
        EXPECT_TRUE(context->alloc(area(5), kPage, kGpuNode, 0));
    }
}

TEST_P(DeferredTest, TheReleasedRangeCannotBeReusedUntilTheQueueGoes) {
    build();
    ASSERT_TRUE(release(ptrs));
    EXPECT_EQ(context->pin(ptr_va, kPage, 0).error(), ebusy());
    EXPECT_EQ(context->alloc(ptr_va, kPage, kGpuNode, 0).error(), ebusy());
    ASSERT_TRUE(context->destroy_queue(q, freed));
    EXPECT_TRUE(context->pin(ptr_va, kPage, 0));
}

INSTANTIATE_TEST_SUITE_P(Memory, DeferredTest,
                         ::testing::Values(MemoryKind::pinned, MemoryKind::allocated),
                         [](const auto& param_info) {
                             return param_info.param == MemoryKind::pinned ? "Pin" : "Alloc";
                         });

TEST_F(ContextTest, DestroyingAQueuesErrorEventIsDeferred) {
    pin_mapped(area(0));
    const Handle ev = event();
    const Handle q = queue(area(0), area(0) + 256, ev).handle;
    const EventId device_event = *device.last_event();
    ASSERT_TRUE(context->destroy_event(ev));
    EXPECT_EQ(context->set_event(ev).error(), ebadf());
    EXPECT_TRUE(device.has_event(device_event));
    EXPECT_EQ(context->stats().deferred, 1u);
    EXPECT_EQ(context->stats().events, 0u);
    ASSERT_TRUE(context->destroy_queue(q, freed));
    EXPECT_FALSE(device.has_event(device_event));
    EXPECT_EQ(context->stats().deferred, 0u);
}

}  // namespace
}  // namespace xenhsa::hsa::test
