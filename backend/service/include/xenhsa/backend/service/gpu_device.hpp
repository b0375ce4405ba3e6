// The worker's GPU seam instance: one KfdDevice per worker process (on KFD, its own KFD
// process and GPU address space). --gpu kfd: libhsakmt; soft: the software agent; auto:
// kfd when /dev/kfd opens, else soft. --soft-gfx: the ISA the software agent reports.
#ifndef XENHSA_BACKEND_SERVICE_GPU_DEVICE_HPP
#define XENHSA_BACKEND_SERVICE_GPU_DEVICE_HPP

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <xenhsa/hsa/kfd_device.hpp>

namespace xenhsa::backend::service {

struct OpenedGpu {
    std::unique_ptr<hsa::KfdDevice> device;
    std::string kind;  // "kfd" or "soft"
};

// A readable error for a mode this build cannot serve, or nullopt.
std::optional<std::string> check_gpu_mode(std::string_view mode);
// nullopt with `error` set when the chosen seam cannot be opened. `soft_gfx` and
// `agent_threads` (workgroup workers, 0: the agent's default) are used when the seam is
// the software agent.
std::optional<OpenedGpu> open_gpu(std::string_view mode, std::string_view soft_gfx,
                                  uint32_t agent_threads, std::string& error);

}  // namespace xenhsa::backend::service

#endif
