// The backend's built-in kernels, published to the program the documented way: after
// hsa_init() (hsaKmtOpenKFD), the environment holds XENHSA_KERNEL_<NAME>=0x<kernel_object>
// for each (name upper-cased: XENHSA_KERNEL_VECTOR_ADD), the value to put in an AQL
// dispatch packet's kernel_object. docs/guest-rocm.md describes their kernarg layouts.
#ifndef XENHSA_FRONTEND_HSAKMT_KERNELS_ENV_HPP
#define XENHSA_FRONTEND_HSAKMT_KERNELS_ENV_HPP

#include <span>

#include "topology.hpp"

namespace xenhsa::frontend::hsakmt {

void export_kernels(std::span<const KernelEntry> kernels);

}  // namespace xenhsa::frontend::hsakmt

#endif
