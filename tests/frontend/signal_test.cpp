// Completion signals in guest memory and the polling wait.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <xenhsa/frontend/signal.hpp>

namespace {

using namespace xenhsa::frontend::aql;
using namespace std::chrono_literals;

TEST(Signal, InitFillsAnAmdUserSignal) {
    alignas(64) amd_signal_t s;
    std::memset(static_cast<void*>(&s), 0xFF, sizeof s);
    signal_init(s, 3, 0x1000, 7);
    EXPECT_EQ(s.kind, AMD_SIGNAL_KIND_USER);
    EXPECT_EQ(signal_load(s), 3);
    EXPECT_EQ(s.event_mailbox_ptr, 0x1000u);
    EXPECT_EQ(s.event_id, 7u);
    EXPECT_EQ(s.start_ts, 0u);
    EXPECT_EQ(s.end_ts, 0u);
    EXPECT_EQ(signal_handle(s), reinterpret_cast<uintptr_t>(&s));
    EXPECT_EQ(offsetof(amd_signal_t, value), 8u);
}

TEST(Signal, Conditions) {
    EXPECT_TRUE(signal_satisfied(0, HSA_SIGNAL_CONDITION_EQ, 0));
    EXPECT_FALSE(signal_satisfied(1, HSA_SIGNAL_CONDITION_EQ, 0));
    EXPECT_TRUE(signal_satisfied(1, HSA_SIGNAL_CONDITION_NE, 0));
    EXPECT_TRUE(signal_satisfied(0, HSA_SIGNAL_CONDITION_LT, 1));
    EXPECT_FALSE(signal_satisfied(1, HSA_SIGNAL_CONDITION_LT, 1));
    EXPECT_TRUE(signal_satisfied(1, HSA_SIGNAL_CONDITION_GTE, 1));
    EXPECT_FALSE(signal_satisfied(-1, HSA_SIGNAL_CONDITION_GTE, 0));
}

TEST(Signal, WaitReturnsAtOnceWhenAlreadySatisfied) {
    alignas(64) amd_signal_t s;
    signal_init(s, 0);
    auto v = signal_wait(s, HSA_SIGNAL_CONDITION_LT, 1, 10s);
    ASSERT_TRUE(v);
    EXPECT_EQ(v.value(), 0);
}

TEST(Signal, WaitSeesAnotherThreadsDecrements) {
    alignas(64) amd_signal_t s;
    signal_init(s, 3);
    std::thread agent([&] {
        for (int i = 0; i < 3; ++i) {
            std::this_thread::sleep_for(2ms);
            __atomic_fetch_sub(const_cast<int64_t*>(&s.value), 1, __ATOMIC_RELEASE);
        }
    });
    auto v = signal_wait(s, HSA_SIGNAL_CONDITION_EQ, 0, 10s);
    agent.join();
    ASSERT_TRUE(v);
    EXPECT_EQ(v.value(), 0);
}

TEST(Signal, WaitTimesOut) {
    alignas(64) amd_signal_t s;
    signal_init(s, 1);
    auto v = signal_wait(s, HSA_SIGNAL_CONDITION_EQ, 0, 20ms);
    ASSERT_FALSE(v);
    EXPECT_EQ(v.error(), std::errc::timed_out);
    EXPECT_EQ(signal_load(s), 1);
}

}  // namespace
