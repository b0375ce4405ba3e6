// The spurious-event throttle's policy (XSA-332's late EOI): wake-ups from the event
// channel that found no new request or doorbell cost nothing for a while, then re-arming
// the channel waits, longer each time; real work resets it.
#include <gtest/gtest.h>

#include <chrono>
#include <xenhsa/backend/core/spurious_events.hpp>

namespace xenhsa::backend::core {
namespace {

using std::chrono::microseconds;

SpuriousEventPolicy policy() {
    SpuriousEventPolicy p;
    p.free_wakeups = 3;
    p.delay_min = microseconds(1000);
    p.delay_max = microseconds(8000);
    return p;
}

TEST(SpuriousEventThrottle, FreeWakeupsThenGrowingDelaysUpToTheMaximum) {
    SpuriousEventThrottle t(policy());
    for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(t.wakeup(false), microseconds(0)) << i;
    }
    EXPECT_EQ(t.wakeup(false), microseconds(1000));
    EXPECT_EQ(t.wakeup(false), microseconds(2000));
    EXPECT_EQ(t.wakeup(false), microseconds(4000));
    EXPECT_EQ(t.wakeup(false), microseconds(8000));
    for (int i = 0; i < 100; ++i) {
        EXPECT_EQ(t.wakeup(false), microseconds(8000));
    }
    EXPECT_EQ(t.spurious_in_a_row(), 107u);
    EXPECT_EQ(t.throttled(), 104u);
}

TEST(SpuriousEventThrottle, RealWorkResetsIt) {
    SpuriousEventThrottle t(policy());
    for (int i = 0; i < 10; ++i) {
        (void)t.wakeup(false);
    }
    EXPECT_EQ(t.wakeup(true), microseconds(0));
    EXPECT_EQ(t.spurious_in_a_row(), 0u);
    for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(t.wakeup(false), microseconds(0)) << i;
    }
    EXPECT_EQ(t.wakeup(false), microseconds(1000));  // from the bottom again
}

// A fair guest's kick always comes with work, bar the odd one whose request a pass took
// before the kick was read: it is never slowed down.
TEST(SpuriousEventThrottle, AFairGuestIsNeverDelayed) {
    SpuriousEventThrottle t(policy());
    for (int i = 0; i < 100000; ++i) {
        ASSERT_EQ(t.wakeup(i % 3 != 0), microseconds(0)) << i;
        if (i % 7 == 0) {
            ASSERT_EQ(t.wakeup(false), microseconds(0)) << i;
        }
    }
    EXPECT_EQ(t.throttled(), 0u);
}

TEST(SpuriousEventThrottle, CountsSaturateAndOddPoliciesAreSane) {
    SpuriousEventPolicy p = policy();
    p.free_wakeups = 0;
    p.delay_max = microseconds(10);  // below the minimum: the minimum
    SpuriousEventThrottle t(p);
    EXPECT_EQ(t.wakeup(false), microseconds(1000));
    for (uint64_t i = 0; i < 70; ++i) {  // past any shift width
        EXPECT_EQ(t.wakeup(false), microseconds(1000));
    }
    SpuriousEventPolicy off;
    off.free_wakeups = SpuriousEventPolicy::kNever;
    SpuriousEventThrottle never(off);
    for (int i = 0; i < 1000; ++i) {
        ASSERT_EQ(never.wakeup(false), microseconds(0));
    }
    EXPECT_EQ(never.throttled(), 0u);
}

}  // namespace
}  // namespace xenhsa::backend::core
