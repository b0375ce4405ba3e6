#include "hsakmt_convert.hpp"

#include <xenhsa/proto/common.h>

#include <cstring>

namespace xenhsa::hsa::kmt {

xenhsa_version_info convert_version(const HsaVersionInfo& v) {
    xenhsa_version_info out{};
    out.kfd_major = v.KernelInterfaceMajorVersion;
    out.kfd_minor = v.KernelInterfaceMinorVersion;
    out.proto_version = XENHSA_PROTO_VERSION;
    out.gpu_backend = XENHSA_GPU_BACKEND_KFD;
    return out;
}

xenhsa_system_props convert_system(const HsaSystemProperties& s) {
    xenhsa_system_props out{};
    out.num_nodes = s.NumNodes;
    out.platform_oem = s.PlatformOem;
    out.platform_id = s.PlatformId;
    out.platform_rev = s.PlatformRev;
    out.xnack_enabled = 0;  // xenhsa pins; it never relies on GPU fault retry
    out.num_kernels = 0;    // KFD has no built-in kernels
    return out;
}

xenhsa_node_props convert_node(const HsaNodeProperties& p) {
    xenhsa_node_props out{};
    out.num_cpu_cores = p.NumCPUCores;
    out.num_fcompute_cores = p.NumFComputeCores;
    out.num_memory_banks = p.NumMemoryBanks;
    out.num_caches = p.NumCaches;
    out.num_io_links = p.NumIOLinks;
    out.ccompute_id_lo = p.CComputeIdLo;
    out.fcompute_id_lo = p.FComputeIdLo;
    out.capability = p.Capability.Value;
    out.max_waves_per_simd = p.MaxWavesPerSIMD;
    out.lds_size_kb = p.LDSSizeInKB;
    out.gds_size_kb = p.GDSSizeInKB;
    out.wavefront_size = p.WaveFrontSize;
    out.num_shader_banks = p.NumShaderBanks;
    out.num_arrays = p.NumArrays;
    out.num_cu_per_array = p.NumCUPerArray;
    out.num_simd_per_cu = p.NumSIMDPerCU;
    out.max_slots_scratch_cu = p.MaxSlotsScratchCU;
    out.engine_id = p.EngineId.Value;
    out.vendor_id = p.VendorId;
    out.device_id = p.DeviceId;
    out.location_id = p.LocationId;
    out.domain = p.Domain;
    out.local_mem_size = p.LocalMemSize;
    out.max_engine_clock_mhz_fcompute = p.MaxEngineClockMhzFCompute;
    out.max_engine_clock_mhz_ccompute = p.MaxEngineClockMhzCCompute;
    out.drm_render_minor = p.DrmRenderMinor;
    out.num_sdma_engines = p.NumSdmaEngines;
    out.num_sdma_xgmi_engines = p.NumSdmaXgmiEngines;
    out.num_sdma_queues_per_engine = p.NumSdmaQueuesPerEngine;
    out.num_cp_queues = p.NumCpQueues;
    out.num_gws = p.NumGws;
    out.ucode_engine_versions = p.uCodeEngineVersions.Value;
    out.vgpr_size_per_cu = p.VGPRSizePerCU;
    out.sgpr_size_per_cu = p.SGPRSizePerCU;
    // The host's thunk (5.2.3) has no NumXcc; a GPU node has at least one.
    out.num_xcc = p.NumFComputeCores != 0 ? 1 : 0;
    out.debug_properties = p.DebugProperties.Value;
    out.hive_id = p.HiveID;
    out.unique_id = p.UniqueID;
    utf16_to_utf8(p.MarketingName, HSA_PUBLIC_NAME_SIZE, out.marketing_name,
                  sizeof(out.marketing_name));
    copy_ascii(p.AMDName, HSA_PUBLIC_NAME_SIZE, out.amd_name, sizeof(out.amd_name));
    return out;
}

xenhsa_mem_bank convert_mem_bank(const HsaMemoryProperties& m) {
    xenhsa_mem_bank out{};
    out.heap_type = static_cast<uint32_t>(m.HeapType);
    out.flags = m.Flags.MemoryProperty;
    out.size_bytes = m.SizeInBytes;
    out.width = m.Width;
    out.mem_clock_max = m.MemoryClockMax;
    out.virtual_base = m.VirtualBaseAddress;
    return out;
}

xenhsa_cache convert_cache(const HsaCacheProperties& c) {
    xenhsa_cache out{};
    out.processor_id_low = c.ProcessorIdLow;
    out.level = c.CacheLevel;
    out.size = c.CacheSize;
    out.line_size = c.CacheLineSize;
    out.lines_per_tag = c.CacheLinesPerTag;
    out.associativity = c.CacheAssociativity;
    out.latency = c.CacheLatency;
    out.type = c.CacheType.Value;
    for (size_t i = 0; i < HSA_CPU_SIBLINGS; ++i) {
        if (c.SiblingMap[i] != 0) {
            out.sibling_bits[i / 64] |= uint64_t{1} << (i % 64);
        }
    }
    return out;
}

xenhsa_io_link convert_io_link(const HsaIoLinkProperties& l) {
    xenhsa_io_link out{};
    out.type = static_cast<uint32_t>(l.IoLinkType);
    out.version_major = l.VersionMajor;
    out.version_minor = l.VersionMinor;
    out.node_from = l.NodeFrom;
    out.node_to = l.NodeTo;
    out.weight = l.Weight;
    out.min_latency = l.MinimumLatency;
    out.max_latency = l.MaximumLatency;
    out.min_bandwidth = l.MinimumBandwidth;
    out.max_bandwidth = l.MaximumBandwidth;
    out.rec_transfer_size = l.RecTransferSize;
    out.flags = l.Flags.LinkProperty;
    return out;
}

xenhsa_clock_counters convert_clock(const HsaClockCounters& c) {
    xenhsa_clock_counters out{};
    out.gpu_clock_counter = c.GPUClockCounter;
    out.cpu_clock_counter = c.CPUClockCounter;
    out.system_clock_counter = c.SystemClockCounter;
    out.system_clock_frequency_hz = c.SystemClockFrequencyHz;
    return out;
}

void utf16_to_utf8(const uint16_t* in, size_t n, uint8_t* out, size_t out_size) {
    if (out_size == 0) {
        return;
    }
    std::memset(out, 0, out_size);
    size_t pos = 0;
    for (size_t i = 0; i < n && in[i] != 0; ++i) {
        uint32_t cp = in[i];
        if (cp >= 0xD800 && cp <= 0xDBFF && i + 1 < n && in[i + 1] >= 0xDC00 &&
            in[i + 1] <= 0xDFFF) {
            cp = 0x10000 + ((cp - 0xD800) << 10) + (in[i + 1] - 0xDC00u);
            ++i;
        } else if (cp >= 0xD800 && cp <= 0xDFFF) {
            cp = 0xFFFD;
        }
        uint8_t bytes[4];
        size_t len = 0;
        if (cp < 0x80) {
            bytes[len++] = static_cast<uint8_t>(cp);
        } else if (cp < 0x800) {
            bytes[len++] = static_cast<uint8_t>(0xC0 | cp >> 6);
            bytes[len++] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
            bytes[len++] = static_cast<uint8_t>(0xE0 | cp >> 12);
            bytes[len++] = static_cast<uint8_t>(0x80 | (cp >> 6 & 0x3F));
            bytes[len++] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
        } else {
            bytes[len++] = static_cast<uint8_t>(0xF0 | cp >> 18);
            bytes[len++] = static_cast<uint8_t>(0x80 | (cp >> 12 & 0x3F));
            bytes[len++] = static_cast<uint8_t>(0x80 | (cp >> 6 & 0x3F));
            bytes[len++] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
        }
        if (pos + len >= out_size) {
            break;  // keep the NUL, never split a character
        }
        std::memcpy(out + pos, bytes, len);
        pos += len;
    }
}

void copy_ascii(const uint8_t* in, size_t n, uint8_t* out, size_t out_size) {
    if (out_size == 0) {
        return;
    }
    std::memset(out, 0, out_size);
    for (size_t i = 0; i < n && i + 1 < out_size && in[i] != 0; ++i) {
        out[i] = in[i] < 0x80 ? in[i] : static_cast<uint8_t>('?');
    }
}

}  // namespace xenhsa::hsa::kmt
