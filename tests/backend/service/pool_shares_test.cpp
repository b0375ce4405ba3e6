// The backend's pools and each guest device's share of them (pool_shares.hpp).
#include <gtest/gtest.h>

#include <xenhsa/backend/service/pool_shares.hpp>

namespace {

using namespace xenhsa::backend::service;

PoolSizes pools(uint64_t lend, uint64_t map) { return {lend, map, 1024, 128}; }

TEST(PoolShares, TheSharesOfEveryGuestFitInThePools) {
    for (const uint32_t guests : {1u, 2u, 3u, 7u, 16u, 100u}) {
        for (const uint64_t lend : {100u, 1024u, 131064u}) {
            const PoolSizes sizes = pools(lend, 4194303);
            ASSERT_EQ(PoolShares::check(sizes, guests), std::nullopt) << guests << " " << lend;
            const PoolShares shares(sizes, guests);
            EXPECT_LE(shares.lend_share() * guests, lend) << guests;
            EXPECT_LE(shares.map_share() * guests, 4194303u) << guests;
            EXPECT_GT(shares.lend_share(), 0u);
            const QuotaCeilings c = shares.ceilings(0);
            ASSERT_TRUE(c.max_lend_pages && c.max_map_pages);
            EXPECT_EQ(*c.max_lend_pages, shares.lend_share());
            EXPECT_EQ(*c.max_map_pages, shares.map_share());
        }
    }
    EXPECT_EQ(PoolShares(pools(64, 64), 2).lend_share(), 32u);
}

TEST(PoolShares, HeldPagesLowerOnlyThatGuestsLendBound) {
    const PoolShares shares(pools(64, 1000), 2);
    EXPECT_EQ(shares.ceilings(0).max_lend_pages, 32u);
    EXPECT_EQ(shares.ceilings(10).max_lend_pages, 22u);
    EXPECT_EQ(shares.ceilings(10).max_map_pages, 500u) << "maps do not depend on lent pages";
    EXPECT_EQ(shares.ceilings(32).max_lend_pages, 0u);
    EXPECT_EQ(shares.ceilings(1000).max_lend_pages, 0u) << "never below zero";
    EXPECT_EQ(shares.ceilings(0).max_lend_pages, 32u) << "another guest holding nothing";
}

TEST(PoolShares, ADeviceBeyondMaxGuestsIsRefused) {
    PoolShares shares(pools(64, 64), 2);
    const DeviceId a{1, 0}, b{2, 0}, c{3, 0}, a1{1, 1};
    EXPECT_TRUE(shares.admit(a));
    EXPECT_TRUE(shares.admit(a)) << "a device keeps its slot";
    EXPECT_TRUE(shares.admit(b));
    EXPECT_EQ(shares.guests(), 2u);
    EXPECT_FALSE(shares.admit(c));
    EXPECT_FALSE(shares.admit(a1)) << "each device is a guest of its own";
    EXPECT_FALSE(shares.admitted(c));
    EXPECT_TRUE(shares.admitted(a));
    shares.leave(a);
    EXPECT_TRUE(shares.admit(c)) << "a slot that frees goes to the next device";
    EXPECT_FALSE(shares.admit(a));
    shares.leave(DeviceId{9, 9});  // not admitted: nothing changes
    EXPECT_EQ(shares.guests(), 2u);
}

TEST(PoolShares, PoolsTooSmallForMaxGuestsAreRefusedAtStart) {
    EXPECT_EQ(PoolShares::check(pools(64, 64), 64), std::nullopt);
    EXPECT_NE(PoolShares::check(pools(64, 64), 0), std::nullopt);
    EXPECT_NE(PoolShares::check(pools(63, 64), 64), std::nullopt) << "less than a page each";
    EXPECT_NE(PoolShares::check(pools(64, 63), 64), std::nullopt);
    // One port per guest.
    EXPECT_EQ(PoolShares::check({64, 64, 64, 1000}, 64), std::nullopt);
    const auto ports = PoolShares::check({64, 64, 63, 1000}, 64);
    ASSERT_NE(ports, std::nullopt);
    EXPECT_NE(ports->find("event channel"), std::string::npos) << *ports;
    // The supervisor's two watches plus one per guest.
    EXPECT_EQ(PoolShares::check({64, 64, 64, 66}, 64), std::nullopt);
    const auto watches = PoolShares::check({64, 64, 64, 65}, 64);
    ASSERT_NE(watches, std::nullopt);
    EXPECT_NE(watches->find("xenstore watch"), std::string::npos) << *watches;
}

}  // namespace
