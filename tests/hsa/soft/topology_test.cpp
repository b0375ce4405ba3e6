// Topology and the built-in kernel list, as a guest reads them through QUERY.
#include "soft_fixture.hpp"

#include <xenhsa/proto/common.h>

#include <cstring>
#include <set>
#include <string>

namespace xenhsa::hsa::soft_test {
namespace {

const std::error_code kNoEnt = std::make_error_code(std::errc::no_such_file_or_directory);
const std::error_code kInval = std::make_error_code(std::errc::invalid_argument);

class TopologyTest : public SoftAgentTest {
protected:
    TopologyTest()
        : SoftAgentTest(SoftAgentOptions{.worker_threads = 3, .local_mem_size = 256ull << 20})
    {
    }
};

bool nul_terminated(const uint8_t *name, size_t size)
{
    return std::memchr(name, 0, size) != nullptr;
}

TEST_F(TopologyTest, VersionAndSystem)
{
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

TEST_F(TopologyTest, CpuNodeAndGpuNode)
{
    auto cpu = device().node(kSoftCpuNode);
    ASSERT_TRUE(cpu);
    EXPECT_GE(cpu.value().num_cpu_cores, 1u);
    EXPECT_EQ(cpu.value().num_fcompute_cores, 0u);

    auto gpu = device().node(kSoftGpuNode);
    ASSERT_TRUE(gpu);
    const auto &props = gpu.value();
    EXPECT_EQ(props.num_cpu_cores, 0u);
    EXPECT_EQ(props.num_cu_per_array, 3u); // one CU per worker
    EXPECT_EQ(props.num_fcompute_cores, props.num_cu_per_array * props.num_simd_per_cu);
    EXPECT_EQ(props.wavefront_size, 64u);
    EXPECT_EQ(props.local_mem_size, 256ull << 20);
    EXPECT_EQ(props.vendor_id, 0x1002u);
    EXPECT_EQ((props.capability >> 12) & 3, 2u); // 64-bit doorbells
    EXPECT_TRUE(nul_terminated(props.marketing_name, sizeof props.marketing_name));
    EXPECT_TRUE(nul_terminated(props.amd_name, sizeof props.amd_name));
    EXPECT_STREQ(reinterpret_cast<const char *>(props.amd_name), "gfx900");

    EXPECT_EQ(device().node(2).error(), kInval);
}

TEST_F(TopologyTest, BanksCachesLinksFollowTheNodeCounts)
{
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
    auto gpu_bank = device().mem_bank(kSoftGpuNode, 0);
    ASSERT_TRUE(gpu_bank);
    EXPECT_EQ(gpu_bank.value().heap_type, uint32_t{XENHSA_HEAP_FB_PUBLIC});
    EXPECT_EQ(gpu_bank.value().size_bytes, 256ull << 20);
    EXPECT_EQ(device().mem_bank(5, 0).error(), kInval);
}

TEST_F(TopologyTest, ClockCountersMoveForward)
{
    auto first = device().clock(kSoftGpuNode);
    auto second = device().clock(kSoftGpuNode);
    ASSERT_TRUE(first);
    ASSERT_TRUE(second);
    EXPECT_NE(first.value().system_clock_frequency_hz, 0u);
    EXPECT_GE(second.value().gpu_clock_counter, first.value().gpu_clock_counter);
    EXPECT_EQ(device().clock(9).error(), kInval);
}

TEST_F(TopologyTest, KernelsListTheBuiltIns)
{
    const std::pair<const char *, uint32_t> expected[] = {
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
        EXPECT_STREQ(reinterpret_cast<const char *>(info.value().name), expected[i].first);
        EXPECT_EQ(info.value().kernarg_size, expected[i].second);
        EXPECT_NE(info.value().kernel_object, 0u);
        EXPECT_TRUE(objects.insert(info.value().kernel_object).second);
    }
    EXPECT_EQ(device().kernel(XENHSA_KERNEL_COUNT_).error(), kNoEnt);
}

}  // namespace
}  // namespace xenhsa::hsa::soft_test
