// Memory as ROCm programs in a guest see it: the program's own memory locked and copied
// through its GPU address, HIP's copies, the system pool and its limits, 4 GiB of it.
#include "rocr_fixture.hpp"

namespace xenhsa::testing::scenarios {
namespace {

using namespace std::chrono_literals;

// hsa_amd_memory_lock of the program's own malloc'd memory: the guest library moves its
// pages onto shared ones, and ROCr's copies through its GPU address (not the CPU's, as a
// userptr's on a discrete GPU) go into and out of the program's bytes, byte for byte; the
// bytes stay the program's after the unlock, and the ones around the range never change.
TEST_F(Rocr, LockedProgramMemoryIsCopiedThroughItsGpuAddress) {
    const Guest g = run_in_guest({XENHSA_ROCR_CHECK_BINARY, "--lock"});
    EXPECT_TRUE(scenario_passed(g.run)) << g.run.out;
    for (const char* check :
         {"lock-gpu-address", "locked-copy-round-trip", "locked-cpu-writes-seen",
          "unlocked-bytes-kept", "lock-neighbours-untouched"}) {
        EXPECT_TRUE(check_held(g.run, check)) << check;
    }
    EXPECT_TRUE(released_within(g.domid));
}

#ifdef XENHSA_HIP_CHECK_BINARY
// Debian's HIP runtime in a guest: it finds the GPU, and copies to and from the program's
// own memory, whose pages the guest library moves onto shared pages while ROCclr has them
// registered (hsaKmtRegisterMemory), byte for byte, as hipHostRegister'd and
// hipHostMalloc'd memory; the program's bytes around a registered range never change, and
// shared memory, which cannot move, is refused.
TEST_F(Rocr, HipCopiesToAndFromTheProgramsOwnMemoryByteForByte) {
    const Guest g = run_in_guest({XENHSA_HIP_CHECK_BINARY});
    expect_hip_copies_held(g);
}

// HIP's own GPU code (a device-to-device copy, hipMemset) cannot run on the software GPU:
// its queue stops as a GPU's does on an invalid code object, and HIP aborts the program
// with its message, never returning a wrong result.
class RocrHipGpuCode : public Rocr, public ::testing::WithParamInterface<std::string> {};

TEST_P(RocrHipGpuCode, AbortsTheProgramWithHipsMessage) {
    const std::string command = std::string("exec ") + XENHSA_HIP_CHECK_BINARY +
                                " --needs-gpu-code " + GetParam() + " 2>&1";
    const Guest g = run_in_guest({"/bin/sh", "-c", command});
    EXPECT_NE(g.run.out.find("info running " + GetParam()), std::string::npos) << g.run.out;
    EXPECT_TRUE(WIFEXITED(g.run.status) && WEXITSTATUS(g.run.status) == 128 + SIGABRT)
        << "exit status " << g.run.status << "\n"
        << g.run.out;
    EXPECT_NE(g.run.out.find("HSA_STATUS_ERROR_INVALID_CODE_OBJECT"), std::string::npos)
        << g.run.out;
    EXPECT_EQ(g.run.out.find("check gpu-code-aborted FAIL"), std::string::npos) << g.run.out;
    ASSERT_NE(g.domid, 0u);
    EXPECT_TRUE(released_within(g.domid));
}

INSTANTIATE_TEST_SUITE_P(Rocr, RocrHipGpuCode, ::testing::Values("d2d", "memset"));
#endif

// The system pool ROCr reports is what this guest can really have: on the embedded
// hypervisor's defaults its grant table (256 frames: 131,064 pages), less than its map
// share (262,144 pages) and far less than the host's RAM. An allocation past it is
// refused with ROCr's OUT_OF_RESOURCES and the guest library says once which limit and
// which setting raises it; the guest goes on. In a PV dom0 system memory is lent, so
// the lend share refuses it.
TEST_F(Rocr, TheSystemPoolIsWhatTheGuestCanHaveAndARefusalNamesItsLimit) {
    const std::string command =
        std::string("exec ") + XENHSA_ROCR_CHECK_BINARY + " --system-mib-refused 768 2>&1";
    const Guest g = run_in_guest({"/bin/sh", "-c", command});
    EXPECT_TRUE(scenario_passed(g.run)) << g.run.out;
    for (const char* check :
         {"system-alloc-refused", "system-alloc-after-refusal", "system-fill-after-refusal"}) {
        EXPECT_TRUE(check_held(g.run, check)) << check << "\n" << g.run.out;
    }
    const auto pool = system_pool(g.run.out);
    ASSERT_TRUE(pool) << g.run.out;
    constexpr uint64_t kGrantPages = 256 * 512 - 8;
    EXPECT_EQ(pool->first, kGrantPages * 4096) << g.run.out;
    // ROCr counts the system heap twice (its fine-grained and kernarg regions).
    EXPECT_LE(pool->second, 2 * pool->first) << g.run.out;
    EXPECT_NE(g.run.out.find("a system memory allocation of 768 MiB was refused"),
              std::string::npos)
        << g.run.out;
    if (pv_dom0()) {
        EXPECT_NE(g.run.out.find("max_lend_pages"), std::string::npos) << g.run.out;
    } else {
        EXPECT_NE(g.run.out.find("this guest's grants are used up"), std::string::npos)
            << g.run.out;
        EXPECT_NE(g.run.out.find("max_grant_frames"), std::string::npos) << g.run.out;
        EXPECT_NE(g.run.out.find("--grant-frames"), std::string::npos) << g.run.out;
    }
    ASSERT_NE(g.domid, 0u);
    EXPECT_TRUE(released_within(g.domid));
}

// A guest configured for it (grant table, RAM, the backend's map share and pinned pages,
// dom0's maptrack) allocates 4 GiB of system memory, which the GPU fills.
class RocrLargeMemory : public Rocr {
protected:
    static constexpr uint64_t kPages = 1400000;  // 4 GiB and what ROCr takes besides

