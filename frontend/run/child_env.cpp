#include "child_env.hpp"

#include <cstdlib>

namespace xenhsa::frontend::run {

namespace {

void prepend(const char* name, const std::string& value, char separator) {
    const char* old = std::getenv(name);
    std::string joined = value;
    if (old != nullptr && *old != '\0') {
        joined += separator;
        joined += old;
    }
    ::setenv(name, joined.c_str(), 1);
}

#ifdef XENHSA_RUN_ASAN_RUNTIME
// Last: of repeated options, ASan takes the last one.
void append(const char* name, const std::string& value, char separator) {
    const char* old = std::getenv(name);
    std::string joined = old != nullptr && *old != '\0' ? std::string(old) + separator : "";
    joined += value;
    ::setenv(name, joined.c_str(), 1);
}
#endif

void set(const char* name, const std::string& value) { ::setenv(name, value.c_str(), 1); }

}  // namespace

std::filesystem::path default_lib_dir() {
    std::error_code ec;
    const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (ec) {
        return XENHSA_RUN_LIBDIR;
    }
    return (exe.parent_path().parent_path() / XENHSA_RUN_LIBDIR).lexically_normal();
}

void apply_child_env(const std::filesystem::path& lib_dir, const DeviceEnv& device) {
    prepend("LD_LIBRARY_PATH", lib_dir.string(), ':');
    std::string preload = (lib_dir / "libxenhsa-kfd-shim.so").string();
#ifdef XENHSA_RUN_ASAN_RUNTIME
    // A sanitized build's libhsakmt needs ASan's runtime loaded first, and the program is
    // not sanitized. ROCr keeps memory until exit (HIP never shuts it down), which is not
    // a leak of ours, whatever the caller's ASAN_OPTIONS say.
    preload = std::string(XENHSA_RUN_ASAN_RUNTIME) + ":" + preload;
    append("ASAN_OPTIONS", "detect_leaks=0", ':');
#endif
    prepend("LD_PRELOAD", preload, ':');
    set("XENHSA_LSMOD", (lib_dir / "bin" / "lsmod").string());
    if (!device.sim_dir.empty()) {
        set("XENHSA_SIM_DIR", device.sim_dir);
        ::unsetenv("XENHSA_XEN");
    }
    if (device.domid) {
        set("XENHSA_DOMID", std::to_string(*device.domid));
    }
    if (device.xen) {
        set("XENHSA_XEN", "1");
        ::unsetenv("XENHSA_SIM_DIR");
    }
    if (device.devid) {
        set("XENHSA_DEVID", std::to_string(*device.devid));
    }
    if (device.backend_domid) {
        set("XENHSA_BACKEND_DOMID", std::to_string(*device.backend_domid));
    }
    if (device.window_base) {
        set("XENHSA_WINDOW_BASE", *device.window_base);
    }
    if (device.window_gib) {
        set("XENHSA_WINDOW_GIB", std::to_string(*device.window_gib));
    }
    if (!device.log_level.empty()) {
        set("XENHSA_LOG_LEVEL", device.log_level);
    }
}

}  // namespace xenhsa::frontend::run
