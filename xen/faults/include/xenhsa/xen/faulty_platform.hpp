// Fault injection on the hypervisor seam. with_faults() wraps each part of a Platform so
// that every fallible call first asks `hook` whether to fail: the hook gets the call's
// site name (e.g. "store.read") and the errnos the libxen* library can return there, and
// answers 0 to make the call or an errno to fail it with, without calling the library.
// Unmap, unbind and release never fail (the seam's rule), so they are not sites.
#ifndef XENHSA_XEN_FAULTY_PLATFORM_HPP
#define XENHSA_XEN_FAULTY_PLATFORM_HPP

#include <functional>
#include <span>
#include <string_view>
#include <xenhsa/xen/platform.hpp>

namespace xenhsa::xen {

using FaultHook = std::function<int(std::string_view site, std::span<const int> errnos)>;

// Every part present in `real` is wrapped; absent parts stay absent. The hook must outlive
// the platform and may be called from any thread that uses a part.
Platform with_faults(Platform real, FaultHook hook);

}  // namespace xenhsa::xen

#endif
