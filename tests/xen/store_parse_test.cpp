// Strict parsing of frontend-written xenstore values.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <xenhsa/xen/store.hpp>

namespace {

using xenhsa::xen::parse_store_uint;

TEST(StoreParse, AcceptsPlainDecimal) {
    EXPECT_EQ(parse_store_uint("0", 10).value(), 0u);
    EXPECT_EQ(parse_store_uint("4095", UINT32_MAX).value(), 4095u);
    EXPECT_EQ(parse_store_uint("18446744073709551615", UINT64_MAX).value(), UINT64_MAX);
}

TEST(StoreParse, RejectsEverythingElse) {
    for (const char* bad : {"", " 1", "1 ", "+1", "-1", "01", "1a", "0x10", "1e3", "１"}) {
        auto r = parse_store_uint(bad, UINT64_MAX);
        ASSERT_FALSE(r) << '"' << bad << '"';
        EXPECT_EQ(r.error().value(), EINVAL) << '"' << bad << '"';
    }
}

TEST(StoreParse, RejectsValuesAboveTheBound) {
    EXPECT_EQ(parse_store_uint("65536", 65535).error().value(), ERANGE);
    EXPECT_EQ(parse_store_uint("7", 5).error().value(), ERANGE);
    EXPECT_EQ(parse_store_uint("18446744073709551616", UINT64_MAX).error().value(), ERANGE);
    EXPECT_EQ(parse_store_uint("5", 5).value(), 5u);
}

}  // namespace
