#include "machine.hpp"

#include <sys/sysinfo.h>
#include <unistd.h>

#include <string_view>

namespace xenhsa::kfd_shim {

namespace {

// "key value\n" lines, in the kernel's order (kfd_topology.c prints them so).
std::string lines(std::initializer_list<std::pair<std::string_view, uint64_t>> values) {
    std::string out;
    for (const auto& [key, value] : values) {
        out += key;
        out += ' ';
        out += std::to_string(value);
        out += '\n';
    }
    return out;
}

std::string cache(uint64_t processor, uint64_t level, uint64_t size_kib, uint64_t line,
                  uint64_t association, uint64_t type, std::string_view siblings) {
    return lines({{"processor_id_low", processor},
                  {"level", level},
                  {"size", size_kib},
                  {"cache_line_size", line},
                  {"cache_lines_per_tag", line == 0 ? 0 : 1},
                  {"association", association},
                  {"latency", 0},
                  {"type", type}}) +
           "sibling_map " + std::string(siblings) + "\n";
}

// `ones` "1," entries then `zeros` "0," entries, the last without its comma.
std::string sibling_map(uint32_t ones, uint32_t zeros, uint32_t repeat = 1) {
    std::string out;
    for (uint32_t r = 0; r < repeat; ++r) {
        for (uint32_t i = 0; i < ones + zeros; ++i) {
            out += i < ones ? "1," : "0,";
        }
    }
    out.pop_back();
    return out;
}

uint32_t cpu_count() {
    const long n = ::sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? static_cast<uint32_t>(n) : 1;
}

uint64_t system_memory() {
    struct sysinfo info {};
    if (::sysinfo(&info) != 0) {
        return 1ull << 33;
    }
    return static_cast<uint64_t>(info.totalram) * info.mem_unit;
}

SysfsTree build() {
    SysfsTree t;
    const std::string root = kTopologyRoot;
    const std::string n0 = root + "/nodes/0";
    const std::string n1 = root + "/nodes/1";
    t.files[root + "/generation_id"] = "2\n";
    t.files[root + "/system_properties"] = lines(
        {{"platform_oem", 35498446626881}, {"platform_id", 71791775140929}, {"platform_rev", 2}});
    t.dirs[root] = {"generation_id", "nodes", "system_properties"};
    t.dirs[root + "/nodes"] = {"0", "1"};

    // The CPU node. A 6.1 kernel lists no CPU caches, and the thunk then reads the host's
    // cache sysfs, which a VM may not have: the shim lists the caches of a Zen core.
    t.files[n0 + "/gpu_id"] = "0\n";
    t.files[n0 + "/name"] = "\n";
    t.files[n0 + "/properties"] = lines({{"cpu_cores_count", cpu_count()},
                                         {"simd_count", 0},
                                         {"mem_banks_count", 1},
                                         {"caches_count", 4},
                                         {"io_links_count", 1},
                                         {"p2p_links_count", 0},
                                         {"cpu_core_id_base", 0},
                                         {"simd_id_base", 0},
                                         {"max_waves_per_simd", 0},
                                         {"lds_size_in_kb", 0},
                                         {"gds_size_in_kb", 0},
                                         {"num_gws", 0},
                                         {"wave_front_size", 0},
                                         {"array_count", 0},
                                         {"simd_arrays_per_engine", 0},
                                         {"cu_per_simd_array", 0},
                                         {"simd_per_cu", 0},
                                         {"max_slots_scratch_cu", 0},
                                         {"gfx_target_version", 0},
                                         {"vendor_id", 0},
                                         {"device_id", 0},
                                         {"location_id", 0},
                                         {"domain", 0},
                                         {"drm_render_minor", 0},
                                         {"hive_id", 0},
                                         {"num_sdma_engines", 0},
                                         {"num_sdma_xgmi_engines", 0},
                                         {"num_sdma_queues_per_engine", 0},
                                         {"num_cp_queues", 0},
                                         {"max_engine_clk_ccompute", 0}});
    t.files[n0 + "/mem_banks/0/properties"] = lines({{"heap_type", 0},
                                                     {"size_in_bytes", system_memory()},
                                                     {"flags", 0},
                                                     {"width", 0},
                                                     {"mem_clk_max", 0}});
    t.files[n0 + "/caches/0/properties"] = cache(0, 1, 32, 64, 8, 5, "1,0");
    t.files[n0 + "/caches/1/properties"] = cache(0, 1, 32, 64, 8, 6, "1,0");
    t.files[n0 + "/caches/2/properties"] = cache(0, 2, 512, 64, 8, 7, "1,0");
    t.files[n0 + "/caches/3/properties"] = cache(0, 3, 16384, 64, 16, 7, "1,1");
    t.files[n0 + "/io_links/0/properties"] = lines({{"type", 2},
                                                    {"version_major", 0},
                                                    {"version_minor", 0},
                                                    {"node_from", 0},
                                                    {"node_to", 1},
                                                    {"weight", 20},
                                                    {"min_latency", 0},
                                                    {"max_latency", 0},
                                                    {"min_bandwidth", 312},
                                                    {"max_bandwidth", 16000},
                                                    {"recommended_transfer_size", 0},
                                                    {"flags", 15}});
    t.dirs[n0] = {"caches", "gpu_id", "io_links", "mem_banks", "name", "p2p_links", "properties"};
    t.dirs[n0 + "/mem_banks"] = {"0"};
    t.dirs[n0 + "/mem_banks/0"] = {"properties"};
    t.dirs[n0 + "/caches"] = {"0", "1", "2", "3"};
    for (const char* c : {"0", "1", "2", "3"}) {
        t.dirs[n0 + "/caches/" + c] = {"properties"};
    }
    t.dirs[n0 + "/io_links"] = {"0"};
    t.dirs[n0 + "/io_links/0"] = {"properties"};
    t.dirs[n0 + "/p2p_links"] = {};

    // The MI25.
    t.files[n1 + "/gpu_id"] = std::to_string(kGpuId) + "\n";
    t.files[n1 + "/name"] = "vega10\n";
    t.files[n1 + "/properties"] = lines({{"cpu_cores_count", 0},
                                         {"simd_count", 256},
                                         {"mem_banks_count", 1},
                                         {"caches_count", 4},
                                         {"io_links_count", 1},
                                         {"p2p_links_count", 0},
                                         {"cpu_core_id_base", 0},
                                         {"simd_id_base", 2147487744},
                                         {"max_waves_per_simd", 10},
                                         {"lds_size_in_kb", 64},
                                         {"gds_size_in_kb", 0},
                                         {"num_gws", 0},
                                         {"wave_front_size", 64},
                                         {"array_count", 4},
                                         {"simd_arrays_per_engine", 1},
                                         {"cu_per_simd_array", 16},
                                         {"simd_per_cu", 4},
                                         {"max_slots_scratch_cu", 32},
                                         {"gfx_target_version", 90000},
                                         {"vendor_id", 4098},
                                         {"device_id", 26720},
                                         {"location_id", 1024},
                                         {"domain", 0},
                                         {"drm_render_minor", kRenderMinor},
                                         {"hive_id", 0},
                                         {"num_sdma_engines", 2},
                                         {"num_sdma_xgmi_engines", 0},
                                         {"num_sdma_queues_per_engine", 2},
                                         {"num_cp_queues", 24},
                                         {"max_engine_clk_fcompute", 1500},
                                         {"local_mem_size", 0},
                                         {"fw_version", 421},
                                         {"capability", 8832},
                                         {"sdma_fw_version", 430},
                                         {"unique_id", 0},
                                         {"max_engine_clk_ccompute", 0}});
    t.files[n1 + "/mem_banks/0/properties"] = lines({{"heap_type", 1},
                                                     {"size_in_bytes", kVramBytes},
                                                     {"flags", 0},
                                                     {"width", 2048},
                                                     {"mem_clk_max", 945}});
    t.files[n1 + "/caches/0/properties"] = cache(2147487744, 1, 16, 0, 0, 9, sibling_map(1, 31));
    t.files[n1 + "/caches/1/properties"] = cache(2147487744, 1, 32, 0, 0, 10, sibling_map(3, 29));
    t.files[n1 + "/caches/2/properties"] = cache(2147487744, 1, 16, 0, 0, 9, sibling_map(3, 29));
    t.files[n1 + "/caches/3/properties"] =
        cache(2147487744, 2, 4096, 0, 0, 9, sibling_map(16, 16, 4));
    t.files[n1 + "/io_links/0/properties"] = lines({{"type", 2},
                                                    {"version_major", 0},
                                                    {"version_minor", 0},
                                                    {"node_from", 1},
                                                    {"node_to", 0},
                                                    {"weight", 20},
                                                    {"min_latency", 0},
                                                    {"max_latency", 0},
                                                    {"min_bandwidth", 312},
                                                    {"max_bandwidth", 16000},
                                                    {"recommended_transfer_size", 0},
                                                    {"flags", 1}});
    t.dirs[n1] = t.dirs[n0];
    t.dirs[n1 + "/mem_banks"] = {"0"};
    t.dirs[n1 + "/mem_banks/0"] = {"properties"};
    t.dirs[n1 + "/caches"] = {"0", "1", "2", "3"};
    for (const char* c : {"0", "1", "2", "3"}) {
        t.dirs[n1 + "/caches/" + c] = {"properties"};
    }
    t.dirs[n1 + "/io_links"] = {"0"};
    t.dirs[n1 + "/io_links/0"] = {"properties"};
    t.dirs[n1 + "/p2p_links"] = {};
    return t;
}

}  // namespace

const SysfsTree& sysfs_tree() {
    // Never destroyed: the C library's opens reach the shim until the process is gone.
    static const SysfsTree* tree = new SysfsTree(build());
    return *tree;
}

}  // namespace xenhsa::kfd_shim
