// KFD event semantics: auto/manual reset, wait any/all, timeouts, destroy.
#include <future>
#include <map>
#include <set>
#include <thread>

#include "soft_fixture.hpp"

namespace xenhsa::hsa::soft_test {
namespace {

const std::error_code kTimedOut = std::make_error_code(std::errc::timed_out);

class EventsTest : public SoftAgentTest {
protected:
    Result<uint32_t> wait(std::vector<EventId> events, bool all, uint32_t timeout_ms) {
        return device().wait_events(events, all, timeout_ms);
    }
};

TEST_F(EventsTest, AutoResetEventIsConsumedByTheWaitThatSeesIt) {
    const EventId event = make_event();
    EXPECT_EQ(wait({event}, false, 0).error(), kTimedOut);
    ASSERT_TRUE(device().set_event(event));
    auto first = wait({event}, false, 0);
    ASSERT_TRUE(first);
    EXPECT_EQ(first.value(), 1u);
    EXPECT_EQ(wait({event}, false, 0).error(), kTimedOut);
}

TEST_F(EventsTest, ManualResetEventStaysSignalledUntilReset) {
    const EventId event = make_event(/*manual_reset=*/true);
    ASSERT_TRUE(device().set_event(event));
    EXPECT_TRUE(fired(event, 0));
    EXPECT_TRUE(fired(event, 0));
    ASSERT_TRUE(device().reset_event(event));
    EXPECT_EQ(wait({event}, false, 0).error(), kTimedOut);
}

TEST_F(EventsTest, InitiallySignalled) {
    const EventId event = make_event(false, /*signaled=*/true);
    EXPECT_TRUE(fired(event, 0));
    EXPECT_FALSE(fired(event, 0));
}

TEST_F(EventsTest, WaitAnyReportsWhichFired) {
    const EventId a = make_event(true), b = make_event(true), c = make_event(true);
    ASSERT_TRUE(device().set_event(b));
    ASSERT_TRUE(device().set_event(c));
    auto mask = wait({a, b, c}, false, 0);
    ASSERT_TRUE(mask);
    EXPECT_EQ(mask.value(), 0b110u);
}

TEST_F(EventsTest, WaitAllNeedsEveryEvent) {
    const EventId a = make_event(true), b = make_event(true);
    ASSERT_TRUE(device().set_event(a));
    EXPECT_EQ(wait({a, b}, true, 0).error(), kTimedOut);
    auto waiter = std::async(std::launch::async, [&] { return wait({a, b}, true, kWaitMs); });
    ASSERT_TRUE(device().set_event(b));
    auto mask = waiter.get();
    ASSERT_TRUE(mask);
    EXPECT_EQ(mask.value(), 0b11u);
}

TEST_F(EventsTest, SetWakesABlockedWaiterAndAnAutoEventIsLeftUnsignalled) {
    const EventId event = make_event();
    auto waiter = std::async(std::launch::async, [&] { return wait({event}, false, kWaitMs); });
    ASSERT_TRUE(device().set_event(event));
    auto mask = waiter.get();
    ASSERT_TRUE(mask);
    EXPECT_EQ(mask.value(), 1u);
    // Whether the waiter was already waiting (and consumed the set) or found the event
    // signalled (and reset it), nothing is left.
    EXPECT_EQ(wait({event}, false, 0).error(), kTimedOut);
}

TEST_F(EventsTest, SetWakesEveryWaiterOfAManualEvent) {
    const EventId event = make_event(true);
    auto w1 = std::async(std::launch::async, [&] { return wait({event}, false, kWaitMs); });
    auto w2 = std::async(std::launch::async, [&] { return wait({event}, false, kWaitMs); });
    ASSERT_TRUE(device().set_event(event));
    EXPECT_TRUE(w1.get());
    EXPECT_TRUE(w2.get());
    EXPECT_TRUE(fired(event, 0));  // manual: still signalled
}

TEST_F(EventsTest, DestroyEndsWaitsWithAnError) {
    const EventId event = make_event();
    const EventId other = make_event();
    auto waiter = std::async(std::launch::async, [&] {
        return wait({other, event}, true, XENHSA_WAIT_INFINITE);
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the waiter blocks first
    ASSERT_TRUE(device().destroy_event(event));
    auto result = waiter.get();
    ASSERT_FALSE(result);
    // The agent says which event went; KFD's thunk reports a failed wait (EIO).
    EXPECT_EQ(result.error(), on_kfd() ? std::make_error_code(std::errc::io_error) : kNoEnt);
    EXPECT_EQ(device().set_event(event).error(), kNoEnt);
}

TEST_F(EventsTest, TimeoutWithNothingSet) {
    const EventId event = make_event();
    EXPECT_EQ(wait({event}, false, 20).error(), kTimedOut);
}

TEST_F(EventsTest, EventIdsAreUniqueAndThereIsNoMailbox) {
    std::map<EventId, uint32_t> live;  // id -> event_id
    std::set<uint32_t> event_ids;
    for (int i = 0; i < 100; ++i) {
        auto info = device().create_event(EventSpec{});
        ASSERT_TRUE(info);
        EXPECT_NE(info.value().event_id, 0u);
        EXPECT_EQ(info.value().mailbox, 0u);
        EXPECT_TRUE(event_ids.insert(info.value().event_id).second);
        EXPECT_TRUE(live.emplace(info.value().id, info.value().event_id).second);
    }
    const auto gone = live.begin();
    ASSERT_TRUE(device().destroy_event(gone->first));
    event_ids.erase(gone->second);
    live.erase(gone);
    for (int i = 0; i < 10; ++i) {
        auto info = device().create_event(EventSpec{});
        ASSERT_TRUE(info);
        EXPECT_TRUE(event_ids.insert(info.value().event_id).second);
        EXPECT_FALSE(live.contains(info.value().id));
    }
}

TEST_F(EventsTest, BadArguments) {
    const EventId event = make_event();
    EXPECT_EQ(device().set_event(999).error(), kNoEnt);
    EXPECT_EQ(device().reset_event(999).error(), kNoEnt);
    EXPECT_EQ(device().destroy_event(999).error(), kNoEnt);
    EXPECT_EQ(wait({event, 999}, false, 0).error(), kNoEnt);
    EXPECT_EQ(wait({}, false, 0).error(), kInval);
    EXPECT_EQ(wait(std::vector<EventId>(33, event), false, 0).error(), kInval);
    EventSpec bad_type;
    bad_type.type = XENHSA_EVENT_TYPE_COUNT_;
    EXPECT_EQ(device().create_event(bad_type).error(), kInval);
    EventSpec bad_node;
    bad_node.node = 2;
    EXPECT_EQ(device().create_event(bad_node).error(), kInval);
}

class FewEventsTest : public SoftAgentTest {
protected:
    FewEventsTest() : SoftAgentTest(SoftAgentOptions{.max_events = 4}) {}
};

TEST_F(FewEventsTest, EventsAreLimited) {
    std::vector<EventId> events;
    for (int i = 0; i < 4; ++i) {
        events.push_back(make_event());
    }
    EXPECT_EQ(device().create_event(EventSpec{}).error(),
              std::make_error_code(std::errc::not_enough_memory));
    ASSERT_TRUE(device().destroy_event(events[0]));
    EXPECT_TRUE(device().create_event(EventSpec{}));
}

}  // namespace
}  // namespace xenhsa::hsa::soft_test
