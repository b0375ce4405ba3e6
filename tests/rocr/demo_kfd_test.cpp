// The README's demo (script/run-demo) on `xenhsa-backend --gpu kfd`: Debian's libhsakmt
// over the KFD shim in the workers, in the dom0 kind XENHSA_TEST_GPU names (label kfd).
// Its synthetic guests, rocminfo and the HSA program in guests, the kill and the revokes
// must all hold as on the software GPU.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "backend_gpu.hpp"
#include "spawned_process.hpp"

namespace xenhsa::testing {
namespace {

std::string read_all(const std::filesystem::path& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

TEST(DemoOnKfd, EveryCheckHoldsWithDebiansLibhsakmtInTheWorkers) {
    const BackendGpu gpu = backend_gpu(std::filesystem::temp_directory_path());
    ASSERT_TRUE(gpu.shim()) << "XENHSA_TEST_GPU names no KFD shim kind";
    const auto out = std::filesystem::temp_directory_path() /
                     ("xenhsa-demo-kfd-" + std::to_string(::getpid()) + ".out");
    std::vector<std::string> env;
    for (const std::string& kv : gpu.env) {
        if (kv.rfind("ASAN_OPTIONS=", 0) == 0) {
            continue;  // run-demo sets the backend's own, after the inherited one
        }
        // The shim goes into the backend only; the guests are the guest domain's.
        env.push_back(kv.rfind("LD_PRELOAD=", 0) == 0
                          ? "XENHSA_DEMO_KFD_SHIM=" + kv.substr(std::string("LD_PRELOAD=").size())
                          : kv);
    }
    for (const std::string& kv : builtin_kernel_env(gpu)) {
        env.push_back(kv);
    }
    if (std::find(gpu.env.begin(), gpu.env.end(), "XENHSA_KFD_SHIM_MODE=pv") != gpu.env.end()) {
        // Where grants cannot be pinned, the guests' GPU memory is lent from dom0's own grant
        // table: sized for the heavy guest as docs/operations.md says (the default 256
        // frames over 16 guests lends each 32 MiB).
        env.emplace_back("XENHSA_DEMO_SIM_ARGS=--grant-frames 1024");
        env.emplace_back("XENHSA_DEMO_BACKEND_ARGS=--max-guests 8");
    }
    const int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0);
    Process demo({XENHSA_RUN_DEMO, XENHSA_BIN_DIR}, fd, env);
    ::close(fd);
    const auto status = demo.wait(std::chrono::seconds(240));
    const std::string text = read_all(out);
    std::filesystem::remove(out);
    ASSERT_TRUE(status.has_value()) << text;
    EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << text;
    EXPECT_NE(text.find("every check held"), std::string::npos) << text;
    // rocminfo in a guest lists the shim's GPU, by its ISA (tests/kfd_shim/topology_facts.md).
    EXPECT_NE(text.find("amdgcn-amd-amdhsa--gfx900"), std::string::npos) << text;
}

}  // namespace
}  // namespace xenhsa::testing
