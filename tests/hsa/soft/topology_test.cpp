// Topology and the built-in kernel list, as a guest reads them through QUERY.
#include <xenhsa/proto/common.h>

#include <cstring>
#include <set>
#include <string>

#include "soft_fixture.hpp"

namespace xenhsa::hsa::soft_test {
namespace {

class TopologyTest : public SoftAgentTest {
protected:
    TopologyTest()
        : SoftAgentTest(SoftAgentOptions{.worker_threads = 3, .local_mem_size = 256ull << 20}) {}
};

bool nul_terminated(const uint8_t* name, size_t size) {
    return std::memchr(name, 0, size) != nullptr;
}

TEST_F(TopologyTest, VersionAndSystem) {
    auto version = device().version();
    ASSERT_TRUE(version);
    EXPECT_EQ(version.value().gpu_backend, XENHSA_GPU_BACKEND_SOFT);
    EXPECT_EQ(version.value().proto_version, XENHSA_PROTO_VERSION);
    EXPECT_EQ(version.value().kfd_major, 1u);

    auto system = device().system();
    ASSERT_TRUE(system);
    EXPECT_EQ(system.value().num_nodes, 2u);
    EXPECT_EQ(system.value().xnack_enabled, 0u);
    EXPECT_EQ(system.value().num_kernels, uint32_t{XENHSA_KERNEL_COUNT_});
}

TEST_F(TopologyTest, CpuNodeAndGpuNode) {
    auto cpu = device().node(kSoftCpuNode);
    ASSERT_TRUE(cpu);
    EXPECT_GE(cpu.value().num_cpu_cores, 1u);
    EXPECT_EQ(cpu.value().num_fcompute_cores, 0u);

    auto gpu = device().node(kSoftGpuNode);
    ASSERT_TRUE(gpu);
    const auto& props = gpu.value();
    EXPECT_EQ(props.num_cpu_cores, 0u);
    EXPECT_EQ(props.num_cu_per_array, 3u);  // one CU per worker
    EXPECT_EQ(props.num_fcompute_cores, props.num_cu_per_array * props.num_simd_per_cu);
    EXPECT_EQ(props.wavefront_size, 64u);
    EXPECT_EQ(props.local_mem_size, 256ull << 20);
    EXPECT_EQ(props.vendor_id, 0x1002u);
    EXPECT_EQ((props.capability >> 12) & 3, 2u);  // 64-bit doorbells
    EXPECT_TRUE(nul_terminated(props.marketing_name, sizeof props.marketing_name));
    EXPECT_TRUE(nul_terminated(props.amd_name, sizeof props.amd_name));
    EXPECT_STREQ(reinterpret_cast<const char*>(props.amd_name), "gfx900");

    EXPECT_EQ(device().node(2).error(), kInval);
}

TEST_F(TopologyTest, BanksCachesLinksFollowTheNodeCounts) {
    for (uint32_t node = 0; node < 2; ++node) {
        auto props = device().node(node);
        ASSERT_TRUE(props);
        for (uint32_t i = 0; i < props.value().num_memory_banks; ++i) {
            auto bank = device().mem_bank(node, i);
            ASSERT_TRUE(bank) << node << " " << i;
            EXPECT_GT(bank.value().size_bytes, 0u);
        }
        EXPECT_EQ(device().mem_bank(node, props.value().num_memory_banks).error(), kNoEnt);
        for (uint32_t i = 0; i < props.value().num_caches; ++i) {
            auto cache = device().cache(node, i);
            ASSERT_TRUE(cache) << node << " " << i;
            EXPECT_EQ(cache.value().level, i + 1);
            // ROCr looks a node's caches up by its first processor id.
            EXPECT_EQ(cache.value().processor_id_low, node == kSoftCpuNode
                                                          ? props.value().ccompute_id_lo
                                                          : props.value().fcompute_id_lo);
        }
        EXPECT_EQ(device().cache(node, props.value().num_caches).error(), kNoEnt);
        for (uint32_t i = 0; i < props.value().num_io_links; ++i) {
            auto link = device().io_link(node, i);
            ASSERT_TRUE(link);
            EXPECT_EQ(link.value().node_from, node);
            EXPECT_EQ(link.value().node_to, 1 - node);
        }
        EXPECT_EQ(device().io_link(node, props.value().num_io_links).error(), kNoEnt);
    }
    EXPECT_EQ(device().mem_bank(5, 0).error(), kInval);
}

// What ROCr 5.2.3 asserts or needs (docs: rocminfo_over_fake_thunk): a CPU data cache, a
// GPU cache of the CUs, device memory, an LDS bank (no queue without it) and scratch.
TEST_F(TopologyTest, WhatRocrNeedsOfTheNodes) {
    auto cpu = device().node(kSoftCpuNode);
    ASSERT_TRUE(cpu);
    ASSERT_EQ(cpu.value().num_caches, 1u);
    auto cpu_cache = device().cache(kSoftCpuNode, 0);
    ASSERT_TRUE(cpu_cache);
    EXPECT_EQ(cpu_cache.value().type & 0x7u, 0x5u) << "data and CPU, not instruction";
    EXPECT_EQ(cpu_cache.value().processor_id_low, cpu.value().ccompute_id_lo);
    EXPECT_GT(cpu_cache.value().size, 0u);
    auto system = device().mem_bank(kSoftCpuNode, 0);
    ASSERT_TRUE(system);
    EXPECT_EQ(system.value().heap_type, uint32_t{XENHSA_HEAP_SYSTEM});

    auto gpu = device().node(kSoftGpuNode);
    ASSERT_TRUE(gpu);
    ASSERT_EQ(gpu.value().num_memory_banks, 3u);
    auto fb = device().mem_bank(kSoftGpuNode, 0);
    auto lds = device().mem_bank(kSoftGpuNode, 1);
    auto scratch = device().mem_bank(kSoftGpuNode, 2);
    ASSERT_TRUE(fb && lds && scratch);
    EXPECT_EQ(fb.value().heap_type, uint32_t{XENHSA_HEAP_FB_PRIVATE});
    EXPECT_EQ(fb.value().size_bytes, 256ull << 20);
    EXPECT_EQ(lds.value().heap_type, uint32_t{XENHSA_HEAP_GPU_LDS});
    EXPECT_EQ(lds.value().size_bytes, uint64_t{gpu.value().lds_size_kb} * 1024);
    EXPECT_EQ(lds.value().virtual_base, 0x1000000000000ull);
    EXPECT_EQ(scratch.value().heap_type, uint32_t{XENHSA_HEAP_GPU_SCRATCH});
    EXPECT_EQ(scratch.value().size_bytes, 4ull << 30);
    EXPECT_EQ(scratch.value().virtual_base, 0x2000000000000ull);
    auto l1 = device().cache(kSoftGpuNode, 0);
    ASSERT_TRUE(l1);
    EXPECT_EQ(l1.value().type & 0xAu, 0x8u) << "HSACU, not instruction";
    EXPECT_GT(gpu.value().num_sdma_engines, 0u);

    // ROCr decides SDMA atomics by the GPU->CPU link: PCIe, no override of its flags.
    auto link = device().io_link(kSoftGpuNode, 0);
    ASSERT_TRUE(link);
    EXPECT_EQ(link.value().type, 2u);
    EXPECT_EQ(link.value().node_to, kSoftCpuNode);
    EXPECT_EQ(link.value().flags & 0x9u, 0u) << "Override / NoAtomics64bit";
}

struct GfxCase {
    SoftGfx gfx;
    const char* name;
    uint32_t stepping;
    bool sram_ecc;
};

class GfxTargetTest : public ::testing::TestWithParam<GfxCase> {};

TEST_P(GfxTargetTest, NamesTheIsaThroughEngineIdAndAmdName) {
    const GfxCase& c = GetParam();
    auto device = make_soft_agent(SoftAgentOptions{.gfx = c.gfx});
    auto gpu = device->node(kSoftGpuNode);
    ASSERT_TRUE(gpu);
    const uint32_t id = gpu.value().engine_id;
    EXPECT_EQ((id >> 10) & 0x3F, 9u);  // major
    EXPECT_EQ((id >> 16) & 0xFF, 0u);  // minor
    EXPECT_EQ((id >> 24) & 0xFF, c.stepping);
    EXPECT_STREQ(reinterpret_cast<const char*>(gpu.value().amd_name), c.name);
    EXPECT_EQ((gpu.value().capability >> 26) & 1, c.sram_ecc ? 1u : 0u) << "SRAM_EDCSupport";
    auto system = device->system();
    ASSERT_TRUE(system);
    EXPECT_EQ(system.value().xnack_enabled, 0u);

    EXPECT_EQ(parse_soft_gfx(c.name), c.gfx);
    EXPECT_STREQ(soft_gfx_name(c.gfx), c.name);
}

INSTANTIATE_TEST_SUITE_P(Targets, GfxTargetTest,
                         ::testing::Values(GfxCase{SoftGfx::gfx900, "gfx900", 0, false},
                                           GfxCase{SoftGfx::gfx906, "gfx906", 6, true},
                                           GfxCase{SoftGfx::gfx908, "gfx908", 8, true},
                                           GfxCase{SoftGfx::gfx90a, "gfx90a", 10, true}));

TEST(GfxTargetNames, UnknownNamesAreRefused) {
    for (const char* name : {"", "gfx", "gfx1030", "GFX900", "gfx900 ", "gfx90A", "gfx9000"}) {
        EXPECT_FALSE(parse_soft_gfx(name).has_value()) << '"' << name << '"';
    }
    EXPECT_EQ(SoftAgentOptions{}.gfx, SoftGfx::gfx900);
}

TEST_F(TopologyTest, ClockCountersMoveForward) {
    auto first = device().clock(kSoftGpuNode);
    auto second = device().clock(kSoftGpuNode);
    ASSERT_TRUE(first);
    ASSERT_TRUE(second);
    EXPECT_NE(first.value().system_clock_frequency_hz, 0u);
    EXPECT_GE(second.value().gpu_clock_counter, first.value().gpu_clock_counter);
    EXPECT_EQ(device().clock(9).error(), kInval);
}

// gfx900's, as amdgpu's KFD reports Vega 10's: GB_ADDR_CONFIG, 32 and 16 (zero) modes;
// the CPU node has none.
TEST_F(TopologyTest, TheGpuHasVega10sTileConfig) {
    auto config = device().tile_config(kSoftGpuNode);
    ASSERT_TRUE(config);
    EXPECT_EQ(config.value().gb_addr_config, 0x2a114042u);
    EXPECT_EQ(config.value().num_tile_configs, XENHSA_TILE_CONFIGS_MAX);
    EXPECT_EQ(config.value().num_macro_tile_configs, XENHSA_MACRO_TILE_CONFIGS_MAX);
    EXPECT_EQ(device().tile_config(kSoftCpuNode).error(), kInval);
    EXPECT_EQ(device().tile_config(9).error(), kInval);
}

TEST_F(TopologyTest, KernelsListTheBuiltIns) {
    const std::pair<const char*, uint32_t> expected[] = {
        {XENHSA_KERNEL_NAME_FILL, sizeof(xenhsa_kernarg_fill)},
        {XENHSA_KERNEL_NAME_COPY, sizeof(xenhsa_kernarg_copy)},
        {XENHSA_KERNEL_NAME_VECTOR_ADD, sizeof(xenhsa_kernarg_vector_add)},
        {XENHSA_KERNEL_NAME_SAXPY, sizeof(xenhsa_kernarg_saxpy)},
        {XENHSA_KERNEL_NAME_CHECKSUM, sizeof(xenhsa_kernarg_checksum)},
        {XENHSA_KERNEL_NAME_OOB_READ, sizeof(xenhsa_kernarg_oob_read)},
    };
    std::set<uint64_t> objects;
    for (uint32_t i = 0; i < XENHSA_KERNEL_COUNT_; ++i) {
        auto info = device().kernel(i);
        ASSERT_TRUE(info) << i;
        EXPECT_STREQ(reinterpret_cast<const char*>(info.value().name), expected[i].first);
        EXPECT_EQ(info.value().kernarg_size, expected[i].second);
        EXPECT_NE(info.value().kernel_object, 0u);
        EXPECT_TRUE(objects.insert(info.value().kernel_object).second);
    }
    EXPECT_EQ(device().kernel(XENHSA_KERNEL_COUNT_).error(), kNoEnt);
}

}  // namespace
}  // namespace xenhsa::hsa::soft_test
