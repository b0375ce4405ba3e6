// Which GPU backend a worker uses: the host's KFD (libhsakmt adapter) or the software AQL
// agent. Composition roots parse the setting (e.g. a --gpu option) and resolve `auto`
// once they know whether /dev/kfd opens.
#ifndef XENHSA_HSA_GPU_MODE_HPP
#define XENHSA_HSA_GPU_MODE_HPP

#include <string_view>
#include <xenhsa/hsa/types.hpp>

namespace xenhsa::hsa {

enum class GpuMode : uint8_t {
    auto_,  // kfd when /dev/kfd opens, else soft
    kfd,    // the host's KFD; failing to open it is an error
    soft,   // the software AQL agent
};

// "auto", "kfd" or "soft" (exactly, lower case); EINVAL otherwise.
Result<GpuMode> parse_gpu_mode(std::string_view text);

// The backend to use: `requested` unless it is auto_, which becomes kfd when the KFD
// device opened and soft when it did not. Never returns auto_.
[[nodiscard]] GpuMode resolve_gpu_mode(GpuMode requested, bool kfd_opens) noexcept;

// "auto", "kfd" or "soft".
[[nodiscard]] std::string_view gpu_mode_name(GpuMode mode) noexcept;

}  // namespace xenhsa::hsa

#endif
