// The machine the shim emulates: a 2-core x86 CPU node and one AMD Radeon Instinct MI25
// (Vega 10, gfx900, PCI 1002:6860 rev 00) behind PCIe, as Linux 6.1's amdkfd and amdgpu
// describe them. Every value and its source: topology_facts.md.
#ifndef XENHSA_TESTS_KFD_SHIM_MACHINE_HPP
#define XENHSA_TESTS_KFD_SHIM_MACHINE_HPP

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace xenhsa::kfd_shim {

inline constexpr uint32_t kGpuId = 22124;               // nodes/1/gpu_id (gem5's Vega10)
inline constexpr uint32_t kGpuNode = 1;                 // its sysfs node
inline constexpr uint32_t kRenderMinor = 128;           // /dev/dri/renderD128
inline constexpr uint32_t kDrmMajor = 226;              // DRM character devices
inline constexpr uint32_t kKfdMajor = 234;              // /dev/kfd (dynamic on Linux; any)
inline constexpr uint64_t kVramBytes = 17163091968ull;  // mem_banks/0 of the GPU
inline constexpr uint64_t kGpuVmLimit = (uint64_t{1} << 47) - 1;  // canonical lower half
inline constexpr uint64_t kGpuVmBase = 0x200000;                  // AMDGPU_VA_RESERVED_SIZE
inline constexpr uint32_t kDoorbellSliceBytes = 8192;  // SOC15: 1024 doorbells of 8 bytes

inline constexpr const char* kTopologyRoot = "/sys/devices/virtual/kfd/kfd/topology";
inline constexpr const char* kKfdPath = "/dev/kfd";
inline constexpr const char* kRenderPath = "/dev/dri/renderD128";
// libdrm's drmNodeIsDRM: a DRM minor has this directory.
inline constexpr const char* kRenderSysfsDrm = "/sys/dev/char/226:128/device/drm";

// The KFD sysfs topology: each file's path and exact contents, and each directory's
// entries (sorted), under kTopologyRoot.
struct SysfsTree {
    std::map<std::string, std::string> files;
    std::map<std::string, std::vector<std::string>> dirs;
};
const SysfsTree& sysfs_tree();

}  // namespace xenhsa::kfd_shim

#endif
