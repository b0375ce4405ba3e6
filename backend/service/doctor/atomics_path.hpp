// Whether a GPU can issue PCIe AtomicOps to the host, decided as Linux's
// pci_enable_atomic_ops_to_root() decides it: every switch port on the way up routes
// AtomicOps, no upstream port blocks them on egress, the root port completes 32- and
// 64-bit ones, and the GPU's AtomicOp Requester Enable is set (the kernel sets it when
// the path allows; a hypervisor or a passthrough setup may not). ROCm's user-mode queues
// need this; without it KFD refuses the GPU or its queues fail.
#ifndef XENHSA_BACKEND_SERVICE_DOCTOR_ATOMICS_PATH_HPP
#define XENHSA_BACKEND_SERVICE_DOCTOR_ATOMICS_PATH_HPP

#include <string>
#include <vector>

#include "pcie_config.hpp"

namespace xenhsa::backend::doctor {

struct PciFunction {
    std::string address;  // 0000:0b:00.0
    ParsedConfig config;
};

struct AtomicsVerdict {
    bool ok = false;
    std::string detail;  // what holds, or the link that breaks the chain
    std::string remedy;  // empty when ok
};

// `path`: the GPU first, then each function above it up to the root port.
AtomicsVerdict check_atomics_path(const std::vector<PciFunction>& path);

}  // namespace xenhsa::backend::doctor

#endif
