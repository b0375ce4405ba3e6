// The environment xenhsa-run gives the program: the guest libhsakmt first on the loader
// path, the preload for rocminfo's two checks (with XENHSA_LSMOD, the lsmod stand-in it
// runs), and where the device is.
#ifndef XENHSA_FRONTEND_RUN_CHILD_ENV_HPP
#define XENHSA_FRONTEND_RUN_CHILD_ENV_HPP

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace xenhsa::frontend::run {

struct DeviceEnv {
    std::string sim_dir;  // sim: with domid
    std::optional<uint32_t> domid;
    bool xen = false;
    std::optional<uint32_t> devid;
    std::optional<uint32_t> backend_domid;
    std::optional<uint64_t> window_gib;
    std::optional<std::string> window_base;  // as the user wrote it (the library checks it)
    std::string log_level;
};

// The directory with libhsakmt.so.1, the preload and bin/lsmod, relative to this binary
// (../<libdir>/xenhsa in the build tree and when installed).
std::filesystem::path default_lib_dir();

// Sets the variables in this process's environment (the child inherits it). A variable
// the user already set keeps its other entries after ours.
void apply_child_env(const std::filesystem::path& lib_dir, const DeviceEnv& device);

}  // namespace xenhsa::frontend::run

#endif
