// teardown() and revoke_range(): the fixed release order, whatever order the objects were
// made in; no allocation; idempotence; a device failure aborts.
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <functional>
#include <set>
#include <support/alloc_counter.hpp>

#include "context_fixture.hpp"

namespace xenhsa::hsa::test {
namespace {

using xenhsa::testing::CountAllocations;

// The phase of a release call in the teardown order of docs/protocol.md §5.20.
int phase(const Call& call, const std::set<Va>& queue_memory) {
    switch (call.op) {
        case Op::destroy_queue:
            return 1;
        case Op::destroy_event:
            return 2;
        case Op::unmap_from_gpu:
            return 3;
        case Op::deregister_user:
        case Op::free:
            return queue_memory.count(call.arg) != 0 ? 4 : 5;
        default:
            return 0;
    }
}

void expect_teardown_order(const std::vector<Call>& calls, const std::set<Va>& queue_memory) {
    int last = 0;
    for (const Call& call : calls) {
        const int p = phase(call, queue_memory);
        ASSERT_NE(p, 0) << "teardown made a " << op_name(call.op) << " call";
        EXPECT_GE(p, last) << op_name(call.op) << " " << std::hex << call.arg
                           << " came after a later phase";
        last = p;
    }
}

class TeardownOrder : public ContextTest, public ::testing::WithParamInterface<int> {
public:
    // Public wrappers so that scenarios (free functions) can build through the fixture.
    Handle Pin(Va va, uint64_t size = kPage) { return pin(va, size); }
    Handle Alloc(Va va, uint64_t size = kPage) { return alloc(va, size); }
    void Map(Handle h) { map(h); }
    Handle Event() { return event(); }
    Handle Queue(Va ring, Va ptrs, Handle ev = 0) { return queue(ring, ptrs, ev).handle; }
    GpuContext& S() { return *context; }
    FreedLog& Freed() { return freed; }
};

std::vector<std::function<std::set<Va>(TeardownOrder&)>> scenarios() {
    return {
        // Queue memory made last, in the highest slots; other memory first.
        [](TeardownOrder& t) {
            t.Map(t.Pin(area(9)));
            t.Alloc(area(8));
            const Handle ev = t.Event();
            const Handle ring = t.Pin(area(0));
            t.Map(ring);
            const Handle ptr = t.Alloc(area(1));
            t.Map(ptr);
            t.Queue(area(0), area(1), ev);
            return std::set<Va>{area(0), area(1)};
        },
        // Queue memory first, slots freed and reused, and every release deferred.
        [](TeardownOrder& t) {
            const Handle scratch = t.Pin(area(7));
            const Handle ring = t.Alloc(area(0));
            t.Map(ring);
            const Handle ptr = t.Pin(area(1));
            t.Map(ptr);
            EXPECT_TRUE(t.S().unpin(scratch));
            const Handle ev = t.Event();
            t.Queue(area(0), area(1), ev);
            t.Map(t.Pin(area(7)));  // reuses the freed slot
            EXPECT_TRUE(t.S().unmap_from_gpu(ring));
            EXPECT_TRUE(t.S().free(ring, t.Freed()));
            EXPECT_TRUE(t.S().unpin(ptr));
            EXPECT_TRUE(t.S().destroy_event(ev));
            t.Event();
            return std::set<Va>{area(0), area(1)};
        },
        // Two queues sharing a pointer page, one destroyed; events before and after.
        [](TeardownOrder& t) {
            t.Event();
            const Handle ptr = t.Pin(area(3));
            t.Map(ptr);
            const Handle ring_a = t.Pin(area(4));
            t.Map(ring_a);
            const Handle ring_b = t.Alloc(area(5));
            t.Map(ring_b);
            const Handle qa = t.Queue(area(4), area(3));
            t.Queue(area(5), area(3) + 64, t.Event());
            EXPECT_TRUE(t.S().destroy_queue(qa, t.Freed()));
            t.Map(t.Alloc(area(6)));
            EXPECT_TRUE(t.S().unpin(ptr));
            return std::set<Va>{area(3), area(5)};
        },
        // Many small objects interleaved.
        [](TeardownOrder& t) {
            std::set<Va> queue_memory;
            for (uint32_t i = 0; i < 6; ++i) {
                const Handle ring = i % 2 ? t.Pin(area(10 + i)) : t.Alloc(area(10 + i));
                t.Map(ring);
                t.Event();
                if (i % 3 != 2) {
                    t.Queue(area(10 + i), area(10 + i) + 2048);
                    queue_memory.insert(area(10 + i));
                }
            }
            return queue_memory;
        },
    };
}

TEST_P(TeardownOrder, ReleasesInTheFixedOrder) {
    const std::set<Va> queue_memory = scenarios()[GetParam()](*this);
    ASSERT_FALSE(HasFailure());
    ASSERT_GT(device.queues(), 0u);
    device.clear_calls();
    context->teardown();
    expect_teardown_order(device.calls(), queue_memory);
    EXPECT_EQ(device.live_objects(), 0u) << "teardown leaked device objects";
    const GpuStats stats = context->stats();
    EXPECT_EQ(stats.handles, 0u);
    EXPECT_EQ(stats.deferred, 0u);
    EXPECT_EQ(stats.pinned_pages, 0u);
    EXPECT_EQ(stats.alloc_bytes, 0u);

    device.clear_calls();
    context->teardown();  // idempotent
    context.reset();      // and the destructor does it again
    EXPECT_EQ(device.calls(), std::vector<Call>{});
}

INSTANTIATE_TEST_SUITE_P(Scenarios, TeardownOrder, ::testing::Range(0, 4));

TEST_F(ContextTest, TheContextIsUsableAfterTeardown) {
    pin_mapped(area(0));
    queue(area(0), area(0) + 64);
    context->teardown();
    const Handle h = pin_mapped(area(0));
    EXPECT_NE(h, 0u);
    EXPECT_TRUE(context->create_queue(queue_req(area(0), area(0) + 64)));
}

class RevokeTest : public ContextTest {
protected:
    void SetUp() override {
        ContextTest::SetUp();
        context->on_queue_lost([this](Handle h, Va va, bool) { lost.emplace_back(h, va); });
        lost.reserve(16);
    }
    std::vector<std::pair<Handle, Va>> lost;
};

TEST_F(RevokeTest, DestroysTheQueuesUsingTheRangeFirst) {
    // Q1: ring in the revoked range, pointers outside it (and already unpinned by the
    // guest, so deferred). Q2 and `other` lie outside the range and stay.
    const Handle ring = pin_mapped(area(0), 2 * kPage);
    const Handle ptrs = pin_mapped(area(1));
    const Handle q1 = queue(area(0), area(1)).handle;
    const QueueId q1_id = *device.last_queue();
    ASSERT_TRUE(context->unpin(ptrs));
    const Handle other = pin_mapped(area(2));
    const Handle q2 = queue(area(2), area(2) + 512).handle;
    device.clear_calls();

    context->revoke_range(area(0) + kPage, kPage, freed);  // touches the ring's second page only
    EXPECT_EQ(device.calls(), (std::vector<Call>{{Op::destroy_queue, q1_id},
                                                 {Op::unmap_from_gpu, area(0)},
                                                 {Op::unmap_from_gpu, area(1)},
                                                 {Op::deregister_user, area(0)},
                                                 {Op::deregister_user, area(1)}}));
    EXPECT_EQ(lost, (std::vector<std::pair<Handle, Va>>{{q1, 0}}));
    EXPECT_EQ(context->unpin(ring).error(), ebadf());
    EXPECT_EQ(context->destroy_queue(q1, freed).error(), ebadf());
    EXPECT_EQ(context->stats().deferred, 0u);
    EXPECT_EQ(context->stats().queues, 1u);
    EXPECT_TRUE(device.mapped(area(2)));

    device.clear_calls();
    context->revoke_range(area(0), 2 * kPage, freed);  // idempotent
    EXPECT_EQ(device.calls(), std::vector<Call>{});
    EXPECT_EQ(lost.size(), 1u);

    ASSERT_TRUE(context->destroy_queue(q2, freed));
    ASSERT_TRUE(context->unmap_from_gpu(other));
    ASSERT_TRUE(context->unpin(other));
    EXPECT_EQ(device.live_objects(), 0u);
}

TEST_F(RevokeTest, MemoryWithoutQueuesIsUnmappedAndDeregistered) {
    const Handle mapped_pin = pin_mapped(area(0));
    const Handle plain_pin = pin(area(0) + 2 * kPage);
    const Handle outside = pin(area(0) + 8 * kPage);
    device.clear_calls();
    context->revoke_range(area(0), 4 * kPage, freed);
    EXPECT_EQ(device.calls(), (std::vector<Call>{{Op::unmap_from_gpu, area(0)},
                                                 {Op::deregister_user, area(0)},
                                                 {Op::deregister_user, area(0) + 2 * kPage}}));
    EXPECT_EQ(context->unpin(mapped_pin).error(), ebadf());
    EXPECT_EQ(context->unpin(plain_pin).error(), ebadf());
    EXPECT_TRUE(context->unpin(outside));
    EXPECT_TRUE(lost.empty());
    context->revoke_range(area(0), 0, freed);                // empty range: nothing
    context->revoke_range(~0ull - kPage, 2 * kPage, freed);  // wraps: clamped, finds nothing
    EXPECT_EQ(device.live_objects(), 0u);
}

TEST_F(RevokeTest, ErrorEventsHeldByRevokedQueuesAreDestroyedAfterThem) {
    pin_mapped(area(0));
    const Handle ev = event();
    queue(area(0), area(0) + 128, ev);
    const EventId device_event = *device.last_event();
    ASSERT_TRUE(context->destroy_event(ev));  // deferred: the queue signals it
    device.clear_calls();
    context->revoke_range(area(0), kPage, freed);
    const auto calls = device.calls();
    ASSERT_GE(calls.size(), 2u);
    EXPECT_EQ(calls[0].op, Op::destroy_queue);
    EXPECT_EQ(calls[1], (Call{Op::destroy_event, device_event}));
    EXPECT_EQ(device.live_objects(), 0u);
}

TEST_F(RevokeTest, RevokeAndTeardownDoNotAllocate) {
    for (uint32_t i = 0; i < 4; ++i) {
        pin_mapped(area(i));
        queue(area(i), area(i) + 256, event());
        const Handle extra = pin_mapped(area(i) + 8 * kPage);
        ASSERT_TRUE(context->unmap_from_gpu(extra));
    }
    const Handle deferred = pin_mapped(area(9));
    queue(area(9), area(9) + 64);
    ASSERT_TRUE(context->unpin(deferred));
    {
        CountAllocations counter;
        context->revoke_range(area(1), kPage, freed);
        context->revoke_range(area(9), kPage, freed);
        EXPECT_EQ(counter.count(), 0u) << "revoke_range allocated";
    }
    EXPECT_EQ(lost.size(), 2u);
    {
        CountAllocations counter;
        context->teardown();
        EXPECT_EQ(counter.count(), 0u) << "teardown allocated";
    }
    EXPECT_EQ(device.live_objects(), 0u);
}

using ContextDeathTest = ContextTest;

TEST_F(ContextDeathTest, ADeviceFailureOnAReleasePathAborts) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    // The message goes to the default logger; death tests read stderr.
    auto to_stderr = [] { spdlog::set_default_logger(spdlog::stderr_logger_st("death")); };
    EXPECT_DEATH(
        {
            to_stderr();
            pin_mapped(area(0));
            const Handle q = queue(area(0), area(0) + 64).handle;
            device.fail_next(Op::destroy_queue, std::errc::io_error);
            (void)context->destroy_queue(q, freed);
        },
        "destroy queue .* failed on a release path");
    EXPECT_DEATH(
        {
            to_stderr();
            pin_mapped(area(0));
            device.fail_next(Op::unmap_from_gpu, std::errc::io_error);
            context->teardown();
        },
        "unmap from GPU .* failed on a release path");
    EXPECT_DEATH(
        {
            to_stderr();
            pin(area(0));
            device.fail_next(Op::deregister_user, std::errc::io_error);
            context->revoke_range(area(0), kPage, freed);
        },
        "deregister memory .* failed on a release path");
}

}  // namespace
}  // namespace xenhsa::hsa::test
