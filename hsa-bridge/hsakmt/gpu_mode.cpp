#include <xenhsa/hsa/gpu_mode.hpp>

namespace xenhsa::hsa {

Result<GpuMode> parse_gpu_mode(std::string_view text) {
    if (text == "auto") {
        return GpuMode::auto_;
    }
    if (text == "kfd") {
        return GpuMode::kfd;
    }
    if (text == "soft") {
        return GpuMode::soft;
    }
    return errc(std::errc::invalid_argument);
}

GpuMode resolve_gpu_mode(GpuMode requested, bool kfd_opens) noexcept {
    if (requested == GpuMode::auto_) {
        return kfd_opens ? GpuMode::kfd : GpuMode::soft;
    }
    return requested;
}

std::string_view gpu_mode_name(GpuMode mode) noexcept {
    switch (mode) {
        case GpuMode::auto_:
            return "auto";
        case GpuMode::kfd:
            return "kfd";
        case GpuMode::soft:
            return "soft";
    }
    return "?";
}

}  // namespace xenhsa::hsa
