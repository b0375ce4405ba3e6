// Page lists: inline grant refs up to 52, indirect pages of 1024 refs beyond.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <vector>
#include <xenhsa/frontend/errors.hpp>
#include <xenhsa/frontend/grant_list.hpp>

namespace {

using namespace xenhsa::frontend;

std::vector<GrantRef> refs_from(GrantRef first, std::size_t n) {
    std::vector<GrantRef> refs(n);
    std::iota(refs.begin(), refs.end(), first);
    return refs;
}

TEST(GrantList, IndirectPageCounts) {
    EXPECT_FALSE(needs_indirect(52));
    EXPECT_TRUE(needs_indirect(53));
    EXPECT_EQ(indirect_pages_for(1), 1u);
    EXPECT_EQ(indirect_pages_for(1024), 1u);
    EXPECT_EQ(indirect_pages_for(1025), 2u);
    EXPECT_EQ(indirect_pages_for(XENHSA_MAP_MAX_PAGES), 52u);
}

TEST(GrantList, PackWritesRefsInOrderAndZeroesTheTail) {
    const auto refs = refs_from(100, 1500);
    std::vector<std::byte> pages(2 * XENHSA_PAGE_SIZE, std::byte{0xAB});
    ASSERT_TRUE(pack_indirect(refs, pages));
    std::vector<GrantRef> seen(2048);
    std::memcpy(seen.data(), pages.data(), pages.size());
    for (std::size_t i = 0; i < 1500; ++i) {
        ASSERT_EQ(seen[i], 100 + i);
    }
    for (std::size_t i = 1500; i < 2048; ++i) {
        ASSERT_EQ(seen[i], 0u) << "tail entry " << i;
    }
}

TEST(GrantList, PackRefusesWrongPageCount) {
    const auto refs = refs_from(1, 1025);
    std::vector<std::byte> one(XENHSA_PAGE_SIZE);
    EXPECT_EQ(pack_indirect(refs, one).error(), std::errc::invalid_argument);
    std::vector<std::byte> three(3 * XENHSA_PAGE_SIZE);
    EXPECT_EQ(pack_indirect(refs, three).error(), std::errc::invalid_argument);
    EXPECT_EQ(pack_indirect({}, one).error(), std::errc::invalid_argument);
}

TEST(GrantList, DirectMapRequestPassesTheSharedChecks) {
    const auto refs = refs_from(7, 52);
    auto req = make_map_req(0x100000000000ull, refs, true, {});
    ASSERT_TRUE(req);
    EXPECT_EQ(req.value().npages, 52u);
    EXPECT_EQ(req.value().nrefs, 52u);
    EXPECT_EQ(req.value().flags, XENHSA_MAP_RW);
    EXPECT_EQ(req.value().gref[51], 58u);
    EXPECT_EQ(xenhsa_check_map_req(&req.value()), uint32_t{XENHSA_STATUS_OK});
}

TEST(GrantList, IndirectMapRequestNamesTheIndirectPages) {
    const auto refs = refs_from(1000, 3000);
    const auto indirect = refs_from(9, 3);
    auto req = make_map_req(0x100000000000ull, refs, false, indirect);
    ASSERT_TRUE(req);
    EXPECT_EQ(req.value().flags, XENHSA_MAP_INDIRECT);
    EXPECT_EQ(req.value().npages, 3000u);
    EXPECT_EQ(req.value().nrefs, 3u);
    EXPECT_EQ(req.value().gref[0], 9u);
    EXPECT_EQ(req.value().gref[2], 11u);
    EXPECT_EQ(req.value().gref[3], 0u);
    EXPECT_EQ(xenhsa_check_map_req(&req.value()), uint32_t{XENHSA_STATUS_OK});
}

TEST(GrantList, MapRequestRefusesWrongIndirectCounts) {
    const auto refs = refs_from(1, 2000);
    EXPECT_FALSE(make_map_req(0x100000000000ull, refs, true, refs_from(1, 1)));
    EXPECT_FALSE(make_map_req(0x100000000000ull, refs, true, refs_from(1, 3)));
    EXPECT_FALSE(make_map_req(0x100000000000ull, {}, true, {}));
    EXPECT_FALSE(make_map_req(0x100000000000ull, refs_from(1, XENHSA_MAP_MAX_PAGES + 1), true,
                              refs_from(1, 53)));
}

TEST(GrantList, UnpackRoundTripsAPackedList) {
    const auto refs = refs_from(77, 2049);
    std::vector<std::byte> pages(3 * XENHSA_PAGE_SIZE);
    ASSERT_TRUE(pack_indirect(refs, pages));
    auto back = unpack_indirect(pages, 2049);
    ASSERT_TRUE(back);
    EXPECT_EQ(back.value(), refs);
}

TEST(GrantList, UnpackRejectsAHostileTailOrSize) {
    const auto refs = refs_from(77, 100);
    std::vector<std::byte> pages(XENHSA_PAGE_SIZE);
    ASSERT_TRUE(pack_indirect(refs, pages));
    pages[XENHSA_PAGE_SIZE - 1] = std::byte{1};  // garbage past npages
    EXPECT_EQ(unpack_indirect(pages, 100).error(), Errc::backend_broken);
    pages[XENHSA_PAGE_SIZE - 1] = std::byte{0};
    EXPECT_EQ(unpack_indirect(pages, 1025).error(), Errc::backend_broken);  // needs 2 pages
    EXPECT_EQ(unpack_indirect(pages, 0).error(), Errc::backend_broken);
    EXPECT_TRUE(unpack_indirect(pages, 100));
}

TEST(GrantList, InlineRefsOfALendResponse) {
    xenhsa_lend_rsp rsp{};
    rsp.npages = 3;
    rsp.nrefs = 3;
    rsp.gref[0] = 5;
    rsp.gref[1] = 6;
    rsp.gref[2] = 7;
    EXPECT_EQ(inline_refs(rsp), (std::vector<GrantRef>{5, 6, 7}));
    rsp.nrefs = 500;  // never read past the array, whatever nrefs says
    EXPECT_EQ(inline_refs(rsp).size(), std::size_t{XENHSA_MAP_INLINE_GREFS});
}

}  // namespace
