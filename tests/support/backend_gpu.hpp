// The GPU a test's xenhsa-backend runs on, chosen by XENHSA_TEST_GPU:
//   soft (default)  the software agent (`--gpu soft`);
//   kfd-pvh, kfd-pv Debian's libhsakmt over the KFD shim (tests/kfd_shim), preloaded into
//                   the backend (its workers inherit it), as a PVH or a PV dom0's KFD would
//                   treat grant mappings (`--gpu kfd`).
// ctest registers the GPU tests once per kind (label kfd for the shim's).
#ifndef XENHSA_TESTS_SUPPORT_BACKEND_GPU_HPP
#define XENHSA_TESTS_SUPPORT_BACKEND_GPU_HPP

#include <filesystem>
#include <string>
#include <vector>

namespace xenhsa::testing {

struct BackendGpu {
    std::string mode = "soft";     // --gpu
    std::vector<std::string> env;  // K=V for the backend's environment
    [[nodiscard]] bool shim() const { return mode == "kfd"; }
};

// For a backend whose files live in `dir` (the shim's log goes there: kfd-shim.log).
BackendGpu backend_gpu(const std::filesystem::path& dir);

// The environment a guest program needs to run the emulated GPU's built-in kernels
// (XENHSA_KERNEL_<NAME>=<kernel_object>, builtin_kernels.h), which a KFD backend does not
// report: empty for the software agent, which reports them itself.
std::vector<std::string> builtin_kernel_env(const BackendGpu& gpu);

}  // namespace xenhsa::testing

#endif
