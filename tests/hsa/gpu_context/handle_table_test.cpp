// HandleTable: what a guest may learn from the handles it holds (nothing about the others
// or the table's slots), and that no value comes back within a connection (protocol 3.6).
#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <vector>
#include <xenhsa/hsa/handle_cipher.hpp>
#include <xenhsa/hsa/handle_table.hpp>

namespace xenhsa::hsa::test {
namespace {

std::vector<Handle> fill(HandleTable<int>& table, uint32_t n) {
    std::vector<Handle> out;
    for (uint32_t i = 0; i < n; ++i) {
        auto h = table.insert(static_cast<int>(i));
        EXPECT_TRUE(h);
        out.push_back(h.value_or(0));
    }
    return out;
}

// The published Speck64/128 test vector (Beaulieu et al. 2013, appendix C).
TEST(HandleCipher, IsSpeck64With128BitKeys) {
    const HandleCipher cipher({0x1b1a1918u, 0x13121110u, 0x0b0a0908u, 0x03020100u});
    EXPECT_EQ(cipher.encrypt(0x3b7265747475432dull), 0x8c6fa548454e028bull);
    EXPECT_EQ(cipher.decrypt(0x8c6fa548454e028bull), 0x3b7265747475432dull);
    const HandleCipher random = HandleCipher::random();
    for (uint64_t v : {uint64_t{0}, uint64_t{1}, ~uint64_t{0}, uint64_t{0x0100000000000007}}) {
        EXPECT_EQ(random.decrypt(random.encrypt(v)), v);
    }
}

TEST(HandleTable, FindsWhatItIssuedAndNothingElse) {
    HandleTable<int> table(3, 16);
    const auto handles = fill(table, 16);
    EXPECT_FALSE(table.insert(99));  // full
    for (uint32_t i = 0; i < handles.size(); ++i) {
        ASSERT_NE(table.find(handles[i]), nullptr);
        EXPECT_EQ(*table.find(handles[i]), static_cast<int>(i));
        EXPECT_EQ(table.find(handles[i] ^ 1), nullptr);
        EXPECT_EQ(table.find(handles[i] + (uint64_t{1} << 32)), nullptr);
    }
    EXPECT_EQ(table.find(0), nullptr);
    HandleTable<int> other_kind(4, 16);
    (void)fill(other_kind, 16);
    for (Handle h : handles) {
        EXPECT_EQ(other_kind.find(h), nullptr);
    }
    EXPECT_EQ(table.erase(handles[5]), 5);
    EXPECT_EQ(table.find(handles[5]), nullptr);  // stale
    EXPECT_FALSE(table.erase(handles[5]));
}

// A handle is a keyed permutation of (kind, generation, slot): two handles of one table
// share no structure a guest could use to compute a third, or the slots behind them. With
// the index XORed with a fixed key, handles of neighbouring slots differed in their low
// bits only.
TEST(HandleTable, HandlesRevealNeitherEachOtherNorTheirSlots) {
    HandleTable<int> table(1, 64);
    const auto handles = fill(table, 64);
    for (std::size_t i = 0; i < handles.size(); ++i) {
        for (std::size_t j = i + 1; j < handles.size(); ++j) {
            const uint64_t diff = handles[i] ^ handles[j];
            ASSERT_NE(diff >> 32, 0u) << i << " " << j << ": the high half is shared";
            ASSERT_NE(diff & 0xFFFFFFFFu, 0u) << i << " " << j << ": the low half is shared";
            ASSERT_NE(diff, uint64_t{i ^ j}) << i << " " << j << ": the slots show through";
        }
    }
    // The same slots of another table (another context) give other values.
    HandleTable<int> again(1, 64);
    const auto others = fill(again, 64);
    for (std::size_t i = 0; i < handles.size(); ++i) {
        EXPECT_NE(handles[i], others[i]);
    }
}

// The one slot, used over and over: once its generations are used up (2^24 - 1 by
// default, 16 here) the slot is retired instead of wrapping back to a value it issued
// before; a fresh slot takes over.
TEST(HandleTable, NeverIssuesAValueTwice) {
    HandleTable<int> table(2, 1, 16);
    std::set<Handle> issued;
    for (int i = 0; i < 100; ++i) {
        const auto h = table.insert(i);
        ASSERT_TRUE(h);
        ASSERT_NE(*h, 0u);
        ASSERT_TRUE(issued.insert(*h).second) << "reissued after " << i << " uses";
        ASSERT_EQ(table.find(*h), &*table.find(*h));
        ASSERT_TRUE(table.erase(*h));
    }
    EXPECT_EQ(table.size(), 0u);
}

}  // namespace
}  // namespace xenhsa::hsa::test
