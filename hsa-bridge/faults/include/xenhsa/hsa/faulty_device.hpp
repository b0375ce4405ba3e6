// Fault injection on the KFD seam. with_faults() wraps a KfdDevice so that every fallible
// call first asks `hook` whether to fail: the hook gets the call's site name (e.g.
// "kfd.map_to_gpu") and the errnos the libhsakmt adapter can return there (the thunk's
// statuses through status_map.cpp), and answers 0 to make the call or an errno to fail
// it with, without calling the device.
#ifndef XENHSA_HSA_FAULTY_DEVICE_HPP
#define XENHSA_HSA_FAULTY_DEVICE_HPP

#include <functional>
#include <memory>
#include <span>
#include <string_view>
#include <xenhsa/hsa/kfd_device.hpp>

namespace xenhsa::hsa {

using FaultHook = std::function<int(std::string_view site, std::span<const int> errnos)>;

std::unique_ptr<KfdDevice> with_faults(std::unique_ptr<KfdDevice> device, FaultHook hook);

}  // namespace xenhsa::hsa

#endif
