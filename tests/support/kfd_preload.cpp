// Linked into test programs that run the KFD seam in-process (label kfd): with
// XENHSA_TEST_KFD=pvh|pv (one variable: what ctest's ENVIRONMENT carries through
// gtest_discover_tests) the program starts itself again with the KFD shim preloaded, in
// that dom0 kind, its log in kfd-shim.log of the working directory, and
// XENHSA_TEST_DEVICE=kfd for its fixtures.
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

std::vector<std::string> own_arguments() {
    std::vector<std::string> args;
    const int fd = ::open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return args;
    }
    std::string all;
    char buffer[4096];
    for (ssize_t n = 0; (n = ::read(fd, buffer, sizeof buffer)) > 0;) {
        all.append(buffer, static_cast<size_t>(n));
    }
    ::close(fd);
    for (size_t at = 0; at < all.size();) {
        const size_t end = all.find('\0', at);
        args.push_back(all.substr(at, end - at));
        at = end == std::string::npos ? all.size() : end + 1;
    }
    return args;
}

__attribute__((constructor)) void preload_kfd_shim() {
    const char* kind = std::getenv("XENHSA_TEST_KFD");
    if (kind == nullptr || std::getenv("XENHSA_TEST_DEVICE") != nullptr) {
        return;  // not asked, or already started again
    }
    ::setenv("XENHSA_TEST_DEVICE", "kfd", 1);
    ::setenv("XENHSA_KFD_SHIM_MODE", kind, 1);
    ::setenv("LD_PRELOAD", XENHSA_KFD_SHIM_PATH, 1);
    ::setenv("XENHSA_KFD_SHIM_LOG", "kfd-shim.log", 0);  // in ctest's working directory
    const char* asan = std::getenv("ASAN_OPTIONS");
    const std::string options = std::string(asan != nullptr ? asan : "") +
                                (asan != nullptr && *asan != '\0' ? ":" : "") +
                                "verify_asan_link_order=0";
    ::setenv("ASAN_OPTIONS", options.c_str(), 1);
    std::vector<std::string> args = own_arguments();
    std::vector<char*> argv;
    for (std::string& a : args) {
        argv.push_back(a.data());
    }
    argv.push_back(nullptr);
    ::execv("/proc/self/exe", argv.data());
    std::fprintf(stderr, "XENHSA_TEST_KFD: cannot start again with the KFD shim: %s\n",
                 std::strerror(errno));
    std::_Exit(127);
}

}  // namespace
