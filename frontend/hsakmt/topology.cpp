#include "topology.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <xenhsa/frontend/errors.hpp>

#include "rocm6.hpp"

namespace xenhsa::frontend::hsakmt {

namespace {

template <std::size_t N>
std::string wire_string(const uint8_t (&field)[N]) {
    // Terminated by the receiver, whatever the sender did (protocol 5.2).
    const auto* begin = reinterpret_cast<const char*>(field);
    return std::string(begin, strnlen(begin, N - 1));
}

// UTF-8 (the wire's marketing name) into the thunk's UTF-16 array; what is not a valid
// sequence of the Basic Multilingual Plane becomes '?'.
void to_utf16(const std::string& text, HSAuint16 (&out)[HSA_PUBLIC_NAME_SIZE]) {
    std::size_t o = 0;
    for (std::size_t i = 0; i < text.size() && o + 1 < HSA_PUBLIC_NAME_SIZE;) {
        const auto c = static_cast<unsigned char>(text[i]);
        uint32_t cp = '?';
        std::size_t len = 1;
        auto cont = [&](std::size_t k) {
            return i + k < text.size() && (static_cast<unsigned char>(text[i + k]) & 0xC0) == 0x80;
        };
        if (c < 0x80) {
            cp = c;
        } else if ((c & 0xE0) == 0xC0 && cont(1)) {
            cp = ((c & 0x1Fu) << 6) | (static_cast<unsigned char>(text[i + 1]) & 0x3Fu);
            len = 2;
            cp = cp < 0x80 ? '?' : cp;
        } else if ((c & 0xF0) == 0xE0 && cont(1) && cont(2)) {
            cp = ((c & 0x0Fu) << 12) | ((static_cast<unsigned char>(text[i + 1]) & 0x3Fu) << 6) |
                 (static_cast<unsigned char>(text[i + 2]) & 0x3Fu);
            len = 3;
            cp = cp < 0x800 || (cp >= 0xD800 && cp < 0xE000) ? '?' : cp;
        }
        out[o++] = static_cast<HSAuint16>(cp);
        i += len;
    }
    out[o] = 0;
}

Result<std::vector<std::byte>> query_exact(Client& client, uint32_t kind, uint32_t node,
                                           uint32_t index, std::size_t size) {
    auto bytes = client.query(kind, node, index);
    if (bytes && bytes.value().size() != size) {
        return std::error_code(Errc::backend_broken);
    }
    return bytes;
}

template <class Wire>
Result<Wire> query_struct(Client& client, uint32_t kind, uint32_t node, uint32_t index) {
    auto bytes = query_exact(client, kind, node, index, sizeof(Wire));
    if (!bytes) {
        return bytes.error();
    }
    Wire wire;
    std::memcpy(&wire, bytes.value().data(), sizeof wire);
    return wire;
}

}  // namespace

uint32_t Topology::first_gpu() const noexcept {
    for (uint32_t n = 0; n < nodes.size(); ++n) {
        if (is_gpu(n)) {
            return n;
        }
    }
    return static_cast<uint32_t>(nodes.size());
}

HsaNodeProperties to_node_properties(const xenhsa_node_props& w) {
    HsaNodeProperties p{};
    p.NumCPUCores = w.num_cpu_cores;
    p.NumFComputeCores = w.num_fcompute_cores;
    p.NumMemoryBanks = w.num_memory_banks;
    p.NumCaches = w.num_caches;
    p.NumIOLinks = w.num_io_links;
    p.CComputeIdLo = w.ccompute_id_lo;
    p.FComputeIdLo = w.fcompute_id_lo;
    p.Capability.Value = w.capability;
    p.MaxWavesPerSIMD = w.max_waves_per_simd;
    p.LDSSizeInKB = w.lds_size_kb;
    p.GDSSizeInKB = w.gds_size_kb;
    p.WaveFrontSize = w.wavefront_size;
    p.NumShaderBanks = w.num_shader_banks;
    p.NumArrays = w.num_arrays;
    p.NumCUPerArray = w.num_cu_per_array;
    p.NumSIMDPerCU = w.num_simd_per_cu;
    p.MaxSlotsScratchCU = w.max_slots_scratch_cu;
    p.EngineId.Value = w.engine_id;
    p.VendorId = static_cast<HSAuint16>(w.vendor_id);
    p.DeviceId = static_cast<HSAuint16>(w.device_id);
    p.LocationId = w.location_id;
    p.Domain = w.domain;
    p.LocalMemSize = w.local_mem_size;
    p.MaxEngineClockMhzFCompute = w.max_engine_clock_mhz_fcompute;
    p.MaxEngineClockMhzCCompute = w.max_engine_clock_mhz_ccompute;
    p.DrmRenderMinor = w.drm_render_minor;
    p.NumSdmaEngines = w.num_sdma_engines;
    p.NumSdmaXgmiEngines = w.num_sdma_xgmi_engines;
    constexpr uint32_t kU8 = std::numeric_limits<HSAuint8>::max();
    p.NumSdmaQueuesPerEngine = static_cast<HSAuint8>(std::min(w.num_sdma_queues_per_engine, kU8));
    p.NumCpQueues = static_cast<HSAuint8>(std::min(w.num_cp_queues, kU8));
    p.NumGws = static_cast<HSAuint8>(std::min(w.num_gws, kU8));
    p.uCodeEngineVersions.Value = w.ucode_engine_versions;
    p.VGPRSizePerCU = w.vgpr_size_per_cu;
    p.SGPRSizePerCU = w.sgpr_size_per_cu;
    p.DebugProperties.Value = w.debug_properties;
    p.HiveID = w.hive_id;
    p.UniqueID = w.unique_id;
    if (p.NumFComputeCores != 0) {
        rocm6::NodeTail tail;
        tail.num_xcc = std::max(w.num_xcc, 1u);
        tail.family_id = rocm6::family_of_gfx(p.EngineId.ui32.Major);
        rocm6::set_tail(p, tail);  // KFDGpuID: fetch_topology, which knows the node
    }
    to_utf16(wire_string(w.marketing_name), p.MarketingName);
    const std::string amd = wire_string(w.amd_name);
    std::memcpy(p.AMDName, amd.data(), amd.size());  // < 64, zero-filled after
    return p;
}

HsaMemoryProperties to_memory_properties(const xenhsa_mem_bank& w) {
    HsaMemoryProperties p{};
    p.HeapType = static_cast<HSA_HEAPTYPE>(w.heap_type);
    p.SizeInBytes = w.size_bytes;
    p.Flags.MemoryProperty = w.flags;
    p.Width = w.width;
    p.MemoryClockMax = w.mem_clock_max;
    p.VirtualBaseAddress = w.virtual_base;
    return p;
}

HsaCacheProperties to_cache_properties(const xenhsa_cache& w) {
    HsaCacheProperties p{};
    p.ProcessorIdLow = w.processor_id_low;
    p.CacheLevel = w.level;
    p.CacheSize = w.size;
    p.CacheLineSize = w.line_size;
    p.CacheLinesPerTag = w.lines_per_tag;
    p.CacheAssociativity = w.associativity;
    p.CacheLatency = w.latency;
    p.CacheType.Value = w.type;
    for (uint32_t i = 0; i < HSA_CPU_SIBLINGS; ++i) {
        p.SiblingMap[i] = (w.sibling_bits[i / 64] >> (i % 64)) & 1u;
    }
    return p;
}

HsaIoLinkProperties to_io_link_properties(const xenhsa_io_link& w) {
    HsaIoLinkProperties p{};
    p.IoLinkType = static_cast<HSA_IOLINKTYPE>(w.type);
    p.VersionMajor = w.version_major;
    p.VersionMinor = w.version_minor;
    p.NodeFrom = w.node_from;
    p.NodeTo = w.node_to;
    p.Weight = w.weight;
    p.MinimumLatency = w.min_latency;
    p.MaximumLatency = w.max_latency;
    p.MinimumBandwidth = w.min_bandwidth;
    p.MaximumBandwidth = w.max_bandwidth;
    p.RecTransferSize = w.rec_transfer_size;
    p.Flags.LinkProperty = w.flags;
    return p;
}

Result<Topology> fetch_topology(Client& client) {
    Topology t;
    auto version = client.query_version();
    if (!version) {
        return version.error();
    }
    t.version.KernelInterfaceMajorVersion = version.value().kfd_major;
    t.version.KernelInterfaceMinorVersion =
        version.value().kfd_major == 1 ? std::min(version.value().kfd_minor, rocm6::kKfdMinorMax)
                                       : version.value().kfd_minor;
    t.gpu_backend = version.value().gpu_backend;
    auto system = client.query_system();
    if (!system) {
        return system.error();
    }
    t.system.NumNodes = system.value().num_nodes;
    t.system.PlatformOem = system.value().platform_oem;
    t.system.PlatformId = system.value().platform_id;
    t.system.PlatformRev = system.value().platform_rev;
    if (t.system.NumNodes == 0 || t.system.NumNodes > XENHSA_QUERY_MAX_NODES) {
        return std::error_code(Errc::backend_broken);
    }
    for (uint32_t n = 0; n < t.system.NumNodes; ++n) {
        auto node = client.query_node(n);
        if (!node) {
            return node.error();
        }
        const xenhsa_node_props& w = node.value();
        if (w.num_memory_banks > XENHSA_QUERY_MAX_INDEX || w.num_caches > XENHSA_QUERY_MAX_INDEX ||
            w.num_io_links > XENHSA_QUERY_MAX_INDEX) {
            return std::error_code(Errc::backend_broken);
        }
        NodeTopology nt;
        nt.props = to_node_properties(w);
        if (nt.props.NumFComputeCores != 0) {
            // The KFD's gpu_id is a host detail; any id but the CPU's 0 serves ROCr 6.
            rocm6::NodeTail tail = rocm6::tail(nt.props);
            tail.kfd_gpu_id = n + 1;
            rocm6::set_tail(nt.props, tail);
        }
        for (uint32_t i = 0; i < w.num_memory_banks; ++i) {
            auto bank = query_struct<xenhsa_mem_bank>(client, XENHSA_QUERY_MEM_BANK, n, i);
            if (!bank) {
                return bank.error();
            }
            nt.banks.push_back(to_memory_properties(bank.value()));
        }
        for (uint32_t i = 0; i < w.num_caches; ++i) {
            auto cache = query_struct<xenhsa_cache>(client, XENHSA_QUERY_CACHE, n, i);
            if (!cache) {
                return cache.error();
            }
            nt.caches.push_back(to_cache_properties(cache.value()));
        }
        for (uint32_t i = 0; i < w.num_io_links; ++i) {
            auto link = query_struct<xenhsa_io_link>(client, XENHSA_QUERY_IO_LINK, n, i);
            if (!link) {
                return link.error();
            }
            nt.links.push_back(to_io_link_properties(link.value()));
        }
        t.nodes.push_back(std::move(nt));
    }
    for (uint32_t i = 0; i < system.value().num_kernels && i < XENHSA_QUERY_MAX_INDEX; ++i) {
        auto kernel = client.query_kernel(i);
        if (!kernel) {
            return kernel.error();
        }
        t.kernels.push_back({wire_string(kernel.value().name), kernel.value().kernel_object});
    }
    return t;
}

}  // namespace xenhsa::frontend::hsakmt
