// Xen v1 grant-entry semantics of the simulated hypervisor's grant table.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <thread>
#include <xenhsa/xen/sim/grant_table.hpp>

namespace {

using xenhsa::xen::GrantRef;
using xenhsa::xen::sim::GrantTable;

constexpr xenhsa::xen::DomId kGuest = 5;
constexpr xenhsa::xen::DomId kBackend = 0;
constexpr xenhsa::xen::DomId kOther = 7;

class GrantTableTest : public ::testing::Test {
protected:
    std::array<grant_entry_v1_t, 16> shared_{};
    GrantTable table_{kGuest, shared_, /*ram_pages=*/64};

    void grant(GrantRef ref, uint32_t frame, bool readonly = false,
               xenhsa::xen::DomId to = kBackend) {
        GrantTable::grant(shared_[ref], to, frame, readonly);
    }
};

TEST_F(GrantTableTest, PinReturnsTheGrantedFrameAndMarksTheEntry) {
    grant(3, 42);
    auto frame = table_.pin(3, kBackend, true);
    ASSERT_TRUE(frame);
    EXPECT_EQ(frame.value(), 42u);
    EXPECT_NE(shared_[3].flags & GTF_reading, 0);
    EXPECT_NE(shared_[3].flags & GTF_writing, 0);
    EXPECT_EQ(table_.pins(3), 1u);
}

TEST_F(GrantTableTest, ReadOnlyGrantCannotBePinnedForWriting) {
    grant(1, 9, /*readonly=*/true);
    EXPECT_EQ(table_.pin(1, kBackend, true).error().value(), EPERM);
    auto ro = table_.pin(1, kBackend, false);
    ASSERT_TRUE(ro);
    EXPECT_EQ(shared_[1].flags & GTF_writing, 0) << "a read pin never sets GTF_writing";
}

TEST_F(GrantTableTest, BadOutOfRangeAndForeignRefsFail) {
    EXPECT_EQ(table_.pin(2, kBackend, false).error().value(), EPERM) << "never granted";
    EXPECT_EQ(table_.pin(16, kBackend, false).error().value(), EINVAL) << "out of range";
    EXPECT_EQ(table_.pin(0xFFFFFFFFu, kBackend, false).error().value(), EINVAL);
    grant(4, 1, false, kOther);
    EXPECT_EQ(table_.pin(4, kBackend, false).error().value(), EPERM) << "granted to another domain";
}

TEST_F(GrantTableTest, FrameOutsideTheGuestsRamFaultsAndLeavesNoPin) {
    grant(5, 64);
    EXPECT_EQ(table_.pin(5, kBackend, false).error().value(), EFAULT);
    EXPECT_EQ(table_.pins(5), 0u);
    EXPECT_EQ(shared_[5].flags & (GTF_reading | GTF_writing), 0);
}

TEST_F(GrantTableTest, EndAccessFailsWhileMappedAndSucceedsAfterUnmap) {
    grant(6, 10);
    ASSERT_TRUE(table_.pin(6, kBackend, true));
    EXPECT_EQ(GrantTable::end_access(shared_[6]).error().value(), EBUSY);
    table_.unpin(6, true);
    EXPECT_TRUE(GrantTable::end_access(shared_[6]));
    EXPECT_EQ(shared_[6].flags, 0);
    EXPECT_EQ(table_.pin(6, kBackend, false).error().value(), EPERM) << "access was ended";
}

TEST_F(GrantTableTest, LastWriterClearsWritingLastReaderClearsReading) {
    grant(7, 11);
    ASSERT_TRUE(table_.pin(7, kBackend, true));
    ASSERT_TRUE(table_.pin(7, kBackend, false));
    table_.unpin(7, true);
    EXPECT_EQ(shared_[7].flags & GTF_writing, 0);
    EXPECT_NE(shared_[7].flags & GTF_reading, 0);
    table_.unpin(7, false);
    EXPECT_EQ(shared_[7].flags & GTF_reading, 0);
}

TEST_F(GrantTableTest, GuestRewritingTheFrameAfterThePinChangesNothing) {
    grant(8, 12);
    auto frame = table_.pin(8, kBackend, false);
    ASSERT_TRUE(frame);
    shared_[8].frame = 63;  // hostile rewrite
    shared_[8].domid = kOther;
    EXPECT_EQ(frame.value(), 12u);
    EXPECT_EQ(GrantTable::end_access(shared_[8]).error().value(), EBUSY);
}

TEST_F(GrantTableTest, BatchWithOneBadElementLeavesNothingPinned) {
    grant(0, 1);
    grant(1, 2);
    grant(3, 3, /*readonly=*/true);
    const std::array<GrantRef, 4> refs{0, 1, 3, 2};
    std::array<uint64_t, 4> frames{};
    std::array<int, 4> status{};
    auto r = table_.pin_batch(refs, kBackend, true, frames, status);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().value(), EPERM);
    EXPECT_EQ(status[0], 0);
    EXPECT_EQ(status[1], 0);
    EXPECT_EQ(status[2], EPERM);
    EXPECT_EQ(status[3], ECANCELED);
    for (GrantRef ref : refs) {
        EXPECT_EQ(table_.pins(ref), 0u) << ref;
        EXPECT_EQ(shared_[ref].flags & (GTF_reading | GTF_writing), 0) << ref;
    }
}

TEST_F(GrantTableTest, UnpinningWhatIsNotPinnedIsABug) {
    grant(9, 1);
    EXPECT_DEATH(table_.unpin(9, false), "not pinned");
}

// The guest ends and re-grants its entry as fast as it can while the hypervisor pins it:
// a pin either fails or holds the entry so that end_access cannot succeed until the unpin.
TEST_F(GrantTableTest, PinAndEndAccessNeverBothWinUnderRacingRewrites) {
    std::atomic<bool> stop{false};
    std::atomic<bool> pinned{false};
    std::atomic<int> violations{0};
    std::atomic<int> ends{0};
    GrantTable::grant(shared_[10], kBackend, 5, false);
    std::thread guest([&] {
        while (!stop.load()) {
            if (GrantTable::end_access(shared_[10])) {
                violations.fetch_add(pinned.load() ? 1 : 0);
                ends.fetch_add(1);
                GrantTable::grant(shared_[10], kBackend, 5, false);
            }
        }
    });
    // Run until both sides have won many times (bounded, not a timing assertion).
    int pins = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while ((pins < 2000 || ends.load() < 2000) && std::chrono::steady_clock::now() < deadline) {
        if (table_.pin(10, kBackend, true)) {
            pinned.store(true);
            ++pins;
            violations.fetch_add(
                (__atomic_load_n(&shared_[10].flags, __ATOMIC_ACQUIRE) & GTF_reading) == 0);
            pinned.store(false);
            table_.unpin(10, true);
        }
    }
    stop.store(true);
    guest.join();
    EXPECT_EQ(violations.load(), 0);
    EXPECT_GT(pins, 0);
    EXPECT_GT(ends.load(), 0);
}

// A guest that clears GTF_reading under a live pin only fools itself: the hypervisor's
// pin count is private, so the unpin still balances and nothing aborts.
TEST_F(GrantTableTest, GuestClearingItsOwnFlagsCannotUnbalanceThePins) {
    grant(11, 6);
    ASSERT_TRUE(table_.pin(11, kBackend, true));
    shared_[11].flags = GTF_permit_access;
    EXPECT_TRUE(GrantTable::end_access(shared_[11]));
    EXPECT_EQ(table_.pins(11), 1u);
    table_.unpin(11, true);
    EXPECT_EQ(table_.pins(11), 0u);
}

}  // namespace
