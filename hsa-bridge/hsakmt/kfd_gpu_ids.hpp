// Which gpu_id (KFD's name of a GPU in its ioctls) each GPU node has. Thunk 5.2.3 keeps
// them private, so they come from the KFD topology in sysfs, read at open (before the
// worker confines itself): each node's gpu_id and its render minor, which the thunk's node
// properties also carry (DrmRenderMinor).
#ifndef XENHSA_HSA_KMT_KFD_GPU_IDS_HPP
#define XENHSA_HSA_KMT_KFD_GPU_IDS_HPP

#include <cstdint>
#include <map>
#include <string>

namespace xenhsa::hsa::kmt {

// Render minor -> gpu_id of every GPU node under `topology` (sysfs'
// .../kfd/topology by default); empty when it cannot be read.
std::map<int32_t, uint32_t> gpu_ids_by_render_minor(
    const std::string& topology = "/sys/devices/virtual/kfd/kfd/topology");

}  // namespace xenhsa::hsa::kmt

#endif
