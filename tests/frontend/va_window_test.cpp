// The guest's VA window: PROT_NONE reservations and the allocator that places buffers.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <xenhsa/proto/common.h>

#include <cerrno>
#include <vector>
#include <xenhsa/frontend/va_window.hpp>

namespace {

using xenhsa::frontend::VaAllocator;
using xenhsa::frontend::VaReservation;

constexpr uint64_t kPage = 4096;
constexpr uint64_t kBase = 0x100000000000ull;

TEST(VaAllocator, HandsOutPageAlignedDisjointRanges) {
    VaAllocator va(kBase, 64 * kPage);
    auto a = va.allocate(1);
    auto b = va.allocate(3 * kPage);
    ASSERT_TRUE(a && b);
    EXPECT_EQ(a.value(), kBase);
    EXPECT_EQ(b.value(), kBase + kPage);  // 1 byte took a whole page
    EXPECT_EQ(va.free_bytes(), 60 * kPage);
}

TEST(VaAllocator, HonoursAlignment) {
    VaAllocator va(kBase + kPage, 256 * kPage);
    auto a = va.allocate(kPage, 64 * kPage);
    ASSERT_TRUE(a);
    EXPECT_EQ(a.value() % (64 * kPage), 0u);
    EXPECT_FALSE(va.allocate(kPage, 3 * kPage));  // not a power of two
    EXPECT_FALSE(va.allocate(kPage, 16));         // below a page
}

TEST(VaAllocator, ExhaustionIsEnomemAndReleaseMakesRoomAgain) {
    VaAllocator va(kBase, 4 * kPage);
    std::vector<uint64_t> got;
    for (int i = 0; i < 4; ++i) {
        auto a = va.allocate(kPage);
        ASSERT_TRUE(a);
        got.push_back(a.value());
    }
    auto none = va.allocate(kPage);
    ASSERT_FALSE(none);
    EXPECT_EQ(none.error(), std::errc::not_enough_memory);
    ASSERT_TRUE(va.release(got[1], kPage));
    ASSERT_TRUE(va.release(got[2], kPage));
    auto two = va.allocate(2 * kPage);  // the two freed pages merged
    ASSERT_TRUE(two);
    EXPECT_EQ(two.value(), got[1]);
}

TEST(VaAllocator, ReleaseMergesNeighboursBackIntoOneRange) {
    VaAllocator va(kBase, 16 * kPage);
    auto a = va.allocate(4 * kPage);
    auto b = va.allocate(4 * kPage);
    auto c = va.allocate(4 * kPage);
    ASSERT_TRUE(a && b && c);
    ASSERT_TRUE(va.release(a.value(), 4 * kPage));
    ASSERT_TRUE(va.release(c.value(), 4 * kPage));
    EXPECT_EQ(va.free_ranges(), 2u);
    ASSERT_TRUE(va.release(b.value(), 4 * kPage));
    EXPECT_EQ(va.free_ranges(), 1u);
    EXPECT_EQ(va.free_bytes(), 16 * kPage);
}

TEST(VaAllocator, DoubleFreeAndForeignRangesAreRejected) {
    VaAllocator va(kBase, 16 * kPage);
    auto a = va.allocate(2 * kPage);
    ASSERT_TRUE(a);
    ASSERT_TRUE(va.release(a.value(), 2 * kPage));
    EXPECT_EQ(va.release(a.value(), 2 * kPage).error(), std::errc::invalid_argument);
    EXPECT_EQ(va.release(kBase - kPage, kPage).error(), std::errc::invalid_argument);
    EXPECT_EQ(va.release(kBase + 16 * kPage, kPage).error(), std::errc::invalid_argument);
    EXPECT_EQ(va.release(kBase + 1, kPage).error(), std::errc::invalid_argument);
    EXPECT_EQ(va.free_bytes(), 16 * kPage);
}

TEST(VaAllocator, PartlyFreeRangeCannotBeReleased) {
    VaAllocator va(kBase, 8 * kPage);
    auto a = va.allocate(2 * kPage);
    ASSERT_TRUE(a);
    // [a, a + 3 pages) overlaps the free page after the allocation.
    EXPECT_FALSE(va.release(a.value(), 3 * kPage));
    EXPECT_EQ(va.free_bytes(), 6 * kPage);
}

TEST(VaAllocator, ClaimTakesExactlyTheBackendsChoice) {
    VaAllocator va(kBase, 16 * kPage);
    ASSERT_TRUE(va.claim(kBase + 4 * kPage, 2 * kPage));
    EXPECT_EQ(va.claim(kBase + 5 * kPage, kPage).error(), std::errc::address_in_use);
    EXPECT_EQ(va.claim(kBase + 15 * kPage, 2 * kPage).error(), std::errc::invalid_argument);
    EXPECT_EQ(va.claim(kBase - kPage, kPage).error(), std::errc::invalid_argument);
    auto a = va.allocate(5 * kPage);  // [4, 6) is taken: the first fit is after it
    ASSERT_TRUE(a);
    EXPECT_EQ(a.value(), kBase + 6 * kPage);
    ASSERT_TRUE(va.release(kBase + 4 * kPage, 2 * kPage));
}

TEST(VaReservation, ReservesAnywhereWithNoAccess) {
    auto r = VaReservation::reserve(1ull << 30);
    ASSERT_TRUE(r);
    EXPECT_NE(r.value().base(), 0u);
    EXPECT_EQ(r.value().base() % kPage, 0u);
    EXPECT_TRUE(r.value().contains(r.value().base(), 1ull << 30));
    EXPECT_FALSE(r.value().contains(r.value().base(), (1ull << 30) + kPage));
    // PROT_NONE: mprotect-able, but there is no access (probe_test checks the fault).
    unsigned char vec = 0;
    EXPECT_EQ(mincore(reinterpret_cast<void*>(r.value().base()), kPage, &vec), 0);
}

TEST(VaReservation, FixedReservationNeverReplacesAMapping) {
    auto first = VaReservation::reserve(64 * kPage);
    ASSERT_TRUE(first);
    auto clash = VaReservation::reserve_at(first.value().base() + 8 * kPage, 4 * kPage);
    ASSERT_FALSE(clash);
    EXPECT_EQ(clash.error(), std::errc::file_exists);
    const uint64_t base = first.value().base();
    first.value().reset();
    auto again = VaReservation::reserve_at(base, 64 * kPage);
    ASSERT_TRUE(again);
    EXPECT_EQ(again.value().base(), base);
}

TEST(VaReservation, RejectsUnalignedAndOutOfRange) {
    EXPECT_EQ(VaReservation::reserve_at(kBase + 1, kPage).error(), std::errc::invalid_argument);
    EXPECT_EQ(VaReservation::reserve_at(XENHSA_VA_LIMIT - kPage, 2 * kPage).error(),
              std::errc::invalid_argument);
    EXPECT_EQ(VaReservation::reserve(0).error(), std::errc::invalid_argument);
}

TEST(VaReservation, MoveTransfersOwnership) {
    auto r = VaReservation::reserve(4 * kPage);
    ASSERT_TRUE(r);
    VaReservation moved = std::move(r.value());
    EXPECT_FALSE(r.value());
    EXPECT_TRUE(moved);
    const uint64_t base = moved.base();
    moved = VaReservation{};
    // Released: the same range can be reserved again.
    EXPECT_TRUE(VaReservation::reserve_at(base, 4 * kPage));
}

}  // namespace
