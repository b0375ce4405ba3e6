#include <gtest/gtest.h>
#include <sys/mman.h>
#include <xenhsa/proto.h>

#include <cstring>
#include <vector>
#include <xenhsa/backend/core/va_window.hpp>
#include <xenhsa/backend/core/window_negotiation.hpp>

#include "fake_grants.hpp"

namespace xenhsa::backend::core {
namespace {

using testing::protection_at;

constexpr uint64_t kGiB = 1ull << 30;

TEST(VaReservation, ReservesFreeRangeAsProtNone) {
    auto probe = VaReservation::anywhere(kGiB, WindowNegotiation::kDefaultProposalBase);
    ASSERT_TRUE(probe);
    const uint64_t base = probe.value().base();
    EXPECT_TRUE(xenhsa_va_range_ok(base, kGiB));
    EXPECT_EQ(protection_at(reinterpret_cast<void*>(base)), "---p");
    probe.value().reset();
    EXPECT_EQ(protection_at(reinterpret_cast<void*>(base)), "");

    auto exact = VaReservation::at(base, kGiB);
    ASSERT_TRUE(exact);
    EXPECT_EQ(exact.value().base(), base);
    EXPECT_EQ(protection_at(reinterpret_cast<void*>(base + kGiB - 4096)), "---p");
}

TEST(VaReservation, NeverReplacesExistingMemory) {
    std::vector<char> mine(1 << 20, 'x');  // the worker's own heap
    const auto addr = reinterpret_cast<uint64_t>(mine.data());
    const uint64_t base = addr & ~(kGiB - 1);
    auto r = VaReservation::at(base, kGiB);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error(), std::errc::file_exists);
    EXPECT_EQ(mine[12345], 'x');  // untouched and still accessible
    mine[12345] = 'y';
    EXPECT_EQ(mine[12345], 'y');
}

TEST(VaReservation, RejectsBadRanges) {
    EXPECT_FALSE(VaReservation::at(0x1000, 0));
    EXPECT_FALSE(VaReservation::at(0x1001, kGiB));
    EXPECT_FALSE(VaReservation::at(XENHSA_VA_LIMIT - 4096, 8192));
}

TEST(VaReservation, NeverBelowTheFloor) {
    auto low = VaReservation::at(0x40000000ull - 0x10000000ull, 0x10000000ull);
    ASSERT_FALSE(low);
    EXPECT_EQ(low.error(), std::errc::invalid_argument);
    EXPECT_EQ(protection_at(reinterpret_cast<void*>(0x30000000ull)), "");
    auto anywhere = VaReservation::anywhere(kGiB, 0x1000);
    ASSERT_TRUE(anywhere);
    EXPECT_GE(anywhere.value().base(), 1ull << 30);
}

TEST(VaReservation, RereserveDropsWhatWasMappedInside) {
    auto r = VaReservation::anywhere(kGiB, WindowNegotiation::kDefaultProposalBase);
    ASSERT_TRUE(r);
    const uint64_t va = r.value().base() + 16 * 4096;
    void* p = ::mmap(reinterpret_cast<void*>(va), 4096, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    ASSERT_NE(p, MAP_FAILED);
    std::memset(p, 1, 4096);
    EXPECT_EQ(protection_at(p), "rw-p");
    r.value().rereserve(va, 4096);
    EXPECT_EQ(protection_at(p), "---p");
}

TEST(RangeMap, OverlapAndFreeRanges) {
    RangeMap m;
    ASSERT_TRUE(m.claim(0x10000, 0x2000, RangeKind::map));
    ASSERT_TRUE(m.claim(0x20000, 0x1000, RangeKind::lend));
    EXPECT_FALSE(m.claim(0x11000, 0x1000, RangeKind::alloc));        // overlaps the first
    EXPECT_EQ(m.overlap(0x12000, 0x1000), RangeMap::Overlap::none);  // adjacent
    EXPECT_EQ(m.overlap(0xF000, 0x2000), RangeMap::Overlap::object);
    m.set_kind(0x20000, RangeKind::lend_revoked);
    EXPECT_EQ(m.overlap(0x1F000, 0x3000), RangeMap::Overlap::revoked_lend);
    EXPECT_EQ(m.find_free(0x10000, 0x30000, 0x1000), 0x12000u);
    EXPECT_EQ(m.find_free(0x10000, 0x30000, 0xE000), 0x12000u);
    EXPECT_EQ(m.find_free(0x10000, 0x30000, 0xF000), 0x21000u);
    EXPECT_FALSE(m.find_free(0x10000, 0x22000, 0xF000));
    m.release(0x10000);
    EXPECT_EQ(m.find_free(0x10000, 0x30000, 0x1000), 0x10000u);
    ASSERT_NE(m.containing(0x20800), nullptr);
    EXPECT_EQ(m.containing(0x20800)->va, 0x20000u);
    EXPECT_EQ(m.containing(0x21000), nullptr);
}

TEST(VaWindow, PlacementStatus) {
    auto r = VaReservation::anywhere(kGiB, WindowNegotiation::kDefaultProposalBase);
    ASSERT_TRUE(r);
    VaWindow w(std::move(r).value());
    const uint64_t b = w.base();
    EXPECT_EQ(w.placement_status(b, 4096), XENHSA_STATUS_OK);
    EXPECT_EQ(w.placement_status(b - 4096, 8192), XENHSA_STATUS_BAD_ADDRESS);  // half outside
    EXPECT_EQ(w.placement_status(b + kGiB, 4096), XENHSA_STATUS_BAD_ADDRESS);
    ASSERT_TRUE(w.claim(b, 8192, RangeKind::lend));
    EXPECT_EQ(w.placement_status(b + 4096, 4096), XENHSA_STATUS_BAD_ADDRESS);
    w.set_kind(b, RangeKind::lend_revoked);
    EXPECT_EQ(w.placement_status(b + 4096, 4096), XENHSA_STATUS_REVOKED);
    w.release(b, 8192);
    EXPECT_EQ(w.placement_status(b, 4096), XENHSA_STATUS_OK);
    EXPECT_EQ(w.find_free(2 * kGiB), std::nullopt);
    EXPECT_EQ(w.find_free(4096), b);
}

TEST(WindowNegotiation, ProposalsAreFreshAndHeldOneAtATime) {
    WindowNegotiation n;
    auto first = n.propose(kGiB);
    ASSERT_TRUE(first);
    const uint64_t a = first.value()->base();
    auto second = n.propose(kGiB);
    ASSERT_TRUE(second);
    const uint64_t b = second.value()->base();
    EXPECT_NE(a, b);
    EXPECT_EQ(protection_at(reinterpret_cast<void*>(a)), "");  // the old one was released
    EXPECT_EQ(protection_at(reinterpret_cast<void*>(b)), "---p");

    auto taken = n.take(b, kGiB);  // the held proposal itself
    ASSERT_TRUE(taken);
    EXPECT_EQ(taken.value().base(), b);
    EXPECT_FALSE(n.proposal());
}

TEST(WindowNegotiation, TakeOverlappingTheProposalReleasesIt) {
    WindowNegotiation n;
    auto p = n.propose(2 * kGiB);
    ASSERT_TRUE(p);
    const uint64_t base = p.value()->base() + kGiB;  // overlaps the proposal's upper half
    auto taken = n.take(base, kGiB);
    ASSERT_TRUE(taken);
    EXPECT_EQ(taken.value().base(), base);
    EXPECT_FALSE(n.proposal());
}

}  // namespace
}  // namespace xenhsa::backend::core
