// Unmodified ROCm user space in a guest of the embedded hypervisor: Debian's rocminfo and
// a C program against Debian's libhsa-runtime64 (xenhsa-rocr-check), each started with
// xenhsa-run as a new guest domain, over a real xenhsa-sim and `xenhsa-backend --gpu soft`
// (ScenarioTest). What they see is compared with what QUERY reports (`xenhsa-guest
// topology`), and the backend must keep nothing of a guest once it is gone.
#include <regex>
#include <set>
#include <sstream>

#include "rocr_fixture.hpp"

namespace xenhsa::testing::scenarios {
namespace {

using namespace std::chrono_literals;

constexpr const char* kRocminfo = "/usr/bin/rocminfo";

// Every function of Debian 12's libhsakmt1 (5.2.3), under its version node; the others are
// Debian 13's (rocr_debian13_test.cpp compares with both).
TEST(RocrExports, EveryFunctionAndVersionNodeOfDebian12sLibhsakmt) {
    const auto debian = dynamic_exports(XENHSA_DEBIAN_LIBHSAKMT);
    const auto ours = dynamic_exports(XENHSA_GUEST_LIBHSAKMT);
    ASSERT_GE(debian.size(), 60u) << "objdump -T " << XENHSA_DEBIAN_LIBHSAKMT;
    for (const std::string& symbol : debian) {
        EXPECT_TRUE(ours.count(symbol)) << symbol;
    }
    EXPECT_NE(run_text("objdump -p '" XENHSA_GUEST_LIBHSAKMT "'")
                  .find("SONAME               libhsakmt.so.1"),
              std::string::npos);
}

TEST_F(Rocr, RocminfoListsTheGpuAgentQueryReports) {
    const auto query = topology();
    ASSERT_TRUE(query.count("1")) << "no node 1 in xenhsa-guest topology";
    const std::string gpu = query.at("1");

    const Guest g = run_in_guest({kRocminfo});
    ASSERT_TRUE(g.run.ok()) << g.run.out;
    EXPECT_NE(g.run.out.find("ROCk module is loaded"), std::string::npos) << g.run.out;
    const auto fields = gpu_agent_fields(g.run.out);
    ASSERT_FALSE(fields.empty()) << "no GPU agent in rocminfo's listing:\n" << g.run.out;

    // ROCr names the agent by its ISA: gfx<major><minor><stepping, hex> of the engine id
    // (HsaEngineId: ucode 10 bits, major 6, minor 8, stepping 8).
    const uint64_t engine = std::stoull(word_value(gpu, "engine-id").value_or("0"), nullptr, 16);
    std::ostringstream isa;
    isa << "gfx" << ((engine >> 10) & 0x3f) << ((engine >> 16) & 0xff) << std::hex
        << ((engine >> 24) & 0xff);
    const std::string amd_name = isa.str();
    ASSERT_TRUE(fields.count("Name"));
    EXPECT_EQ(fields.at("Name").front(), amd_name);
    ASSERT_TRUE(fields.count("Marketing Name"));
    const auto name = gpu.find("name=\"");
    ASSERT_NE(name, std::string::npos) << gpu;
    EXPECT_EQ(fields.at("Marketing Name").front(),
              gpu.substr(name + 6, gpu.find('"', name + 6) - name - 6));
    ASSERT_TRUE(fields.count("Compute Unit"));
    EXPECT_EQ(fields.at("Compute Unit").front(), word_value(gpu, "cus").value_or("?"));
    ASSERT_TRUE(fields.count("Name") && fields.at("Name").size() >= 2) << "no ISA name";
    // The ISA, with the target features ROCr adds (":xnack-": XNACK is always off).
    EXPECT_EQ(fields.at("Name").back().rfind("amdgcn-amd-amdhsa--" + amd_name, 0), 0u)
        << fields.at("Name").back();
    EXPECT_EQ(fields.at("Name").back().find("xnack+"), std::string::npos);
    const std::string marketing = gpu.substr(gpu.find("name=\"") + 6);
    ASSERT_TRUE(fields.count("Marketing Name"));
    EXPECT_EQ(fields.at("Marketing Name").front(), marketing.substr(0, marketing.find('"')));

    // Every sized pool rocminfo lists is a bank QUERY reports (sizes in KB).
    std::set<std::string> bank_kb;
    for (const auto& [key, line] : query) {
        if (key.rfind("1/", 0) == 0) {
            const uint64_t size = std::stoull(word_value(line, "size").value_or("0"));
            bank_kb.insert(std::to_string(size / 1024) + "KB");
        }
    }
    ASSERT_TRUE(fields.count("Size"));
    std::size_t sized = 0;
    for (std::string size : fields.at("Size")) {
        size.erase(std::remove(size.begin(), size.end(), ' '), size.end());
        size = size.substr(0, size.find('(')) + size.substr(size.find(')') + 1);
        if (size != "0KB") {
            ++sized;
            EXPECT_TRUE(bank_kb.count(size)) << size << " is no bank of QUERY's";
        }
    }
    EXPECT_GE(sized, 1u);
    EXPECT_TRUE(released_within(g.domid));
}

TEST_F(Rocr, HsaProgramComputesCopiesAndLeavesNothing) {
    const Guest g = run_in_guest({XENHSA_ROCR_CHECK_BINARY});
    EXPECT_TRUE(scenario_passed(g.run));
    for (const char* check : {"agents", "pools", "kernels", "vector-add", "fill-device",
                              "async-copy", "queue-destroy", "shut-down"}) {
        EXPECT_TRUE(check_held(g.run, check));
    }
    ASSERT_NE(g.domid, 0u);
    EXPECT_TRUE(released_within(g.domid));
}

TEST_F(Rocr, BlockedSignalWaitCostsTheGuestNoCpu) {
    const Guest g = run_in_guest({XENHSA_ROCR_CHECK_BINARY, "--wait-ms", "2000"});
    ASSERT_TRUE(scenario_passed(g.run));
    EXPECT_TRUE(check_held(g.run, "long-wait-woken"));
    const auto report = parse_report(g.run.out);
    const auto share = report.info_value("cpu_share");
    ASSERT_TRUE(share) << g.run.out;
    // ROCr spins 200 us before it calls hsaKmtWaitOnEvent; the rest is a blocked thread.
    EXPECT_LT(std::stod(*share), 0.02) << g.run.out;
}

// ROCr's own blit kernels (hsa_amd_memory_fill, device-to-device copies; with
// HSA_ENABLE_SDMA=0 every copy) run on the software GPU, recognised from their code.
TEST_F(Rocr, RocrsBlitKernelsFillAndCopyByteForByte) {
    for (const char* sdma : {"1", "0"}) {
        const std::string command = std::string("HSA_ENABLE_SDMA=") + sdma + " exec " +
                                    XENHSA_ROCR_CHECK_BINARY + " --blits";
        const Guest g = run_in_guest({"/bin/sh", "-c", command});
        EXPECT_TRUE(scenario_passed(g.run)) << "HSA_ENABLE_SDMA=" << sdma << "\n" << g.run.out;
        EXPECT_TRUE(check_held(g.run, "blit-fill")) << g.run.out;
        EXPECT_TRUE(check_held(g.run, "blit-copy-d2d")) << g.run.out;
        ASSERT_NE(g.domid, 0u);
        EXPECT_TRUE(released_within(g.domid));
    }
}

// Dispatch and copy times as a GPU's command processor and SDMA engine write them, in
// ROCr's own time: each within the wall time around it, start before end.
TEST_F(Rocr, ProfiledDispatchesAndCopiesHaveTheirTimes) {
    for (const char* sdma : {"1", "0"}) {
        const std::string command = std::string("HSA_ENABLE_SDMA=") + sdma + " exec " +
                                    XENHSA_ROCR_CHECK_BINARY + " --profile";
        const Guest g = run_in_guest({"/bin/sh", "-c", command});
        EXPECT_TRUE(scenario_passed(g.run)) << "HSA_ENABLE_SDMA=" << sdma << "\n" << g.run.out;
        for (const char* check :
             {"profile-dispatch-time", "profile-copy-h2d-time", "profile-copy-d2d-time"}) {
            EXPECT_TRUE(check_held(g.run, check)) << "HSA_ENABLE_SDMA=" << sdma;
        }
    }
}

// ROCr's image support (HIP initialises it) reads the GPU's tiling setup through
// hsaKmtGetTileConfig, which the backend answers for its GPU: the image capabilities of a
// GFX9 GPU, where ROCr used to abort on an assertion.
TEST_F(Rocr, ImageSupportGetsTheGpusTileConfigAsHipNeedsIt) {
    const Guest g = run_in_guest({XENHSA_ROCR_CHECK_BINARY, "--images"});
    EXPECT_TRUE(scenario_passed(g.run)) << g.run.out;
    EXPECT_TRUE(check_held(g.run, "image-capability")) << g.run.out;
}

}  // namespace
}  // namespace xenhsa::testing::scenarios
