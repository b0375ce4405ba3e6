// What hsaKmtRegisterMemory moves (private memory only) and how its bytes come back.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstring>
#include <private_pages.hpp>
#include <vector>

namespace {

using namespace xenhsa::frontend::hsakmt;

constexpr uint64_t kPage = 4096;

struct Mapping {
    Mapping(std::size_t pages, int prot, int flags)
        : len(pages * kPage), p(::mmap(nullptr, len, prot, flags | MAP_ANONYMOUS, -1, 0)) {}
    ~Mapping() {
        if (p != MAP_FAILED) {
            ::munmap(p, len);
        }
    }
    [[nodiscard]] uint64_t at(std::size_t page) const {
        return reinterpret_cast<uintptr_t>(p) + page * kPage;
    }
    std::size_t len;
    void* p;
};

TEST(PrivatePages, PrivateMemoryMovesWithItsProtection) {
    Mapping rw(4, PROT_READ | PROT_WRITE, MAP_PRIVATE);
    ASSERT_NE(rw.p, MAP_FAILED);
    std::string why;
    auto range = private_range(rw.at(1), rw.at(3), why);
    ASSERT_TRUE(range) << why;
    EXPECT_EQ(range.value().prot, PROT_READ | PROT_WRITE);

    ASSERT_EQ(::mprotect(rw.p, rw.len, PROT_READ), 0);
    range = private_range(rw.at(0), rw.at(4), why);
    ASSERT_TRUE(range) << why;
    EXPECT_EQ(range.value().prot, PROT_READ);

    std::vector<int> heap(10000, 7);  // malloc's memory
    const uint64_t first = reinterpret_cast<uintptr_t>(heap.data()) & ~(kPage - 1);
    EXPECT_TRUE(private_range(first, first + kPage, why)) << why;
}

TEST(PrivatePages, SharedUnreadableMixedOrUnmappedMemoryStays) {
    std::string why;
    Mapping shared(2, PROT_READ | PROT_WRITE, MAP_SHARED);
    ASSERT_NE(shared.p, MAP_FAILED);
    auto range = private_range(shared.at(0), shared.at(2), why);
    ASSERT_FALSE(range);
    EXPECT_EQ(range.error(), std::errc::not_supported);
    EXPECT_NE(why.find("shared mapping"), std::string::npos) << why;

    Mapping none(2, PROT_NONE, MAP_PRIVATE);
    range = private_range(none.at(0), none.at(2), why);
    ASSERT_FALSE(range);
    EXPECT_NE(why.find("not readable"), std::string::npos) << why;

    Mapping mixed(2, PROT_READ | PROT_WRITE, MAP_PRIVATE);
    ASSERT_EQ(::mprotect(mixed.p, kPage, PROT_READ), 0);
    range = private_range(mixed.at(0), mixed.at(2), why);
    ASSERT_FALSE(range);
    EXPECT_NE(why.find("changes protection"), std::string::npos) << why;

    Mapping hole(3, PROT_READ | PROT_WRITE, MAP_PRIVATE);
    ASSERT_EQ(::munmap(reinterpret_cast<void*>(hole.at(1)), kPage), 0);
    range = private_range(hole.at(0), hole.at(3), why);
    ASSERT_FALSE(range);
    EXPECT_NE(why.find("not mapped"), std::string::npos) << why;
}

TEST(PrivatePages, ACopyComesBackAsPrivateMemoryWithItsBytesAndProtection) {
    Mapping m(3, PROT_READ | PROT_WRITE, MAP_PRIVATE);
    ASSERT_NE(m.p, MAP_FAILED);
    auto* bytes = static_cast<unsigned char*>(m.p);
    for (std::size_t i = 0; i < m.len; ++i) {
        bytes[i] = static_cast<unsigned char>(i * 13 + 1);
    }
    auto copy = PageCopy::of(bytes, m.len);
    ASSERT_TRUE(copy);
    // The range is taken away (as when shared pages replace it and go again).
    ASSERT_EQ(::mmap(m.p, m.len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0), m.p);
    ASSERT_TRUE(copy.value().restore(m.p, PROT_READ));
    bool same = true;
    for (std::size_t i = 0; i < m.len; ++i) {
        same = same && bytes[i] == static_cast<unsigned char>(i * 13 + 1);
    }
    EXPECT_TRUE(same);
    std::string why;
    auto range = private_range(m.at(0), m.at(3), why);
    ASSERT_TRUE(range) << why;
    EXPECT_EQ(range.value().prot, PROT_READ);
    EXPECT_FALSE(copy.value().restore(m.p, PROT_READ));  // a copy moves once
}

}  // namespace
