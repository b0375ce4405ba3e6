// EVENT_WAIT: fired, timeout, cancelled; destroy and teardown while waiting; `done`
// exactly once. Waits end on other threads, so the tests wait for `done` with a generous
// bound (never a pass/fail timing assertion).
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

#include "context_fixture.hpp"

namespace xenhsa::hsa::test {
namespace {

constexpr auto kBound = std::chrono::seconds(10);

// Records every `done` call of every wait.
class Completions {
public:
    GpuContext::WaitDone callback(int tag) {
        return [this, tag](WaitEnd end, uint32_t mask) {
            std::lock_guard lock(mutex_);
            ends_[tag].push_back({end, mask});
            changed_.notify_all();
        };
    }
    // The first completion of `tag`, waiting for it (bounded).
    std::optional<std::pair<WaitEnd, uint32_t>> await(int tag) {
        std::unique_lock lock(mutex_);
        if (!changed_.wait_for(lock, kBound, [&] { return !ends_[tag].empty(); })) {
            return std::nullopt;
        }
        return ends_[tag].front();
    }
    size_t count(int tag) {
        std::lock_guard lock(mutex_);
        return ends_[tag].size();
    }

private:
    std::mutex mutex_;
    std::condition_variable changed_;
    std::map<int, std::vector<std::pair<WaitEnd, uint32_t>>> ends_;
};

using Ended = std::optional<std::pair<WaitEnd, uint32_t>>;
Ended ended(WaitEnd end, uint32_t mask) { return std::make_pair(end, mask); }

class WaitTest : public ContextTest {
protected:
    Result<uint64_t> wait(std::vector<Handle> events, int tag, bool all = false,
                          uint32_t timeout = XENHSA_WAIT_INFINITE) {
        return context->start_wait(events, all, timeout, done.callback(tag));
    }
    // Bounded: until `n` waiters are blocked in the device.
    bool device_waiters(uint32_t n) {
        const auto until = std::chrono::steady_clock::now() + kBound;
        while (device.waiting() != n) {
            if (std::chrono::steady_clock::now() > until) {
                return false;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        return true;
    }
    Completions done;
};

// Holds the device's waits from here on; lets them go at the end of the scope too, so a
// failed assertion never leaves the context's teardown waiting on a held wait.
struct HeldWaits {
    explicit HeldWaits(StrictFakeDevice& d) : device(d) { device.hold_waits(true); }
    ~HeldWaits() { device.hold_waits(false); }
    HeldWaits(const HeldWaits&) = delete;
    HeldWaits& operator=(const HeldWaits&) = delete;
    StrictFakeDevice& device;
};

TEST_F(WaitTest, AnyWaitFiresWithTheMaskOfTheEventThatFired) {
    const Handle a = event();
    const Handle b = event();
    ASSERT_TRUE(wait({a, b}, 1));
    ASSERT_TRUE(device_waiters(3));  // a, b and the wait's cancel event
    ASSERT_TRUE(context->set_event(b));
    EXPECT_EQ(done.await(1), ended(WaitEnd::fired, 0b10));
    EXPECT_EQ(context->stats().events, 2u);
}

TEST_F(WaitTest, AllWaitNeedsEveryEvent) {
    const Handle a = event();
    const Handle b = event();
    const Handle c = event();
    ASSERT_TRUE(wait({a, b, c}, 1, true));
    ASSERT_TRUE(context->set_event(c));
    ASSERT_TRUE(context->set_event(a));
    ASSERT_TRUE(device_waiters(2));  // only b and the cancel event left
    EXPECT_EQ(done.count(1), 0u);
    ASSERT_TRUE(context->set_event(b));
    EXPECT_EQ(done.await(1), ended(WaitEnd::fired, 0b111));
}

TEST_F(WaitTest, SignaledManualResetEventFiresAPoll) {
    const Handle m = event(XENHSA_EVENT_MANUAL_RESET | XENHSA_EVENT_SIGNALED);
    ASSERT_TRUE(wait({m}, 1, false, 0));
    EXPECT_EQ(done.await(1), ended(WaitEnd::fired, 1));
    ASSERT_TRUE(wait({m}, 2, false, 0));  // manual reset: still signaled
    EXPECT_EQ(done.await(2), ended(WaitEnd::fired, 1));
    ASSERT_TRUE(context->reset_event(m));
    ASSERT_TRUE(wait({m}, 3, false, 0));
    EXPECT_EQ(done.await(3), ended(WaitEnd::timeout, 0));
}

TEST_F(WaitTest, AutoResetEventIsConsumedByTheWaitThatSawIt) {
    const Handle e = event(XENHSA_EVENT_SIGNALED);
    ASSERT_TRUE(wait({e}, 1, false, 0));
    EXPECT_EQ(done.await(1), ended(WaitEnd::fired, 1));
    ASSERT_TRUE(wait({e}, 2, false, 0));
    EXPECT_EQ(done.await(2), ended(WaitEnd::timeout, 0));
}

TEST_F(WaitTest, TimesOut) {
    const Handle e = event();
    ASSERT_TRUE(wait({e}, 1, false, 20));
    EXPECT_EQ(done.await(1), ended(WaitEnd::timeout, 0));
    ASSERT_TRUE(wait({e, event()}, 2, true, 20));
    ASSERT_TRUE(context->set_event(e));  // one of two: still a timeout
    EXPECT_EQ(done.await(2), ended(WaitEnd::timeout, 0));
}

TEST_F(WaitTest, CancelEndsAPendingWaitOnce) {
    const Handle e = event();
    auto w = wait({e}, 1);
    ASSERT_TRUE(w);
    EXPECT_TRUE(context->cancel_wait(w.value()));
    EXPECT_EQ(done.await(1), ended(WaitEnd::cancelled, 0));
    EXPECT_FALSE(context->cancel_wait(w.value()));  // not pending any more
    EXPECT_FALSE(context->cancel_wait(0));
    EXPECT_FALSE(context->cancel_wait(w.value() + 100));

    // A wait that fired can no longer be cancelled, and its `done` says fired.
    auto w2 = wait({e}, 2);
    ASSERT_TRUE(w2);
    ASSERT_TRUE(context->set_event(e));
    EXPECT_EQ(done.await(2), ended(WaitEnd::fired, 1));
    EXPECT_FALSE(context->cancel_wait(w2.value()));
    EXPECT_EQ(done.count(1), 1u);
    EXPECT_EQ(done.count(2), 1u);
}

// A cancelled wait may still be inside the device when the guest, told CANCELLED, sets
// the event: the cancelled wait must not consume that set.
TEST_F(WaitTest, ASetRightAfterACancelIsNotLost) {
    const Handle e = event();  // auto-reset
    const HeldWaits held(device);
    auto w = wait({e}, 1);
    ASSERT_TRUE(w);
    ASSERT_TRUE(device_waiters(2));  // e and the wait's cancel event
    // The backend core answers CANCELLED to the guest as soon as this returns true.
    EXPECT_TRUE(context->cancel_wait(w.value()));
    ASSERT_TRUE(context->set_event(e));
    device.hold_waits(false);  // the cancelled wait now sees e and the cancel together
    EXPECT_EQ(done.await(1), ended(WaitEnd::cancelled, 0));

    auto w2 = wait({e}, 2);
    ASSERT_TRUE(w2);
    EXPECT_EQ(done.await(2), ended(WaitEnd::fired, 1)) << "the set went to the cancelled wait";
}

// A manual-reset event is not consumed by a wait: a cancelled wait that saw it set leaves
// it alone (setting it again could undo a reset the guest made meanwhile).
TEST_F(WaitTest, ACancelledWaitDoesNotSetAManualResetEventAgain) {
    const Handle e = event(XENHSA_EVENT_MANUAL_RESET);
    const HeldWaits held(device);
    auto w = wait({e}, 1);
    ASSERT_TRUE(w);
    ASSERT_TRUE(device_waiters(2));  // e and the wait's cancel event
    EXPECT_TRUE(context->cancel_wait(w.value()));
    ASSERT_TRUE(context->set_event(e));
    device.clear_calls();
    device.hold_waits(false);
    EXPECT_EQ(done.await(1), ended(WaitEnd::cancelled, 0));
    EXPECT_TRUE(device.calls_of(Op::set_event).empty());
}

TEST_F(WaitTest, DestroyingAnEventCancelsItsWaitsOnly) {
    const Handle doomed = event();
    const EventId doomed_id = *device.last_event();
    const Handle kept = event();
    ASSERT_TRUE(wait({doomed, kept}, 1));
    ASSERT_TRUE(wait({doomed}, 2, true));
    ASSERT_TRUE(wait({kept}, 3));
    ASSERT_TRUE(device_waiters(2 + 1 + 1 + 3));

    ASSERT_TRUE(context->destroy_event(doomed));  // no device violation: waits left first
    EXPECT_FALSE(device.has_event(doomed_id));
    EXPECT_EQ(done.await(1), ended(WaitEnd::cancelled, 0));
    EXPECT_EQ(done.await(2), ended(WaitEnd::cancelled, 0));
    EXPECT_EQ(done.count(3), 0u);
    ASSERT_TRUE(context->set_event(kept));
    EXPECT_EQ(done.await(3), ended(WaitEnd::fired, 1));
}

TEST_F(WaitTest, TeardownCancelsEveryWaitAndJoins) {
    const Handle a = event();
    const Handle b = event();
    for (int tag = 0; tag < 5; ++tag) {
        ASSERT_TRUE(wait({a, b}, tag, tag % 2 == 0));
    }
    context->teardown();
    for (int tag = 0; tag < 5; ++tag) {
        // teardown returned: every `done` has already run, exactly once.
        EXPECT_EQ(done.count(tag), 1u) << tag;
        EXPECT_EQ(done.await(tag), ended(WaitEnd::cancelled, 0));
    }
    EXPECT_EQ(device.waiting(), 0u);
    EXPECT_EQ(device.events(), 0u);  // the guest's and the cancel events
}

TEST_F(WaitTest, PendingWaitsHaveAQuota) {
    GpuLimits limits;
    limits.max_waits = 2;
    make_context(limits);
    const Handle e = event();
    auto w1 = wait({e}, 1);
    ASSERT_TRUE(w1);
    ASSERT_TRUE(wait({e}, 2));
    EXPECT_EQ(wait({e}, 3).error(), edquot());
    EXPECT_TRUE(context->cancel_wait(w1.value()));
    ASSERT_TRUE(done.await(1));
    EXPECT_TRUE(wait({e}, 4));
}

// The backend core answers CANCELLED as soon as cancel_wait returns true, and the guest
// may then wait again at once: a cancelled wait must stop counting against the quota
// there, not when its thread gets round to leaving the device (issue 11, item 4).
TEST_F(WaitTest, ACancelledWaitStopsCountingAtOnce) {
    GpuLimits limits;
    limits.max_waits = 2;
    make_context(limits);
    const Handle e = event(XENHSA_EVENT_MANUAL_RESET);
    const HeldWaits held(device);  // the cancelled waits stay inside the device
    auto w1 = wait({e}, 1);
    auto w2 = wait({e}, 2);
    ASSERT_TRUE(w1);
    ASSERT_TRUE(w2);
    ASSERT_TRUE(device_waiters(4));
    EXPECT_TRUE(context->cancel_wait(w1.value()));
    EXPECT_TRUE(context->cancel_wait(w2.value()));
    EXPECT_TRUE(wait({e}, 3));
    EXPECT_TRUE(wait({e}, 4));
    EXPECT_EQ(wait({e}, 5).error(), edquot());
    device.hold_waits(false);
    EXPECT_EQ(done.await(1), ended(WaitEnd::cancelled, 0));
    EXPECT_EQ(done.await(2), ended(WaitEnd::cancelled, 0));
    EXPECT_EQ(done.count(3), 0u);
    ASSERT_TRUE(context->set_event(e));
    EXPECT_EQ(done.await(3), ended(WaitEnd::fired, 1));
    EXPECT_EQ(done.await(4), ended(WaitEnd::fired, 1));
}

// Cycles of a full quota of waits, all cancelled: every cycle gets the whole quota again,
// however far the cancelled waits' threads have got.
TEST_F(WaitTest, CancelCyclesAlwaysGetTheWholeQuota) {
    GpuLimits limits;
    limits.max_waits = 8;
    make_context(limits);
    const Handle e = event();
    int tag = 0;
    for (int cycle = 0; cycle < 50; ++cycle) {
        std::vector<uint64_t> ids;
        for (uint32_t i = 0; i < limits.max_waits; ++i) {
            auto w = wait({e}, ++tag);
            ASSERT_TRUE(w) << "cycle " << cycle << " wait " << i << ": " << w.error().message();
            ids.push_back(w.value());
        }
        EXPECT_EQ(wait({e}, ++tag).error(), edquot());
        for (uint64_t id : ids) {
            ASSERT_TRUE(context->cancel_wait(id));
        }
    }
}

TEST_F(WaitTest, BadWaitsAreRefused) {
    const Handle e = event();
    EXPECT_EQ(wait({}, 1).error(), einval());
    EXPECT_EQ(wait(std::vector<Handle>(XENHSA_WAIT_MAX_EVENTS + 1, e), 1).error(), einval());
    EXPECT_EQ(wait({e, e + 1}, 1).error(), ebadf());
    EXPECT_EQ(context->start_wait(std::vector<Handle>{e}, false, 0, nullptr).error(), einval());
    EXPECT_TRUE(wait(std::vector<Handle>(XENHSA_WAIT_MAX_EVENTS, e), 1, false, 0));
    EXPECT_EQ(done.await(1), ended(WaitEnd::timeout, 0));
}

TEST_F(WaitTest, ADeviceFailureEndsTheWaitAsFailed) {
    const Handle e = event();
    device.fail_next(Op::wait_events, std::errc::io_error);
    ASSERT_TRUE(wait({e}, 1));
    EXPECT_EQ(done.await(1), ended(WaitEnd::failed, 0));
}

TEST_F(WaitTest, ManyWaitsEachEndExactlyOnce) {
    const Handle e = event(XENHSA_EVENT_MANUAL_RESET);
    for (int tag = 0; tag < 40; ++tag) {
        ASSERT_TRUE(wait({e}, tag));
    }
    ASSERT_TRUE(context->set_event(e));
    for (int tag = 0; tag < 40; ++tag) {
        EXPECT_EQ(done.await(tag), ended(WaitEnd::fired, 1));
    }
    context->teardown();
    for (int tag = 0; tag < 40; ++tag) {
        EXPECT_EQ(done.count(tag), 1u);
    }
}

}  // namespace
}  // namespace xenhsa::hsa::test
