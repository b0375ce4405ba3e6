// Small dispatches run inline on the queue's thread (no job, no pool, no in-flight cap);
// big ones go to the pool in chunks of workgroups. Both keep every guarantee: results,
// an unmap that waits for accesses in flight and admits none after it, halts.
#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

#include "soft_fixture.hpp"

namespace xenhsa::hsa::soft_test {
namespace {

using namespace std::chrono_literals;

SoftAgentOptions one_worker_one_job() {
    SoftAgentOptions options;
    options.worker_threads = 1;
    options.max_inflight_dispatches = 1;
    return options;  // inline: up to 1 workgroup
}

class InlineDispatchTest : public SoftAgentTest {
protected:
    InlineDispatchTest() : SoftAgentTest(one_worker_one_job()) {}
};

class DefaultAgentTest : public SoftAgentTest {};

TEST_F(InlineDispatchTest, SmallDispatchCompletesWhilePoolAndInflightCapAreTaken) {
    GpuBuffer data(device(), kPage), small(device(), kPage), args(device(), kPage);
    SignalPage signals(device());
    AqlTestQueue queue(device());
    // 2^32 - 1 one-item workgroups: the only worker and the only pool slot, for longer
    // than the test.
    const Va busy = put_kernarg(args, 0, xenhsa_kernarg_fill{data.va(), 4, 8, 0});
    const Grid huge{{0xFFFFFFFFu, 1, 1}, {1, 1, 1}, 1};
    queue.submit(dispatch_packet(kernel_object("fill"), busy, huge, signals.init(0, 1)));
    const Va fill = put_kernarg(args, 64, xenhsa_kernarg_fill{small.va(), 256, 0x1234'5678u, 0});
    queue.submit(
        dispatch_packet(kernel_object("fill"), fill, grid_1d(256, 256), signals.init(1, 1)));
    ASSERT_TRUE(signals.wait_eq(1, 0, 5s)) << "a one-workgroup dispatch waited for the pool";
    for (uint32_t i = 0; i < 256; ++i) {
        ASSERT_EQ(small.at<uint32_t>()[i], 0x1234'5678u) << i;
    }
    EXPECT_EQ(signals.value(0), 1);
    queue.destroy();  // the big one is halted at once
    EXPECT_EQ(signals.value(0), 1);
    EXPECT_TRUE(log().faults().empty());
}

TEST_F(InlineDispatchTest, BarrierBitWaitsForThePoolJobBeforeRunningInline) {
    GpuBuffer data(device(), 1 << 20), args(device(), kPage);
    SignalPage signals(device());
    AqlTestQueue queue(device());
    const uint32_t words = (1 << 20) / 4;
    const Va big = put_kernarg(args, 0, xenhsa_kernarg_fill{data.va(), words, 3, 0});
    queue.submit(
        dispatch_packet(kernel_object("fill"), big, grid_1d(words, 64), signals.init(0, 1)));
    // Inline, with the barrier bit: sums what the pool job wrote.
    GpuBuffer sum(device(), kPage);
    const Va checksum = put_kernarg(args, 64, xenhsa_kernarg_checksum{data.va(), words, sum.va()});
    queue.submit(dispatch_packet(kernel_object("checksum"), checksum, grid_1d(words, 1024),
                                 signals.init(1, 1), /*barrier=*/true));
    ASSERT_TRUE(signals.wait_eq(1, 0));
    EXPECT_EQ(signals.value(0), 0);
    // 256 workgroups: more than one, so it went to the pool, and all of them saw 3s.
    EXPECT_EQ(*sum.at<uint64_t>(), uint64_t{3} * words);
}

// Grids with tails, in one, two and three dimensions, inline and on the pool: every
// work-item runs exactly once.
class GridTest : public SoftAgentTest {
protected:
    explicit GridTest(SoftAgentOptions options = {}) : SoftAgentTest(options) {}
    void expect_every_work_item_runs_once();
};

void GridTest::expect_every_work_item_runs_once() {
    struct Case {
        Grid grid;
        const char* what;
    };
    const Case cases[] = {
        {grid_1d(1000, 1024), "1D, one group, inline"},
        {grid_1d(100'003, 256), "1D, pool, a tail"},
        {Grid{{8, 8, 1}, {8, 4, 1}, 2}, "2D, two groups, inline"},
        {Grid{{300, 70, 1}, {16, 16, 1}, 2}, "2D, pool, tails"},
        {Grid{{33, 9, 5}, {4, 4, 2}, 3}, "3D, pool, tails"},
    };
    GpuBuffer args(device(), kPage), sum(device(), kPage);
    SignalPage signals(device());
    AqlTestQueue queue(device());
    for (const auto& c : cases) {
        const uint64_t items = uint64_t{c.grid.size[0]} * c.grid.size[1] * c.grid.size[2];
        GpuBuffer data(device(), items * 4);
        const Va fill = put_kernarg(args, 0, xenhsa_kernarg_fill{data.va(), items, 1, 0});
        queue.submit(dispatch_packet(kernel_object("fill"), fill, c.grid, signals.init(0, 1)));
        ASSERT_TRUE(signals.wait_eq(0, 0)) << c.what;
        // checksum over the same grid: each item adds its word once.
        *sum.at<uint64_t>() = 0;
        const Va check = put_kernarg(args, 64, xenhsa_kernarg_checksum{data.va(), items, sum.va()});
        queue.submit(dispatch_packet(kernel_object("checksum"), check, c.grid, signals.init(1, 1)));
        ASSERT_TRUE(signals.wait_eq(1, 0)) << c.what;
        EXPECT_EQ(*sum.at<uint64_t>(), items) << c.what;
        for (uint64_t i = 0; i < items; ++i) {
            ASSERT_EQ(data.at<uint32_t>()[i], 1u) << c.what << " item " << i;
        }
    }
    EXPECT_TRUE(log().faults().empty());
}

class DefaultGridTest : public GridTest {};

TEST_F(DefaultGridTest, EveryWorkItemRunsOnceInlineAndOnThePool) {
    expect_every_work_item_runs_once();
}

class NoInlineGridTest : public GridTest {
protected:
    NoInlineGridTest() : GridTest(SoftAgentOptions{.inline_max_workgroups = 0}) {}
};

TEST_F(NoInlineGridTest, EveryWorkItemRunsOnceOnThePool) { expect_every_work_item_runs_once(); }

// Revoke semantics with inline dispatches: unmap returns only when no workgroup is
// accessing the memory, no workgroup touches it afterwards (the next one faults), and a
// queue that keeps running small dispatches cannot hold the unmap off.
TEST_F(DefaultAgentTest, UnmapWaitsForInlineWorkgroupsAndNoneWritesAfterIt) {
    const EventId error = make_event();
    GpuBuffer data(device(), kPage), args(device(), kPage);
    SignalPage signals(device());
    AqlTestQueue queue(device(), QueueOptions{.packets = 1024, .error_event = error});
    const Va fill = put_kernarg(args, 0, xenhsa_kernarg_fill{data.va(), 1024, 7, 0});
    const uint64_t counted = signals.init(0, int64_t{1} << 40);
    const auto packet = dispatch_packet(kernel_object("fill"), fill, grid_1d(1024, 512), counted);
    // A producer that keeps the queue busy with two-workgroup (inline) dispatches.
    std::atomic<bool> stop{false};
    std::thread producer([&] {
        while (!stop.load()) {
            if (queue.write_index() - queue.read_index() < 1024) {
                queue.submit(packet);
            } else {
                std::this_thread::yield();
            }
        }
    });
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (signals.value(0) > (int64_t{1} << 40) - 1000) {  // it is running them
        ASSERT_LT(std::chrono::steady_clock::now(), deadline);
    }

    const auto start = std::chrono::steady_clock::now();
    const bool unmapped = device().unmap_from_gpu(data.va()).has_value();
    const auto took = std::chrono::steady_clock::now() - start;
    std::memset(data.at<void>(), 0, kPage);  // the GPU may no longer write here
    const bool faulted = fired(error);       // the next dispatch faults on the buffer
    stop = true;
    producer.join();
    queue.destroy();
    ASSERT_TRUE(unmapped);
    EXPECT_LT(took, 1s) << "unmap starved by kernels";
    ASSERT_TRUE(faulted);
    for (uint32_t i = 0; i < 1024; ++i) {
        ASSERT_EQ(data.at<uint32_t>()[i], 0u) << "written after unmap returned, word " << i;
    }
    const auto faults = log().faults();
    ASSERT_EQ(faults.size(), 1u);
    // Between the two workgroups of a dispatch or before the first.
    EXPECT_TRUE(faults[0].address == data.va() || faults[0].address == data.va(2048));
}

}  // namespace
}  // namespace xenhsa::hsa::soft_test
