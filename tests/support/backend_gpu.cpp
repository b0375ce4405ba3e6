#include "backend_gpu.hpp"

#include <xenhsa/hsa/builtin_kernels.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>

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
    const char* names[] = {XENHSA_KERNEL_NAME_FILL,       XENHSA_KERNEL_NAME_COPY,
                           XENHSA_KERNEL_NAME_VECTOR_ADD, XENHSA_KERNEL_NAME_SAXPY,
                           XENHSA_KERNEL_NAME_CHECKSUM,   XENHSA_KERNEL_NAME_OOB_READ};
    for (int i = 0; i < XENHSA_KERNEL_COUNT_; ++i) {
        std::string name = "XENHSA_KERNEL_";
        for (const char* c = names[i]; *c != '\0'; ++c) {
            name += static_cast<char>(std::toupper(static_cast<unsigned char>(*c)));
        }
        char value[32];
        std::snprintf(value, sizeof value, "=0x%llx",
                      static_cast<unsigned long long>(XENHSA_BUILTIN_KERNEL_OBJECT(i)));
        env.push_back(name + value);
    }
    return env;
}

}  // namespace xenhsa::testing
