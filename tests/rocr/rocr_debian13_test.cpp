// Debian 13's ROCm in a guest, beside Debian 12's: its unmodified rocminfo, ROCr 6.1.2
// (libhsa-runtime64-1) and HIP over the same guest libhsakmt. They run from a Debian 13 root
// (debian13-root.sh: mmdebstrap from Debian's archive, cached between runs) with that
// root's loader and libraries, xenhsa's guest library first on the path, as a Debian 13
// guest would have them; xenhsa-run starts each as a guest domain as for Debian 12's.
#include <cstdlib>
#include <filesystem>

#include "rocr_fixture.hpp"

namespace xenhsa::testing::scenarios {
namespace {

namespace fs = std::filesystem;

// The root, made on first use; nullopt (and why) when it cannot be made here.
struct Root {
    std::optional<fs::path> path;
    std::string why;
};

const Root& debian13_root() {
    static const Root root = [] {
        Root r;
        const std::string out = run_text(std::string("'") + XENHSA_DEBIAN13_ROOT_SCRIPT + "' 2>&1");
        const std::string last = out.substr(out.rfind('\n', out.size() - 2) + 1);
        const fs::path path = last.substr(0, last.find('\n'));
        if (!out.empty() && fs::exists(path / ".complete")) {
            r.path = path;
        } else {
            r.why = out;
        }
        return r;
    }();
    return root;
}

class Debian13 : public Rocr {
protected:
    void SetUp() override {
        const Root& root = debian13_root();
        if (!root.path) {
            // debian13-root.sh says why: no mmdebstrap, or no way to Debian's archive.
            GTEST_SKIP() << "no Debian 13 root: " << root.why;
        }
        root_ = *root.path;
        Rocr::SetUp();
    }

    [[nodiscard]] fs::path lib() const { return root_ / "usr/lib/x86_64-linux-gnu"; }

    // `program` (a path inside the root, or one of the build's) under the root's loader;
    // `with_stderr`: its stderr too (where ROCr says why it aborts).
    std::vector<std::string> in_root(const std::string& program,
                                     const std::vector<std::string>& args, bool with_stderr) const {
        const std::string guest_lib = fs::path(XENHSA_GUEST_LIBHSAKMT).parent_path().string();
        std::vector<std::string> command{
            (lib() / "ld-linux-x86-64.so.2").string(), "--library-path",
            guest_lib + ":" + lib().string() + ":" + XENHSA_HOST_LIBDIR, program};
        command.insert(command.end(), args.begin(), args.end());
        if (!with_stderr) {
            return command;
        }
        std::string line = "exec";
        for (const std::string& word : command) {
            line += " '" + word + "'";
        }
        return {"/bin/sh", "-c", line + " 2>&1"};
    }
    Guest run_in_debian13(const std::string& program, const std::vector<std::string>& args = {},
                          bool with_stderr = false) {
        return run_in_guest(in_root(program, args, with_stderr));
    }