    void SetUp() override {
        if (gpu_kind_is_shim()) {
            GTEST_SKIP() << "the grant and share limits are the same on the KFD path; run on soft";
        }
        run_options_ = {"--ram-pages", std::to_string(kPages)};
        Rocr::SetUp();
    }
    [[nodiscard]] std::vector<std::string> sim_arguments() const override {
        return {"--grant-frames", std::to_string(kPages / 512 + 1), "--maptrack-frames",
                std::to_string(kPages / 256 + 1)};
    }
    pid_t launch_backend(const std::vector<std::string>& command) override {
        std::vector<std::string> more = command;
        for (const char* quota : {"max_map_pages", "max_pinned_pages"}) {
            more.insert(more.end(), {"--set", std::string(quota) + "=" + std::to_string(kPages)});
        }
        more.insert(more.end(), {"--max-guests", "2"});
        return Rocr::launch_backend(more);
    }
    static bool gpu_kind_is_shim() {
        const char* gpu = std::getenv("XENHSA_TEST_GPU");
        return gpu != nullptr && std::string_view(gpu).rfind("kfd", 0) == 0;
    }
};

TEST_F(RocrLargeMemory, FourGibOfSystemMemoryAreAllocatedAndFilledByTheGpu) {
    const Guest g = run_in_guest({XENHSA_ROCR_CHECK_BINARY, "--system-mib", "4096"});
    EXPECT_TRUE(scenario_passed(g.run)) << g.run.out;
    EXPECT_TRUE(check_held(g.run, "system-alloc")) << g.run.out;
    EXPECT_TRUE(check_held(g.run, "system-fill")) << g.run.out;
    const auto pool = system_pool(g.run.out);
    ASSERT_TRUE(pool) << g.run.out;
    EXPECT_EQ(pool->first, kPages * 4096) << "the map share, smaller than the grants";
    ASSERT_NE(g.domid, 0u);
    EXPECT_TRUE(released_within(g.domid));
}

}  // namespace
}  // namespace xenhsa::testing::scenarios
