// PIN, ALLOC, MAP_TO_GPU and their reverses when no queue is involved; handle checks.
#include <random>

#include "context_fixture.hpp"

namespace xenhsa::hsa::test {
namespace {

TEST_F(ContextTest, PinMapUnmapUnpinReachesTheDeviceInOrder) {
    const Handle h = pin(area(0), 4 * kPage);
    auto gpu_va = context->map_to_gpu(h, kGpuMask, 0);
    ASSERT_TRUE(gpu_va);
    EXPECT_EQ(gpu_va.value(), area(0));  // xenhsa mirrors
    EXPECT_EQ(context->stats().pinned_pages, 4u);
    EXPECT_EQ(context->stats().handles, 1u);

    ASSERT_TRUE(context->unmap_from_gpu(h));
    ASSERT_TRUE(context->unpin(h));
    EXPECT_EQ(device.calls(), (std::vector<Call>{{Op::register_user, area(0)},
                                                 {Op::map_to_gpu, area(0)},
                                                 {Op::unmap_from_gpu, area(0)},
                                                 {Op::deregister_user, area(0)}}));
    EXPECT_EQ(device.live_objects(), 0u);
    EXPECT_EQ(context->stats().pinned_pages, 0u);
    EXPECT_EQ(context->stats().handles, 0u);
}

TEST_F(ContextTest, AllocMapUnmapFree) {
    const Handle h = alloc(area(0), 2 * kPage, XENHSA_ALLOC_DEVICE_LOCAL);
    map(h);
    EXPECT_EQ(context->stats().alloc_bytes, 2 * kPage);
    ASSERT_TRUE(context->unmap_from_gpu(h));
    ASSERT_TRUE(context->free(h, freed));
    EXPECT_EQ(device.calls_of(Op::free), std::vector<uint64_t>{area(0)});
    EXPECT_EQ(device.live_objects(), 0u);
    EXPECT_EQ(context->stats().alloc_bytes, 0u);
}

TEST_F(ContextTest, BusyObjectsAreRefused) {
    const Handle p = pin_mapped(area(0));
    EXPECT_EQ(context->unpin(p).error(), ebusy());  // still mapped, no queue holds it
    EXPECT_EQ(context->map_to_gpu(p, kGpuMask, 0).error(), ebusy());  // already mapped

    const Handle a = alloc(area(1));
    EXPECT_EQ(context->unmap_from_gpu(a).error(), ebusy());  // not mapped
    map(a);
    EXPECT_EQ(context->free(a, freed).error(), ebusy());

    // Both still work afterwards: the refusals changed nothing.
    ASSERT_TRUE(context->unmap_from_gpu(p));
    ASSERT_TRUE(context->unpin(p));
    ASSERT_TRUE(context->unmap_from_gpu(a));
    ASSERT_TRUE(context->free(a, freed));
    EXPECT_EQ(device.live_objects(), 0u);
}

TEST_F(ContextTest, BadArgumentsAreRefusedBeforeTheDevice) {
    EXPECT_EQ(context->pin(area(0) + 1, kPage, 0).error(), einval());
    EXPECT_EQ(context->pin(area(0), kPage + 8, 0).error(), einval());
    EXPECT_EQ(context->pin(area(0), 0, 0).error(), einval());
    EXPECT_EQ(context->pin(area(0), kPage, 1u << 7).error(), einval());
    EXPECT_EQ(context->pin(XENHSA_VA_LIMIT - kPage, 2 * kPage, 0).error(), einval());
    EXPECT_EQ(context->alloc(area(0), kPage, XENHSA_QUERY_MAX_NODES, 0).error(), einval());
    EXPECT_EQ(context->alloc(area(0), kPage, 0, 1u << 9).error(), einval());
    EXPECT_EQ(context->alloc(area(0), 0, 0, 0).error(), einval());

    const Handle h = pin(area(0));
    EXPECT_EQ(context->map_to_gpu(h, 0, 0).error(), einval());
    EXPECT_EQ(context->map_to_gpu(h, kGpuMask, 2).error(), einval());
    EXPECT_EQ(device.calls(), (std::vector<Call>{{Op::register_user, area(0)}}));
}

TEST_F(ContextTest, CollidingRangesAreRefused) {
    pin(area(0), 2 * kPage);
    EXPECT_EQ(context->pin(area(0), kPage, 0).error(), ebusy());          // same start
    EXPECT_EQ(context->pin(area(0) + kPage, kPage, 0).error(), ebusy());  // other start
    EXPECT_TRUE(context->pin(area(0) + 2 * kPage, kPage, 0));             // next to it
    EXPECT_EQ(context->alloc(area(0) + kPage, kPage, kGpuNode, 0).error(), ebusy());

    alloc(area(1), 2 * kPage);
    EXPECT_EQ(context->pin(area(1) + kPage, kPage, 0).error(), ebusy());
    EXPECT_EQ(context->alloc(area(1) + kPage, 4 * kPage, kGpuNode, 0).error(), ebusy());
}

TEST_F(ContextTest, ReadOnlyMemoryIsNeverMappedWritable) {
    const Handle ro_pin = pin(area(0), kPage, XENHSA_PIN_READ_ONLY);
    map(ro_pin);  // no XENHSA_GPU_MAP_READ_ONLY asked
    EXPECT_TRUE(device.read_only_mapping(area(0)));

    const Handle ro_alloc = alloc(area(1), kPage, XENHSA_ALLOC_READ_ONLY);
    map(ro_alloc);
    EXPECT_TRUE(device.read_only_mapping(area(1)));

    const Handle rw = pin(area(2));
    map(rw);
    EXPECT_FALSE(device.read_only_mapping(area(2)));
}

TEST_F(ContextTest, ForgedStaleAndOtherKindHandlesAreEbadf) {
    const Handle p = pin(area(0));
    const Handle a = alloc(area(1));
    const Handle e = event();
    const Handle q_mem = pin_mapped(area(2));
    const Handle q = queue(area(2), area(2) + 512).handle;
    ASSERT_NE(q, 0u);

    std::mt19937_64 rng(42);
    std::vector<Handle> bad = {0, ~0ull, p ^ (1ull << 20), p + (1ull << 32), a ^ (1ull << 56)};
    for (int i = 0; i < 64; ++i) {
        bad.push_back(rng());
    }
    for (Handle h : bad) {
        EXPECT_EQ(context->unpin(h).error(), ebadf()) << h;
        EXPECT_EQ(context->free(h, freed).error(), ebadf()) << h;
        EXPECT_EQ(context->map_to_gpu(h, kGpuMask, 0).error(), ebadf()) << h;
        EXPECT_EQ(context->unmap_from_gpu(h).error(), ebadf()) << h;
        EXPECT_EQ(context->destroy_queue(h, freed).error(), ebadf()) << h;
        EXPECT_EQ(context->destroy_event(h).error(), ebadf()) << h;
        EXPECT_EQ(context->set_event(h).error(), ebadf()) << h;
        EXPECT_EQ(context->reset_event(h).error(), ebadf()) << h;
    }

    // Other kinds.
    EXPECT_EQ(context->unpin(a).error(), ebadf());
    EXPECT_EQ(context->unpin(e).error(), ebadf());
    EXPECT_EQ(context->unpin(q).error(), ebadf());
    EXPECT_EQ(context->free(p, freed).error(), ebadf());
    EXPECT_EQ(context->map_to_gpu(e, kGpuMask, 0).error(), ebadf());
    EXPECT_EQ(context->map_to_gpu(q, kGpuMask, 0).error(), ebadf());
    EXPECT_EQ(context->destroy_queue(q_mem, freed).error(), ebadf());
    EXPECT_EQ(context->destroy_queue(e, freed).error(), ebadf());
    EXPECT_EQ(context->destroy_event(p).error(), ebadf());
    EXPECT_EQ(context->set_event(q).error(), ebadf());
    EXPECT_EQ(context->create_queue(queue_req(area(2), area(2) + 512, p)).error(), ebadf());
    auto w = context->start_wait(std::vector<Handle>{e, a}, false, 0, [](WaitEnd, uint32_t) {});
    EXPECT_EQ(w.error(), ebadf());

    // Stale: released handles, and a new object in the same slot gets a new handle.
    ASSERT_TRUE(context->unpin(p));
    EXPECT_EQ(context->unpin(p).error(), ebadf());
    EXPECT_EQ(context->map_to_gpu(p, kGpuMask, 0).error(), ebadf());
    const Handle p2 = pin(area(0));
    EXPECT_NE(p2, p);
    EXPECT_EQ(context->unpin(p).error(), ebadf());
    ASSERT_TRUE(context->destroy_queue(q, freed));
    EXPECT_EQ(context->destroy_queue(q, freed).error(), ebadf());
    ASSERT_TRUE(context->destroy_event(e));
    EXPECT_EQ(context->set_event(e).error(), ebadf());
}

TEST_F(ContextTest, HandlesOfAnotherContextAreEbadf) {
    StrictFakeDevice other_device;
    GpuContext other(other_device, GpuLimits{});
    auto theirs = other.pin(area(0), kPage, 0);
    ASSERT_TRUE(theirs);
    pin(area(0));
    EXPECT_EQ(context->unpin(theirs.value()).error(), ebadf());
    EXPECT_EQ(context->map_to_gpu(theirs.value(), kGpuMask, 0).error(), ebadf());
}

TEST_F(ContextTest, MemoryQuotas) {
    GpuLimits limits;
    limits.max_handles = 3;
    limits.max_pinned_pages = 4;
    limits.max_alloc_bytes = 2 * kPage;
    make_context(limits);

    const Handle p = pin(area(0), 3 * kPage);
    EXPECT_EQ(context->pin(area(1), 2 * kPage, 0).error(), edquot());  // 5 pages > 4
    const Handle p2 = pin(area(1), kPage);                             // exactly 4
    EXPECT_EQ(context->alloc(area(2), 3 * kPage, kGpuNode, 0).error(), edquot());
    const Handle a = alloc(area(2), 2 * kPage);
    // max_handles counts every kind.
    ASSERT_TRUE(context->unpin(p2));
    xenhsa_event_create_req ev{};
    ASSERT_TRUE(context->create_event(ev));
    EXPECT_EQ(context->create_event(ev).error(), edquot());
    EXPECT_EQ(context->pin(area(3), kPage, 0).error(), edquot());
    ASSERT_TRUE(context->free(a, freed));
    EXPECT_TRUE(context->pin(area(3), kPage, 0));
    EXPECT_EQ(context->stats().handles, 3u);
    (void)p;
}

TEST_F(ContextTest, DeviceErrorsPassThroughAndLeaveNothingBehind) {
    device.fail_next(Op::register_user, std::errc::not_enough_memory);
    EXPECT_EQ(context->pin(area(0), kPage, 0).error(), errc(std::errc::not_enough_memory));
    EXPECT_EQ(context->stats().handles, 0u);
    EXPECT_EQ(context->stats().pinned_pages, 0u);

    const Handle h = pin(area(0));
    device.fail_next(Op::map_to_gpu, std::errc::io_error);
    EXPECT_EQ(context->map_to_gpu(h, kGpuMask, 0).error(), errc(std::errc::io_error));
    EXPECT_TRUE(context->unpin(h));  // not mapped: released at once
    EXPECT_EQ(device.live_objects(), 0u);

    device.fail_next(Op::alloc, std::errc::not_enough_memory);
    EXPECT_EQ(context->alloc(area(1), kPage, kGpuNode, 0).error(),
              errc(std::errc::not_enough_memory));
    EXPECT_EQ(context->stats().alloc_bytes, 0u);

    const Handle a = alloc(area(1));
    device.fail_next(Op::free, std::errc::io_error);
    EXPECT_EQ(context->free(a, freed).error(), errc(std::errc::io_error));
    EXPECT_TRUE(context->free(a, freed));  // the handle survived the failure
}

}  // namespace
}  // namespace xenhsa::hsa::test
