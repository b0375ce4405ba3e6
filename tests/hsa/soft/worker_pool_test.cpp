// The agent's workgroup workers (hsa-bridge/soft/worker_pool.hpp) on their own: a task that
// would run for ever yields its worker to a task that waits once its slice is over, and
// resumes behind it (issue 25, item 3).
#include "worker_pool.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <thread>

namespace xenhsa::hsa::soft {
namespace {

using namespace std::chrono_literals;

// Runs until told to stop, a step at a time, giving its turn up when it is over.
class EndlessTask final : public PoolTask {
public:
    bool run(const PoolTurn& turn) noexcept override {
        while (!stop.load()) {
            steps.fetch_add(1);
            if (turn.over()) {
                return true;
            }
        }
        return false;
    }
    std::atomic<bool> stop{false};
    std::atomic<uint64_t> steps{0};
};

class OnceTask final : public PoolTask {
public:
    bool run(const PoolTurn&) noexcept override {
        ran.store(true);
        return false;
    }
    std::atomic<bool> ran{false};
};

bool within(std::chrono::milliseconds limit, const std::function<bool()>& condition) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!condition()) {
        if (std::chrono::steady_clock::now() > deadline) {
            return false;
        }
        std::this_thread::sleep_for(100us);
    }
    return true;
}

TEST(WorkerPoolTest, ATaskThatNeverEndsYieldsToOneThatWaits) {
    WorkerPool pool(1, 500us);
    auto endless = std::make_shared<EndlessTask>();
    pool.submit(endless, 1);
    ASSERT_TRUE(within(10s, [&] { return endless->steps.load() > 0; }));
    auto once = std::make_shared<OnceTask>();
    pool.submit(once, 1);
    EXPECT_TRUE(within(10s, [&] { return once->ran.load(); })) << "the endless task kept the pool";
    EXPECT_GE(pool.requeued(), 1u);
    const uint64_t steps = endless->steps.load();
    EXPECT_TRUE(within(10s, [&] { return endless->steps.load() > steps; }))
        << "it did not resume after the other";
    endless->stop.store(true);
}

TEST(WorkerPoolTest, AloneATaskKeepsItsWorker) {
    WorkerPool pool(1, 100us);
    auto endless = std::make_shared<EndlessTask>();
    pool.submit(endless, 1);
    ASSERT_TRUE(within(10s, [&] { return endless->steps.load() > 1000; }));
    std::this_thread::sleep_for(5ms);
    EXPECT_EQ(pool.requeued(), 0u) << "a turn ended with nothing waiting";
    endless->stop.store(true);
}

}  // namespace
}  // namespace xenhsa::hsa::soft
