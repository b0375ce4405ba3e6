// Topology from the snapshot taken at open (hsaKmtAcquireSystemProperties).
#include <algorithm>
#include <new>
#include <vector>

#include "hsakmt_convert.hpp"
#include "hsakmt_device.hpp"
#include "kmt_call.hpp"

namespace xenhsa::hsa::kmt {

Result<xenhsa_version_info> HsakmtDevice::version() {
    HsaVersionInfo v{};
    if (auto e = call([&] { return hsaKmtGetVersion(&v); })) {
        return e;
    }
    return convert_version(v);
}

Result<xenhsa_system_props> HsakmtDevice::system() { return convert_system(system_); }

Result<HsaNodeProperties> HsakmtDevice::node_properties(uint32_t node) {
    if (node >= system_.NumNodes) {
        return errc(std::errc::no_such_file_or_directory);
    }
    HsaNodeProperties p{};
    if (auto e = call([&] { return hsaKmtGetNodeProperties(node, &p); })) {
        return e;
    }
    return p;
}

Result<xenhsa_node_props> HsakmtDevice::node(uint32_t node) {
    auto p = node_properties(node);
    if (!p) {
        return p.error();
    }
    return convert_node(p.value());
}

namespace {

// One element of a per-node property array the thunk fills in whole.
template <class T, class Fetch>
Result<T> element(uint32_t index, uint32_t count, Fetch&& fetch) {
    if (index >= count) {
        return errc(std::errc::no_such_file_or_directory);
    }
    try {
        std::vector<T> all(count);
        if (auto e = call([&] { return fetch(all.data()); })) {
            return e;
        }
        return all[index];
    } catch (const std::bad_alloc&) {
        return errc(std::errc::not_enough_memory);
    }
}

}  // namespace

Result<xenhsa_mem_bank> HsakmtDevice::mem_bank(uint32_t node, uint32_t index) {
    auto p = node_properties(node);
    if (!p) {
        return p.error();
    }
    auto bank = element<HsaMemoryProperties>(
        index, p.value().NumMemoryBanks, [&](HsaMemoryProperties* out) {
            return hsaKmtGetNodeMemoryProperties(node, p.value().NumMemoryBanks, out);
        });
    if (!bank) {
        return bank.error();
    }
    xenhsa_mem_bank out = convert_mem_bank(bank.value());
    // A guest never reaches the backend's VRAM with its CPU (it is not shared with it): a
    // large BAR's public frame buffer is private to the guest, so that ROCr there does not
    // ask for device memory with host access, which the guest library must refuse.
    if (out.heap_type == XENHSA_HEAP_FB_PUBLIC) {
        out.heap_type = XENHSA_HEAP_FB_PRIVATE;
    }
    return out;
}

Result<xenhsa_cache> HsakmtDevice::cache(uint32_t node, uint32_t index) {
    auto p = node_properties(node);
    if (!p) {
        return p.error();
    }
    // As ROCr asks: the node's first CPU core, or its first GPU compute unit.
    const HSAuint32 processor =
        p.value().NumCPUCores != 0 ? p.value().CComputeIdLo : p.value().FComputeIdLo;
    auto c = element<HsaCacheProperties>(index, p.value().NumCaches, [&](HsaCacheProperties* out) {
        return hsaKmtGetNodeCacheProperties(node, processor, p.value().NumCaches, out);
    });
    if (!c) {
        return c.error();
    }
    return convert_cache(c.value());
}

Result<xenhsa_io_link> HsakmtDevice::io_link(uint32_t node, uint32_t index) {
    auto p = node_properties(node);
    if (!p) {
        return p.error();
    }
    auto link =
        element<HsaIoLinkProperties>(index, p.value().NumIOLinks, [&](HsaIoLinkProperties* out) {
            return hsaKmtGetNodeIoLinkProperties(node, p.value().NumIOLinks, out);
        });
    if (!link) {
        return link.error();
    }
    return convert_io_link(link.value());
}

Result<xenhsa_clock_counters> HsakmtDevice::clock(uint32_t node) {
    if (node >= system_.NumNodes) {
        return errc(std::errc::no_such_file_or_directory);
    }
    HsaClockCounters c{};
    if (auto e = call([&] { return hsaKmtGetClockCounters(node, &c); })) {
        return e;
    }
    if (c.SystemClockFrequencyHz == 0) {
        return errc(std::errc::io_error);  // the wire promises a nonzero frequency
    }
    return convert_clock(c);
}

Result<xenhsa_tile_config> HsakmtDevice::tile_config(uint32_t node) {
    if (node >= system_.NumNodes) {
        return errc(std::errc::no_such_file_or_directory);
    }
    xenhsa_tile_config out{};
    HsaGpuTileConfig c{};
    c.TileConfig = out.tile_config;
    c.NumTileConfigs = XENHSA_TILE_CONFIGS_MAX;
    c.MacroTileConfig = out.macro_tile_config;
    c.NumMacroTileConfigs = XENHSA_MACRO_TILE_CONFIGS_MAX;
    if (auto e = call([&] { return hsaKmtGetTileConfig(node, &c); })) {
        return e;
    }
    out.gb_addr_config = c.GbAddrConfig;
    out.num_banks = c.NumBanks;
    out.num_ranks = c.NumRanks;
    out.num_tile_configs = std::min(c.NumTileConfigs, XENHSA_TILE_CONFIGS_MAX);
    out.num_macro_tile_configs = std::min(c.NumMacroTileConfigs, XENHSA_MACRO_TILE_CONFIGS_MAX);
    return out;
}

Result<xenhsa_kernel_info> HsakmtDevice::kernel(uint32_t) {
    return errc(std::errc::no_such_file_or_directory);  // KFD has no built-in kernels
}

}  // namespace xenhsa::hsa::kmt