    fs::path root_;
};

// The guest library exports every function of Debian 13's libhsakmt1 (6.2.4) and of
// Debian 12's (5.2.3) under their version node, and nothing else but the three libdrm
// calls ROCr 6 makes with its device handles.
TEST_F(Debian13, ExportsAreDebian12sAndDebian13sLibhsakmt) {
    const auto debian13 = dynamic_exports((lib() / "libhsakmt.so.1").string());
    const auto debian12 = dynamic_exports(XENHSA_DEBIAN_LIBHSAKMT);
    ASSERT_GE(debian13.size(), 80u) << "objdump -T " << (lib() / "libhsakmt.so.1");
    std::set<std::string> both = debian12;
    both.insert(debian13.begin(), debian13.end());
    for (const char* drm : {"amdgpu_bo_import", "amdgpu_device_get_fd", "amdgpu_query_gpu_info"}) {
        both.insert(std::string(drm) + " XENHSA_AMDGPU_1");
    }
    EXPECT_EQ(dynamic_exports(XENHSA_GUEST_LIBHSAKMT), both);
}

TEST_F(Debian13, RocminfoListsTheGpuAgent) {
    const auto query = topology();
    ASSERT_TRUE(query.count("1")) << "no node 1 in xenhsa-guest topology";
    const Guest g = run_in_debian13((root_ / "usr/bin/rocminfo").string());
    ASSERT_TRUE(g.run.ok()) << g.run.out;
    EXPECT_NE(g.run.out.find("ROCk module is loaded"), std::string::npos) << g.run.out;
    const auto fields = gpu_agent_fields(g.run.out);
    ASSERT_FALSE(fields.empty()) << "no GPU agent in rocminfo's listing:\n" << g.run.out;
    ASSERT_TRUE(fields.count("Name") && fields.at("Name").size() >= 2) << g.run.out;
    EXPECT_EQ(fields.at("Name").front().rfind("gfx", 0), 0u);
    EXPECT_EQ(fields.at("Name").back(),
              "amdgcn-amd-amdhsa--" + fields.at("Name").front() + ":xnack-");
    ASSERT_TRUE(fields.count("Compute Unit"));
    EXPECT_EQ(fields.at("Compute Unit").front(), word_value(query.at("1"), "cus").value_or("?"));
    // ROCr 6 read the interface version this library implements (1.11: no dma-buf).
    EXPECT_NE(g.run.out.find("DMAbuf Support:          NO"), std::string::npos) << g.run.out;
    EXPECT_TRUE(released_within(g.domid));
}

// The HSA program of the Debian 12 tests, over ROCr 6.1.2: kernels, ROCr's own blit
// kernels (device copies, fills), SDMA copies, timestamps, registered memory.
TEST_F(Debian13, HsaProgramComputesCopiesAndLeavesNothing) {
    for (const char* option : {"--blits", "--profile", "--lock"}) {  // --lock: the heap too
        const Guest g = run_in_debian13(XENHSA_ROCR_CHECK_BINARY, {option});
        EXPECT_TRUE(scenario_passed(g.run)) << option << "\n" << g.run.out;
        for (const char* check :
             {"agents", "vector-add", "fill-device", "async-copy", "shut-down"}) {
            EXPECT_NE(g.run.out.find(std::string("check ") + check + " ok"), std::string::npos)
                << option << ": " << check << "\n"
                << g.run.out;
        }
        EXPECT_TRUE(released_within(g.domid));
    }
}

// A GPU fault reaches ROCr 6 as on a GPU: its VM-fault handler names the address and aborts.
TEST_F(Debian13, AGpuFaultAbortsWithRocrsMessage) {
    const Guest g = run_in_debian13(XENHSA_ROCR_CHECK_BINARY, {"--fault"}, true);
    EXPECT_NE(g.run.out.find("info dispatching-fault"), std::string::npos) << g.run.out;
    EXPECT_TRUE(WIFEXITED(g.run.status) && WEXITSTATUS(g.run.status) == 128 + SIGABRT)
        << "exit status " << g.run.status << "\n"
        << g.run.out;
    EXPECT_NE(g.run.out.find("Memory access fault by GPU node-1"), std::string::npos) << g.run.out;
    EXPECT_TRUE(released_within(g.domid));
}

// The backend's worker killed while ROCr 6 waits on a signal: the guest library reports a
// GPU hang through the memory events, and ROCr 6's VM-fault handler aborts the program
// within a second, as on a GPU reset.
TEST_F(Debian13, AKilledWorkerEndsTheProgramAsAGpuResetWithinASecond) {
    CapturedProcess program(
        run_args(in_root(XENHSA_ROCR_CHECK_BINARY, {"--wait-ms", "60000"}, true)));
    ASSERT_TRUE(program.wait_for_line("info long-wait-start", kScenarioPatience))
        << program.output();
    const auto dev = device(last_domid());
    ASSERT_TRUE(dev && dev->contains("worker_pid")) << status_text();
    const auto broken = std::chrono::steady_clock::now();
    ASSERT_EQ(::kill(dev->at("worker_pid").get<pid_t>(), SIGKILL), 0);
    const auto ended = program.wait(kPatience);
    const auto took = std::chrono::steady_clock::now() - broken;
    ASSERT_TRUE(ended) << program.output();
    EXPECT_TRUE(WIFEXITED(*ended) && WEXITSTATUS(*ended) == 128 + SIGABRT)
        << "exit status " << *ended << "\n"
        << program.output();
    EXPECT_NE(program.output().find("Reason: Generic hang recovery"), std::string::npos)
        << program.output();
    EXPECT_LT(took, std::chrono::seconds(1))
        << std::chrono::duration<double>(took).count() << " s\n"
        << program.output();
}

#ifdef XENHSA_ROCR_TEST_HOOKS
// A queue creation the backend answers too late: ROCr 6 too ends as on a GPU reset.
TEST_F(Debian13, AStateChangingRequestThatTimesOutEndsTheProgramAsAGpuReset) {
    expect_timed_out_request_aborts(in_root(XENHSA_ROCR_CHECK_BINARY, {}, true));
}
#endif

#ifdef XENHSA_HIP_CHECK_BINARY
// Debian 13's HIP runtime (libamdhip64-5 5.7.1 over ROCr 6.1.2): the device, and copies to
// and from the program's own memory (pageable: ROCclr pins it; registered; pinned) byte
// for byte; shared memory refused.
TEST_F(Debian13, HipCopiesToAndFromTheProgramsOwnMemoryByteForByte) {
    const Guest g = run_in_debian13(XENHSA_HIP_CHECK_BINARY);
    expect_hip_copies_held(g);
}

// HIP 5.7's own GPU code stops the queue as an invalid code object does on a GPU: HIP
// aborts with its message.
TEST_F(Debian13, HipGpuCodeAbortsTheProgramWithHipsMessage) {
    const Guest g = run_in_debian13(XENHSA_HIP_CHECK_BINARY, {"--needs-gpu-code", "d2d"}, true);
    EXPECT_NE(g.run.out.find("info running d2d"), std::string::npos) << g.run.out;
    EXPECT_TRUE(WIFEXITED(g.run.status) && WEXITSTATUS(g.run.status) == 128 + SIGABRT)
        << "exit status " << g.run.status << "\n"
        << g.run.out;
    EXPECT_NE(g.run.out.find("HSA_STATUS_ERROR_INVALID_CODE_OBJECT"), std::string::npos)
        << g.run.out;
    EXPECT_TRUE(released_within(g.domid));
}
#endif

}  // namespace
}  // namespace xenhsa::testing::scenarios
