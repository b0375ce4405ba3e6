#include "topology.hpp"

#include <unistd.h>
#include <xenhsa/proto/common.h>

#include <algorithm>
#include <boost/outcome/try.hpp>
#include <cstring>
#include <thread>

#include "clock.hpp"
#include "gfx_target.hpp"
#include "kernels.hpp"

namespace xenhsa::hsa::soft {

namespace {

// Values of the thunk's enums and bit fields (hsakmttypes.h), spelled out so that the
// agent does not need libhsakmt.
constexpr uint32_t kCapQueueSizePowerOfTwo = 1u << 3;
constexpr uint32_t kCapQueueSize32bit = 1u << 4;
constexpr uint32_t kCapDoorbellType2 = 2u << 12;  // 64-bit doorbells, as gfx9+
constexpr uint32_t kCapSramEdc = 1u << 26;        // SRAM_EDCSupport: ROCr's "sramecc+"
constexpr uint32_t kCacheData = 1u << 0;
constexpr uint32_t kCacheCpu = 1u << 2;
constexpr uint32_t kCacheHsaCu = 1u << 3;
constexpr uint32_t kIoLinkPcie = 2;  // HSA_IOLINKTYPE_PCIEXPRESS; flags 0: 64-bit atomics
constexpr uint32_t kGpuIdBase = 0x80001000;
constexpr uint32_t kCpuIdBase = 0;
constexpr uint32_t kSimdPerCu = 4;
constexpr uint32_t kLdsKb = 64;
constexpr uint32_t kGpuBanks = 3;
// KFD's apertures for LDS and scratch (what a gfx9 dGPU reports), and ROCr's scratch size.
constexpr uint64_t kLdsAperture = 0x1000000000000ull;
constexpr uint64_t kScratchAperture = 0x2000000000000ull;
constexpr uint64_t kScratchBytes = 4ull << 30;

// HSA_ENGINE_ID: uCode:10, Major:6, Minor:8, Stepping:8 -> gfx900.
constexpr uint32_t engine_id(uint32_t major, uint32_t minor, uint32_t stepping) {
    return (major << 10) | (minor << 16) | (stepping << 24);
}

void set_name(uint8_t (&field)[XENHSA_NAME_SIZE], const char* name) {
    std::strncpy(reinterpret_cast<char*>(field), name, XENHSA_NAME_SIZE - 1);
}

uint64_t system_memory_bytes() {
    const long pages = ::sysconf(_SC_PHYS_PAGES);
    const long page = ::sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
}

Result<void> check_node(uint32_t node) {
    if (node >= kNodeCount) {
        return errc(std::errc::invalid_argument);
    }
    return boost::outcome_v2::success();
}

}  // namespace

Topology::Topology(const SoftAgentOptions& options) noexcept
    : options_(options),
      cpu_cores_(std::max(1u, std::thread::hardware_concurrency())),
      system_memory_(system_memory_bytes()) {}

xenhsa_version_info Topology::version() const noexcept {
    xenhsa_version_info info{};
    info.kfd_major = 1;
    info.kfd_minor = 14;
    info.proto_version = XENHSA_PROTO_VERSION;
    info.gpu_backend = XENHSA_GPU_BACKEND_SOFT;
    return info;
}

xenhsa_system_props Topology::system() const noexcept {
    xenhsa_system_props props{};
    props.num_nodes = kNodeCount;
    props.xnack_enabled = 0;
    props.num_kernels = static_cast<uint32_t>(builtin_kernels().size());
    return props;
}

Result<xenhsa_node_props> Topology::node(uint32_t node) const noexcept {
    BOOST_OUTCOME_TRY(check_node(node));
    xenhsa_node_props props{};
    props.num_memory_banks = 1;
    props.num_io_links = 1;
    if (node == kSoftCpuNode) {
        props.num_caches = 1;  // ROCr asserts a CPU data cache
        props.ccompute_id_lo = kCpuIdBase;
        props.num_cpu_cores = cpu_cores_;
        props.max_engine_clock_mhz_ccompute = 1000;
        props.drm_render_minor = -1;
        set_name(props.marketing_name, "xenhsa host CPU");
        return props;
    }
    const GfxTarget& target = gfx_target(options_.gfx);
    const uint32_t cus = options_.worker_threads;
    props.num_memory_banks = kGpuBanks;
    props.num_fcompute_cores = cus * kSimdPerCu;
    props.num_caches = 2;
    props.fcompute_id_lo = kGpuIdBase;
    props.capability = kCapQueueSizePowerOfTwo | kCapQueueSize32bit | kCapDoorbellType2 |
                       (target.sram_ecc ? kCapSramEdc : 0);
    props.max_waves_per_simd = 10;
    props.lds_size_kb = kLdsKb;
    props.wavefront_size = 64;
    props.num_shader_banks = 1;
    props.num_xcc = 1;
    props.num_arrays = 1;
    props.num_cu_per_array = cus;
    props.num_simd_per_cu = kSimdPerCu;
    props.max_slots_scratch_cu = 32;
    props.engine_id = engine_id(target.major, target.minor, target.stepping);
    props.vendor_id = 0x1002;
    props.local_mem_size = options_.local_mem_size;
    props.max_engine_clock_mhz_fcompute = 1000;
    props.drm_render_minor = -1;  // no DRM render node behind a software GPU
    props.num_cp_queues = options_.max_queues;
    props.num_sdma_engines = options_.sdma_engines;  // ROCr's BlitSdma copies host<->device
    props.num_sdma_queues_per_engine = 8;
    props.unique_id = 0x78656e6873610001ull;
    set_name(props.marketing_name, "xenhsa software GPU");
    set_name(props.amd_name, target.name);
    return props;
}

Result<xenhsa_mem_bank> Topology::mem_bank(uint32_t node, uint32_t index) const noexcept {
    BOOST_OUTCOME_TRY(check_node(node));
    if (index >= (node == kSoftCpuNode ? 1 : kGpuBanks)) {
        return errc(std::errc::no_such_file_or_directory);
    }
    xenhsa_mem_bank bank{};
    if (node == kSoftCpuNode) {
        bank.heap_type = XENHSA_HEAP_SYSTEM;
        bank.size_bytes = system_memory_;
        bank.width = 64;
        return bank;
    }
    switch (index) {
        case 0:
            // Private: a guest CPU cannot reach device memory through Xen, and ROCr then
            // does not ask for host access to its VRAM allocations.
            bank.heap_type = XENHSA_HEAP_FB_PRIVATE;
            bank.size_bytes = options_.local_mem_size;
            bank.width = 2048;
            bank.mem_clock_max = 1000;
            break;
        case 1:  // ROCr's group segment pool; a queue cannot be made without it
            bank.heap_type = XENHSA_HEAP_GPU_LDS;
            bank.size_bytes = uint64_t{kLdsKb} * 1024;
            bank.virtual_base = kLdsAperture;
            break;
        default:
            bank.heap_type = XENHSA_HEAP_GPU_SCRATCH;
            bank.size_bytes = kScratchBytes;
            bank.virtual_base = kScratchAperture;
            break;
    }
    return bank;
}

Result<xenhsa_cache> Topology::cache(uint32_t node, uint32_t index) const noexcept {
    BOOST_OUTCOME_TRY(check_node(node));
    if (node == kSoftCpuNode) {
        if (index != 0) {
            return errc(std::errc::no_such_file_or_directory);
        }
        xenhsa_cache cache{};  // an L1 data cache of the first core
        cache.processor_id_low = kCpuIdBase;
        cache.type = kCacheData | kCacheCpu;
        cache.level = 1;
        cache.size = 32;  // KiB
        cache.line_size = 64;
        cache.lines_per_tag = 1;
        cache.associativity = 8;
        cache.latency = 1;
        cache.sibling_bits[0] = 1;
        return cache;
    }
    if (index >= 2) {
        return errc(std::errc::no_such_file_or_directory);
    }
    xenhsa_cache cache{};
    cache.processor_id_low = kGpuIdBase;
    cache.type = kCacheData | kCacheHsaCu;
    cache.lines_per_tag = 1;
    if (index == 0) {  // L1, per CU
        cache.level = 1;
        cache.size = 16;  // KiB, as KFD reports it
        cache.line_size = 64;
        cache.associativity = 4;
        cache.latency = 1;
        cache.sibling_bits[0] = 1;
    } else {  // L2, shared by every CU
        cache.level = 2;
        cache.size = 4096;
        cache.line_size = 128;
        cache.associativity = 16;
        cache.latency = 10;
        const uint32_t cus = std::min<uint32_t>(options_.worker_threads, 64);
        cache.sibling_bits[0] = cus == 64 ? ~0ull : (1ull << cus) - 1;
    }
    return cache;
}

Result<xenhsa_io_link> Topology::io_link(uint32_t node, uint32_t index) const noexcept {
    BOOST_OUTCOME_TRY(check_node(node));
    if (index != 0) {
        return errc(std::errc::no_such_file_or_directory);
    }
    xenhsa_io_link link{};
    link.type = kIoLinkPcie;
    link.version_major = 3;
    link.node_from = node;
    link.node_to = node == kSoftCpuNode ? kSoftGpuNode : kSoftCpuNode;
    link.weight = 20;
    link.min_bandwidth = 8000;  // MB/s
    link.max_bandwidth = 16000;
    return link;
}

// Vega 10's (gfx900, which the agent reports): GB_ADDR_CONFIG as amdgpu programs it;
// GFX9 keeps no tile or macro-tile modes (the KFD reports 32 and 16 zeros) and no bank
// or rank counts.
Result<xenhsa_tile_config> Topology::tile_config(uint32_t node) const noexcept {
    BOOST_OUTCOME_TRY(check_node(node));
    if (node != kSoftGpuNode) {
        return errc(std::errc::invalid_argument);
    }
    xenhsa_tile_config config{};
    config.gb_addr_config = 0x2a114042;
    config.num_tile_configs = XENHSA_TILE_CONFIGS_MAX;
    config.num_macro_tile_configs = XENHSA_MACRO_TILE_CONFIGS_MAX;
    return config;
}

Result<xenhsa_clock_counters> Topology::clock(uint32_t node) const noexcept {
    BOOST_OUTCOME_TRY(check_node(node));
    const uint64_t now = clock_now();
    xenhsa_clock_counters counters{};
    counters.gpu_clock_counter = now;
    counters.cpu_clock_counter = now;
    counters.system_clock_counter = now;
    counters.system_clock_frequency_hz = kClockHz;
    return counters;
}

}  // namespace xenhsa::hsa::soft
