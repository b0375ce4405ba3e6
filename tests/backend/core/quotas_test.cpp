#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <xenhsa/backend/core/quotas.hpp>

namespace xenhsa::backend::core {
namespace {

TEST(Quotas, DefaultsAreSane) {
    const Quotas q;
    EXPECT_GT(q.max_map_pages, 0u);
    EXPECT_GT(q.max_handles, 0u);
    EXPECT_LT(q.max_in_flight, 128u);
    EXPECT_GT(q.ring_budget, 0u);
}

TEST(Quotas, JsonOverridesNamedFieldsOnly) {
    auto q = parse_quotas(R"({"max_handles": 128, "max_lend_pages": 0})");
    ASSERT_TRUE(q) << q.error().message;
    EXPECT_EQ(q.value().max_handles, 128u);
    EXPECT_EQ(q.value().max_lend_pages, 0u);
    EXPECT_EQ(q.value().max_map_pages, Quotas{}.max_map_pages);
}

TEST(Quotas, JsonRoundTrips) {
    Quotas q;
    q.max_queues = 7;
    auto back = quotas_from_json(quotas_to_json(q));
    ASSERT_TRUE(back);
    EXPECT_EQ(back.value().max_queues, 7u);
}

TEST(Quotas, MalformedJsonIsAnErrorValue) {
    const char* bad[] = {
        "",                                         // not JSON
        "{",                                        // truncated
        "[1, 2]",                                   // not an object
        R"({"max_handle": 5})",                     // unknown key
        R"({"max_handles": -1})",                   // negative
        R"({"max_handles": 1.5})",                  // not an integer
        R"({"max_handles": 4.0})",                  // a float, even if whole
        R"({"max_handles": "5"})",                  // a string
        R"({"max_handles": true})",                 // a boolean
        R"({"max_handles": null})",                 // null
        R"({"max_handles": 0})",                    // below the minimum
        R"({"max_in_flight": 128})",                // above the maximum
        R"({"max_map_pages": 4294967296})",         // past uint32_t
        R"({"max_handles": 5, "max_handles": 6})",  // duplicate key
        R"({"max_handles": 99999999999999999999999})",
    };
    for (const char* text : bad) {
        auto q = parse_quotas(text);
        EXPECT_FALSE(q) << text;
        if (!q) {
            EXPECT_FALSE(q.error().message.empty()) << text;
        }
    }
}

TEST(Quotas, ErrorNamesTheKey) {
    auto q = parse_quotas(R"({"max_events": "x"})");
    ASSERT_FALSE(q);
    EXPECT_NE(q.error().message.find("max_events"), std::string::npos);
}

TEST(Quotas, FileLoads) {
    const auto path = std::filesystem::temp_directory_path() /
                      ("xenhsa-quotas-" + std::to_string(::getpid()) + ".json");
    {
        std::ofstream out(path);
        out << R"({"max_queues": 3})";
    }
    auto q = load_quotas_file(path);
    std::filesystem::remove(path);
    ASSERT_TRUE(q) << q.error().message;
    EXPECT_EQ(q.value().max_queues, 3u);
    EXPECT_FALSE(load_quotas_file(path));  // gone
}

TEST(Quotas, OverrideAcceptsStrictDecimal) {
    Quotas q;
    ASSERT_TRUE(apply_override(q, "max_handles=128"));
    EXPECT_EQ(q.max_handles, 128u);
    ASSERT_TRUE(apply_override(q, "max_lend_pages=0"));
    EXPECT_EQ(q.max_lend_pages, 0u);
}

TEST(Quotas, OverrideRejectsAnythingElseAndKeepsTheValue) {
    const char* bad[] = {"max_handles",
                         "max_handles=",
                         "=5",
                         "max_handles=0128",
                         "max_handles=+5",
                         "max_handles=-5",
                         "max_handles= 5",
                         "max_handles=5 ",
                         " max_handles=5",
                         "max_handles=0x10",
                         "max_handles=5k",
                         "nope=5",
                         "max_handles=0",
                         "max_in_flight=128",
                         "max_handles=65537",
                         "max_handles=99999999999999999999999",
                         "max_handles=5=6"};
    for (const char* text : bad) {
        Quotas q;
        q.max_handles = 77;
        auto r = apply_override(q, text);
        EXPECT_FALSE(r) << text;
        EXPECT_EQ(q.max_handles, 77u) << text;
        EXPECT_EQ(q.max_in_flight, Quotas{}.max_in_flight) << text;
    }
}

}  // namespace
}  // namespace xenhsa::backend::core
