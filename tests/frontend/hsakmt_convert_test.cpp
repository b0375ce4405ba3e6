// The guest libhsakmt's field-by-field conversion of the wire's topology into Debian's
// hsakmt.h structs, and its errors into HSAKMT_STATUS values.
#include <gtest/gtest.h>

#include <cstring>
#include <rocm6.hpp>
#include <thunk.hpp>
#include <topology.hpp>
#include <xenhsa/frontend/errors.hpp>

namespace xenhsa::frontend::hsakmt {
namespace {

std::u16string marketing(const HsaNodeProperties& p) {
    std::u16string s;
    for (const HSAuint16 c : p.MarketingName) {
        if (c == 0) {
            break;
        }
        s.push_back(static_cast<char16_t>(c));
    }
    return s;
}

xenhsa_node_props node_named(const char* name) {
    xenhsa_node_props w{};
    std::strncpy(reinterpret_cast<char*>(w.marketing_name), name, sizeof w.marketing_name - 1);
    return w;
}

TEST(HsakmtConvert, NodeFieldsAndNames) {
    xenhsa_node_props w = node_named("Radeon\xE2\x84\xA2 Pro \xC3\xA9");
    w.num_fcompute_cores = 240;
    w.num_simd_per_cu = 4;
    w.engine_id = (9u << 10) | (0u << 16) | (6u << 24);
    w.lds_size_kb = 64;
    w.num_cp_queues = 300;  // the thunk's field is 8 bits
    w.vendor_id = 0x1002;
    w.unique_id = 0x1122334455667788ull;
    std::strcpy(reinterpret_cast<char*>(w.amd_name), "gfx906");
    const HsaNodeProperties p = to_node_properties(w);
    EXPECT_EQ(p.NumFComputeCores, 240u);
    EXPECT_EQ(p.NumSIMDPerCU, 4u);
    EXPECT_EQ(p.EngineId.ui32.Major, 9u);
    EXPECT_EQ(p.EngineId.ui32.Stepping, 6u);
    EXPECT_EQ(p.LDSSizeInKB, 64u);
    EXPECT_EQ(p.NumCpQueues, 255u);
    EXPECT_EQ(p.VendorId, 0x1002u);
    EXPECT_EQ(uint64_t{p.UniqueID}, 0x1122334455667788ull);  // pack(4): no reference to it
    EXPECT_STREQ(reinterpret_cast<const char*>(p.AMDName), "gfx906");
    EXPECT_EQ(marketing(p), u"Radeon\u2122 Pro \u00e9");
}

// What ROCm 6's thunk named in 5.2.3's reserved bytes: ROCr 6 divides by NumXcc.
TEST(HsakmtConvert, AGpuNodeHasTheFieldsRocm6NamedInReservedBytes) {
    xenhsa_node_props gpu{};
    gpu.num_fcompute_cores = 8;
    gpu.engine_id = 9u << 10;
    EXPECT_EQ(rocm6::tail(to_node_properties(gpu)).num_xcc, 1u);      // a backend that does not say
    EXPECT_EQ(rocm6::tail(to_node_properties(gpu)).family_id, 141u);  // AMDGPU_FAMILY_AI
    gpu.num_xcc = 6;
    gpu.engine_id = 10u << 10;
    EXPECT_EQ(rocm6::tail(to_node_properties(gpu)).num_xcc, 6u);
    EXPECT_EQ(rocm6::tail(to_node_properties(gpu)).family_id, 143u);  // AMDGPU_FAMILY_NV
    xenhsa_node_props cpu{};
    cpu.num_cpu_cores = 4;
    cpu.num_xcc = 3;
    const rocm6::NodeTail none = rocm6::tail(to_node_properties(cpu));
    EXPECT_EQ(none.num_xcc + none.family_id + none.kfd_gpu_id, 0u);
}

TEST(HsakmtConvert, BrokenUtf8BecomesQuestionMarks) {
    // A lone continuation byte, a truncated sequence, an overlong form, a 4-byte sequence
    // (outside UTF-16's BMP), a surrogate encoded in UTF-8.
    EXPECT_EQ(marketing(to_node_properties(node_named("a\x80z"))), u"a?z");
    EXPECT_EQ(marketing(to_node_properties(node_named("a\xE2\x84"))), u"a??");
    EXPECT_EQ(marketing(to_node_properties(node_named("\xC0\xAF"))), u"?");
    EXPECT_EQ(marketing(to_node_properties(node_named("\xF0\x9F\x98\x80z"))), u"????z");
    EXPECT_EQ(marketing(to_node_properties(node_named("\xED\xA0\x80"))), u"?");
}

TEST(HsakmtConvert, NamesAreTerminatedByTheReceiver) {
    xenhsa_node_props w{};
    std::memset(w.marketing_name, 'x', sizeof w.marketing_name);  // no NUL from the sender
    std::memset(w.amd_name, 'y', sizeof w.amd_name);
    const HsaNodeProperties p = to_node_properties(w);
    EXPECT_EQ(marketing(p).size(), HSA_PUBLIC_NAME_SIZE - 1u);
    EXPECT_EQ(p.AMDName[HSA_PUBLIC_NAME_SIZE - 1], 0);
}

TEST(HsakmtConvert, CacheSiblingBitmapBecomesTheMap) {
    xenhsa_cache w{};
    w.level = 2;
    w.type = 9;
    w.sibling_bits[0] = 0b1011;
    w.sibling_bits[3] = 1ull << 63;
    const HsaCacheProperties p = to_cache_properties(w);
    EXPECT_EQ(p.CacheLevel, 2u);
    EXPECT_EQ(p.CacheType.Value, 9u);
    EXPECT_EQ(p.SiblingMap[0], 1u);
    EXPECT_EQ(p.SiblingMap[1], 1u);
    EXPECT_EQ(p.SiblingMap[2], 0u);
    EXPECT_EQ(p.SiblingMap[3], 1u);
    EXPECT_EQ(p.SiblingMap[255], 1u);
    EXPECT_EQ(p.SiblingMap[254], 0u);
}

TEST(HsakmtConvert, MemoryBanksAndLinks) {
    xenhsa_mem_bank b{};
    b.heap_type = XENHSA_HEAP_FB_PRIVATE;
    b.size_bytes = 1ull << 34;
    b.virtual_base = 0x1000000000000ull;
    const HsaMemoryProperties m = to_memory_properties(b);
    EXPECT_EQ(m.HeapType, HSA_HEAPTYPE_FRAME_BUFFER_PRIVATE);
    EXPECT_EQ(uint64_t{m.SizeInBytes}, 1ull << 34);
    EXPECT_EQ(uint64_t{m.VirtualBaseAddress}, 0x1000000000000ull);
    xenhsa_io_link l{};
    l.type = 2;
    l.node_from = 1;
    l.node_to = 0;
    l.flags = 0;
    const HsaIoLinkProperties io = to_io_link_properties(l);
    EXPECT_EQ(io.IoLinkType, HSA_IOLINKTYPE_PCIEXPRESS);
    EXPECT_EQ(io.NodeFrom, 1u);
    EXPECT_EQ(io.Flags.ui32.NoAtomics64bit, 0u);
}

TEST(HsakmtStatus, ErrorsMapToThunkStatuses) {
    EXPECT_EQ(to_status(std::error_code{}), HSAKMT_STATUS_SUCCESS);
    EXPECT_EQ(to_status(status_error(XENHSA_STATUS_TIMEOUT)), HSAKMT_STATUS_WAIT_TIMEOUT);
    EXPECT_EQ(to_status(status_error(XENHSA_STATUS_BAD_HANDLE)), HSAKMT_STATUS_INVALID_HANDLE);
    EXPECT_EQ(to_status(status_error(XENHSA_STATUS_BAD_ADDRESS)), HSAKMT_STATUS_INVALID_PARAMETER);
    EXPECT_EQ(to_status(status_error(XENHSA_STATUS_QUOTA)), HSAKMT_STATUS_OUT_OF_RESOURCES);
    EXPECT_EQ(to_status(status_error(XENHSA_STATUS_NO_MEMORY)), HSAKMT_STATUS_NO_MEMORY);
    EXPECT_EQ(to_status(status_error(XENHSA_STATUS_UNSUPPORTED)), HSAKMT_STATUS_NOT_SUPPORTED);
    EXPECT_EQ(to_status(status_error(XENHSA_STATUS_DEVICE)), HSAKMT_STATUS_ERROR);
    EXPECT_EQ(to_status(std::error_code(Errc::backend_gone)),
              HSAKMT_STATUS_KERNEL_COMMUNICATION_ERROR);
    EXPECT_EQ(to_status(std::error_code(Errc::backend_broken)),
              HSAKMT_STATUS_KERNEL_COMMUNICATION_ERROR);
    EXPECT_EQ(to_status(std::make_error_code(std::errc::not_supported)),
              HSAKMT_STATUS_NOT_SUPPORTED);
    EXPECT_EQ(to_status(std::make_error_code(std::errc::invalid_argument)),
              HSAKMT_STATUS_INVALID_PARAMETER);
    EXPECT_EQ(to_status(std::make_error_code(std::errc::not_enough_memory)),
              HSAKMT_STATUS_NO_MEMORY);
    // A request that got no answer in time is no wait timeout.
    EXPECT_EQ(to_status(std::make_error_code(std::errc::timed_out)), HSAKMT_STATUS_ERROR);
}

}  // namespace
}  // namespace xenhsa::frontend::hsakmt
