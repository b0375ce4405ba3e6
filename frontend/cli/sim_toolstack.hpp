// The toolstack's part for the embedded hypervisor, shared by xenhsa-guest and
// xenhsa-run: plug a xenhsa device for a guest domain from a short-lived child attached to
// dom0, so the calling process never holds dom0's rights.
#ifndef XENHSA_FRONTEND_CLI_SIM_TOOLSTACK_HPP
#define XENHSA_FRONTEND_CLI_SIM_TOOLSTACK_HPP

#include <cstdint>
#include <string>
#include <xenhsa/frontend/result.hpp>
#include <xenhsa/xen/types.hpp>

namespace xenhsa::frontend::cli {

// add_device() (toolstack.hpp) as dom0 of the simulator in `sim_dir`, in a child process.
Result<void> plug_sim_device(const std::string& sim_dir, xen::DomId backend, xen::DomId frontend,
                             uint32_t devid);

}  // namespace xenhsa::frontend::cli

#endif
