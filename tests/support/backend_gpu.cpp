#include "backend_gpu.hpp"

#include <cstdlib>
#include <cstring>
#include <xenhsa/hsa/builtin_kernel_env.hpp>

namespace xenhsa::testing {

BackendGpu backend_gpu(const std::filesystem::path& dir) {
    BackendGpu gpu;
    const char* kind = std::getenv("XENHSA_TEST_GPU");
    if (kind == nullptr || std::strncmp(kind, "kfd-", 4) != 0) {
        return gpu;
    }
    gpu.mode = "kfd";
    gpu.env.push_back(std::string("LD_PRELOAD=") + XENHSA_KFD_SHIM_PATH);
    gpu.env.push_back(std::string("XENHSA_KFD_SHIM_MODE=") + (kind + 4));
    gpu.env.push_back("XENHSA_KFD_SHIM_LOG=" + (dir / "kfd-shim.log").string());
    // A sanitized backend: the shim comes before the sanitizer's runtime in the list.
    const char* asan = std::getenv("ASAN_OPTIONS");
    gpu.env.push_back(std::string("ASAN_OPTIONS=") + (asan != nullptr ? asan : "") +
                      (asan != nullptr && *asan != '\0' ? ":" : "") + "verify_asan_link_order=0");
    return gpu;
}

std::vector<std::string> builtin_kernel_env(const BackendGpu& gpu) {
    std::vector<std::string> env;
    if (!gpu.shim()) {
        return env;
    }
    for (auto& [name, value] : hsa::builtin_kernel_env()) {
        env.push_back(name + "=" + value);
    }
    return env;
}

}  // namespace xenhsa::testing
