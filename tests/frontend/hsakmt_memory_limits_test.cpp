// The guest libhsakmt's system-memory limits: the heap size it reports and the limit a
// refused allocation names, with the setting that raises it.
#include <gtest/gtest.h>

#include <cerrno>
#include <memory_limits.hpp>
#include <xenhsa/frontend/errors.hpp>

namespace xenhsa::frontend::hsakmt {
namespace {

constexpr uint64_t kPage = 4096;

MemoryLimits limits() {
    MemoryLimits l;
    l.ram_pages = 1u << 20;
    l.grant_pages = 131064;
    l.map_pages = 262144;
    l.lend_pages = 8191;
    l.handles = 4096;
    return l;
}

TEST(HsakmtMemoryLimits, TheSystemHeapIsTheSmallestBound) {
    MemoryLimits l = limits();
    EXPECT_EQ(system_capacity_bytes(l, false), 131064 * kPage);  // the grants
    l.grant_pages.reset();
    EXPECT_EQ(system_capacity_bytes(l, false), 262144 * kPage);  // the map share
    l.ram_pages = 1000;
    EXPECT_EQ(system_capacity_bytes(l, false), 1000 * kPage);  // the guest's RAM
    // Lent memory is the backend's: only the lend share bounds it.
    EXPECT_EQ(system_capacity_bytes(l, true), 8191 * kPage);
}

TEST(HsakmtMemoryLimits, EachRefusalNamesItsLimitAndTheSettingThatRaisesIt) {
    const MemoryLimits l = limits();
    SystemUse use;
    use.bytes = 768u << 20;
    use.step_pages = 53248;

    const Refusal grants = limit_refusal(l, SystemStep::grant,
                                         std::make_error_code(std::errc::no_space_on_device), use);
    EXPECT_EQ(grants.limit, "grants");
    EXPECT_NE(grants.text.find("768 MiB was refused"), std::string::npos) << grants.text;
    EXPECT_NE(grants.text.find("131064 pages in all: 511 MiB"), std::string::npos) << grants.text;
    EXPECT_NE(grants.text.find("max_grant_frames"), std::string::npos);

    EXPECT_EQ(
        limit_refusal(l, SystemStep::grant, std::make_error_code(std::errc::not_enough_memory), use)
            .limit,
        "guest memory");

    use.mapped_pages = 262144 - 1000;
    const Refusal map = limit_refusal(l, SystemStep::map, status_error(XENHSA_STATUS_QUOTA), use);
    EXPECT_EQ(map.limit, "map share");
    EXPECT_NE(map.text.find("max_map_pages 262144"), std::string::npos) << map.text;
    EXPECT_NE(map.text.find("--map-pool-pages"), std::string::npos) << map.text;
    // Within the map share, QUOTA is the handles'.
    use.mapped_pages = 0;
    EXPECT_EQ(limit_refusal(l, SystemStep::map, status_error(XENHSA_STATUS_QUOTA), use).limit,
              "handles");
    const Refusal maptrack =
        limit_refusal(l, SystemStep::map, status_error(XENHSA_STATUS_NO_MEMORY), use);
    EXPECT_EQ(maptrack.limit, "backend maps");
    EXPECT_NE(maptrack.text.find("gnttab_max_maptrack_frames"), std::string::npos);

    use.lent_pages = 8000;
    const Refusal lend = limit_refusal(l, SystemStep::lend, status_error(XENHSA_STATUS_QUOTA), use);
    EXPECT_EQ(lend.limit, "lend share");
    EXPECT_NE(lend.text.find("max_lend_pages 8191"), std::string::npos) << lend.text;

    EXPECT_EQ(limit_refusal(l, SystemStep::pin, status_error(XENHSA_STATUS_QUOTA), use).limit,
              "pins");
}

TEST(HsakmtMemoryLimits, WhatIsNoLimitIsNotCalledOne) {
    const MemoryLimits l = limits();
    const SystemUse use{};
    EXPECT_TRUE(limit_refusal(l, SystemStep::pin, status_error(XENHSA_STATUS_UNSUPPORTED), use)
                    .limit.empty());
    EXPECT_TRUE(limit_refusal(l, SystemStep::map, status_error(XENHSA_STATUS_BAD_ADDRESS), use)
                    .text.empty());
    EXPECT_TRUE(
        limit_refusal(l, SystemStep::grant, std::make_error_code(std::errc::invalid_argument), use)
            .limit.empty());
}

}  // namespace
}  // namespace xenhsa::frontend::hsakmt
