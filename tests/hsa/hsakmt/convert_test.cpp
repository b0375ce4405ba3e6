// Thunk topology structs -> wire structs, field by field (no GPU needed).
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "hsakmt_convert.hpp"

namespace xenhsa::hsa::kmt {
namespace {

std::string c_str(const uint8_t* bytes) { return reinterpret_cast<const char*>(bytes); }

TEST(HsakmtConvert, NodeFieldsLandInTheirPlaces) {
    HsaNodeProperties p{};
    p.NumCPUCores = 0;
    p.NumFComputeCores = 240;
    p.NumMemoryBanks = 1;
    p.NumCaches = 5;
    p.NumIOLinks = 2;
    p.FComputeIdLo = 0x80000000u;
    p.Capability.Value = 0x12345678;
    p.MaxWavesPerSIMD = 10;
    p.LDSSizeInKB = 64;
    p.WaveFrontSize = 64;
    p.NumSIMDPerCU = 4;
    p.EngineId.Value = 0x0009000a;
    p.VendorId = 0x1002;
    p.DeviceId = 0x73bf;
    p.LocationId = 0x300;
    p.Domain = 7;
    p.LocalMemSize = 16ull << 30;
    p.MaxEngineClockMhzFCompute = 2500;
    p.DrmRenderMinor = 128;
    p.NumSdmaEngines = 2;
    p.NumSdmaXgmiEngines = 1;
    p.NumSdmaQueuesPerEngine = 8;
    p.NumCpQueues = 24;
    p.NumGws = 64;
    p.uCodeEngineVersions.Value = 0x3ff;
    p.DebugProperties.Value = 0x1234;
    p.HiveID = 0xabcdef;
    p.UniqueID = 0x1122334455667788ull;
    p.VGPRSizePerCU = 0x80000;
    p.SGPRSizePerCU = 0x4000;
    const char* amd = "gfx1030";
    std::memcpy(p.AMDName, amd, std::strlen(amd));

    const xenhsa_node_props n = convert_node(p);
    EXPECT_EQ(n.num_fcompute_cores, 240u);
    EXPECT_EQ(n.num_memory_banks, 1u);
    EXPECT_EQ(n.num_caches, 5u);
    EXPECT_EQ(n.num_io_links, 2u);
    EXPECT_EQ(n.fcompute_id_lo, 0x80000000u);
    EXPECT_EQ(n.capability, 0x12345678u);
    EXPECT_EQ(n.max_waves_per_simd, 10u);
    EXPECT_EQ(n.lds_size_kb, 64u);
    EXPECT_EQ(n.wavefront_size, 64u);
    EXPECT_EQ(n.num_simd_per_cu, 4u);
    EXPECT_EQ(n.engine_id, 0x0009000au);
    EXPECT_EQ(n.vendor_id, 0x1002u);
    EXPECT_EQ(n.device_id, 0x73bfu);
    EXPECT_EQ(n.location_id, 0x300u);
    EXPECT_EQ(n.domain, 7u);
    EXPECT_EQ(n.local_mem_size, 16ull << 30);
    EXPECT_EQ(n.max_engine_clock_mhz_fcompute, 2500u);
    EXPECT_EQ(n.drm_render_minor, 128);
    EXPECT_EQ(n.num_sdma_engines, 2u);
    EXPECT_EQ(n.num_sdma_xgmi_engines, 1u);
    EXPECT_EQ(n.num_sdma_queues_per_engine, 8u);
    EXPECT_EQ(n.num_cp_queues, 24u);
    EXPECT_EQ(n.num_gws, 64u);
    EXPECT_EQ(n.ucode_engine_versions, 0x3ffu);
    EXPECT_EQ(n.debug_properties, 0x1234u);
    EXPECT_EQ(n.hive_id, 0xabcdefu);
    EXPECT_EQ(n.unique_id, 0x1122334455667788ull);
    EXPECT_EQ(n.vgpr_size_per_cu, 0x80000u);
    EXPECT_EQ(n.sgpr_size_per_cu, 0x4000u);
    EXPECT_EQ(n.num_xcc, 1u);  // a GPU node; the host thunk (5.2.3) does not say more
    EXPECT_EQ(c_str(n.amd_name), "gfx1030");
}

TEST(HsakmtConvert, MarketingNameBecomesUtf8) {
    const uint16_t name[] = {u'R', u'a',   u'd',   u'e', u'o',   u'n', 0x2122,
                             u' ', 0xD83D, 0xDE00, u'!', 0xDC00, u'x', 0};
    uint8_t out[64];
    utf16_to_utf8(name, 64, out, sizeof(out));
    EXPECT_EQ(c_str(out), "Radeon\xE2\x84\xA2 \xF0\x9F\x98\x80!\xEF\xBF\xBDx");
}

TEST(HsakmtConvert, LongNamesAreCutAtCharacterBoundariesAndTerminated) {
    uint16_t name[64];
    for (uint16_t& c : name) {
        c = 0x00E9;  // 'é': two bytes each
    }
    uint8_t out[64];
    std::memset(out, 0xAA, sizeof(out));
    utf16_to_utf8(name, 64, out, sizeof(out));
    EXPECT_EQ(out[62], 0);  // 31 characters (62 bytes), then the NUL
    EXPECT_EQ(out[63], 0);
    EXPECT_EQ(std::strlen(reinterpret_cast<const char*>(out)), 62u);

    uint8_t ascii_in[64];
    std::memset(ascii_in, 'a', sizeof(ascii_in));
    ascii_in[3] = 0xC3;
    copy_ascii(ascii_in, 64, out, sizeof(out));
    EXPECT_EQ(out[3], '?');
    EXPECT_EQ(out[63], 0);
    EXPECT_EQ(std::strlen(reinterpret_cast<const char*>(out)), 63u);
}

TEST(HsakmtConvert, CacheSiblingsBecomeABitmap) {
    HsaCacheProperties c{};
    c.ProcessorIdLow = 0x80000000u;
    c.CacheLevel = 2;
    c.CacheSize = 4096;
    c.CacheLineSize = 128;
    c.CacheType.Value = 0xA;
    c.SiblingMap[0] = 1;
    c.SiblingMap[65] = 7;
    c.SiblingMap[255] = 1;
    const xenhsa_cache x = convert_cache(c);
    EXPECT_EQ(x.processor_id_low, 0x80000000u);
    EXPECT_EQ(x.level, 2u);
    EXPECT_EQ(x.size, 4096u);
    EXPECT_EQ(x.line_size, 128u);
    EXPECT_EQ(x.type, 0xAu);
    EXPECT_EQ(x.sibling_bits[0], 1u);
    EXPECT_EQ(x.sibling_bits[1], 2u);
    EXPECT_EQ(x.sibling_bits[2], 0u);
    EXPECT_EQ(x.sibling_bits[3], 1ull << 63);
}

TEST(HsakmtConvert, MemoryLinksClocksSystemAndVersion) {
    HsaMemoryProperties m{};
    m.HeapType = HSA_HEAPTYPE_FRAME_BUFFER_PRIVATE;
    m.SizeInBytes = 8ull << 30;
    m.Flags.MemoryProperty = 1;
    m.Width = 256;
    m.MemoryClockMax = 1000;
    m.VirtualBaseAddress = 0x1000;
    const xenhsa_mem_bank b = convert_mem_bank(m);
    EXPECT_EQ(b.heap_type, XENHSA_HEAP_FB_PRIVATE);
    EXPECT_EQ(b.size_bytes, 8ull << 30);
    EXPECT_EQ(b.flags, 1u);
    EXPECT_EQ(b.width, 256u);
    EXPECT_EQ(b.mem_clock_max, 1000u);
    EXPECT_EQ(b.virtual_base, 0x1000u);

    HsaIoLinkProperties l{};
    l.IoLinkType = HSA_IOLINK_TYPE_XGMI;
    l.NodeFrom = 1;
    l.NodeTo = 2;
    l.Weight = 15;
    l.MaximumBandwidth = 50000;
    l.Flags.LinkProperty = 0x11;
    const xenhsa_io_link x = convert_io_link(l);
    EXPECT_EQ(x.type, 11u);
    EXPECT_EQ(x.node_from, 1u);
    EXPECT_EQ(x.node_to, 2u);
    EXPECT_EQ(x.weight, 15u);
    EXPECT_EQ(x.max_bandwidth, 50000u);
    EXPECT_EQ(x.flags, 0x11u);

    const xenhsa_clock_counters clk = convert_clock(HsaClockCounters{1, 2, 3, 100000000});
    EXPECT_EQ(clk.gpu_clock_counter, 1u);
    EXPECT_EQ(clk.system_clock_frequency_hz, 100000000u);

    const xenhsa_system_props s = convert_system(HsaSystemProperties{3, 4, 5, 6});
    EXPECT_EQ(s.num_nodes, 3u);
    EXPECT_EQ(s.platform_oem, 4u);
    EXPECT_EQ(s.platform_id, 5u);
    EXPECT_EQ(s.platform_rev, 6u);
    EXPECT_EQ(s.xnack_enabled, 0u);
    EXPECT_EQ(s.num_kernels, 0u);

    const xenhsa_version_info v = convert_version(HsaVersionInfo{1, 14});
    EXPECT_EQ(v.kfd_major, 1u);
    EXPECT_EQ(v.kfd_minor, 14u);
    EXPECT_EQ(v.proto_version, XENHSA_PROTO_VERSION);
    EXPECT_EQ(v.gpu_backend, XENHSA_GPU_BACKEND_KFD);
}

}  // namespace
}  // namespace xenhsa::hsa::kmt
