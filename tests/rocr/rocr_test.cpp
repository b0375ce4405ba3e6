// Unmodified ROCm user space in a guest of the embedded hypervisor: Debian's rocminfo and
// a C program against Debian's libhsa-runtime64 (xenhsa-rocr-check), each started with
// xenhsa-run as a new guest domain, over a real xenhsa-sim and `xenhsa-backend --gpu soft`
// (ScenarioTest). What they see is compared with what QUERY reports (`xenhsa-guest
// topology`), and the backend must keep nothing of a guest once it is gone.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <csignal>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <scenario_fixture.hpp>
#include <set>
#include <sstream>
#include <thread>

namespace xenhsa::testing::scenarios {
namespace {

using namespace std::chrono_literals;

constexpr const char* kRocminfo = "/usr/bin/rocminfo";

std::string run_text(const std::string& command) {
    std::string out;
    if (FILE* p = ::popen(command.c_str(), "r")) {
        char buf[4096];
        std::size_t n = 0;
        while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) {
            out.append(buf, n);
        }
        ::pclose(p);
    }
    return out;
}

// "symbol version" for every defined dynamic symbol of a library.
std::set<std::string> dynamic_exports(const std::string& library) {
    std::set<std::string> symbols;
    std::istringstream lines(run_text("objdump -T '" + library + "'"));
    std::string line;
    while (std::getline(lines, line)) {
        std::istringstream words(line);
        std::vector<std::string> w{std::istream_iterator<std::string>(words), {}};
        if (w.size() >= 2 && line.find("*UND*") == std::string::npos &&
            line.find(" DF ") != std::string::npos) {
            symbols.insert(w[w.size() - 1] + " " + w[w.size() - 2]);
        }
    }
    return symbols;
}

TEST(RocrExports, SameFunctionsAndVersionNodeAsDebiansLibhsakmt) {
    const auto debian = dynamic_exports(XENHSA_DEBIAN_LIBHSAKMT);
    const auto ours = dynamic_exports(XENHSA_GUEST_LIBHSAKMT);
    ASSERT_GE(debian.size(), 60u) << "objdump -T " << XENHSA_DEBIAN_LIBHSAKMT;
    EXPECT_EQ(ours, debian);
    EXPECT_NE(run_text("objdump -p '" XENHSA_GUEST_LIBHSAKMT "'")
                  .find("SONAME               libhsakmt.so.1"),
              std::string::npos);
}

class Rocr : public ScenarioTest {
protected:
    struct Guest {
        Output run;
        uint32_t domid = 0;
    };

    std::vector<std::string> run_args(const std::vector<std::string>& program) {
        domid_file_ = sim().dir() / ("domid-" + std::to_string(++runs_));
        std::vector<std::string> args{XENHSA_RUN_BINARY, "--sim-dir", sim().dir().string(),
                                      "--domid-file", domid_file_.string()};
        args.insert(args.end(), run_options_.begin(), run_options_.end());
        args.push_back("--");
        args.insert(args.end(), program.begin(), program.end());
        return args;
    }
    uint32_t last_domid() const {
        std::ifstream in(domid_file_);
        uint32_t domid = 0;
        in >> domid;
        return domid;
    }
    Guest run_in_guest(const std::vector<std::string>& program) {
        Guest g;
        g.run = run(run_args(program), kScenarioPatience);
        g.domid = last_domid();
        return g;
    }

    // `xenhsa-guest topology`: node -> its info line, and (node, bank) -> its line.
    std::map<std::string, std::string> topology() {
        const Output t = run_guest({"topology"});
        EXPECT_TRUE(scenario_passed(t));
        // A soft GPU's compute units are the CPUs shared among the guests living when its
        // worker starts: the next guest is compared with this one once it is gone.
        if (const auto domid = domid_in(t.out)) {
            EXPECT_TRUE(eventually([&] {
                const auto d = device(*domid);
                return d && d->is_null();
            })) << "the topology guest's device outlived it: "
                << status_text();
        }
        std::map<std::string, std::string> lines;
        for (const std::string& info : parse_report(t.out).infos) {
            const auto node = word_value(info, "node");
            const auto bank = word_value(info, "bank");
            if (node) {
                lines[bank ? *node + "/" + *bank : *node] = info;
            }
        }
        return lines;
    }

    std::filesystem::path domid_file_;
    int runs_ = 0;
    std::vector<std::string> run_options_;  // more of xenhsa-run's
};

// The fine-grained system pool's size and ALLOC_MAX_SIZE, from `info system-pool`.
std::optional<std::pair<uint64_t, uint64_t>> system_pool(const std::string& out) {
    static const std::regex line(R"(info system-pool size=(\d+) alloc-max=(\d+))");
    std::smatch m;
    if (!std::regex_search(out, m, line)) {
        return std::nullopt;
    }
    return std::pair{std::stoull(m[1]), std::stoull(m[2])};
}

bool pv_dom0() {
    const char* gpu = std::getenv("XENHSA_TEST_GPU");
    return gpu != nullptr && std::string_view(gpu) == "kfd-pv";
}

// rocminfo's value for `key` in the block of the agent whose "Device Type" is GPU.
std::map<std::string, std::vector<std::string>> gpu_agent_fields(const std::string& out) {
    std::map<std::string, std::vector<std::string>> fields;
    const auto agent = out.find("Device Type:             GPU");
    if (agent == std::string::npos) {
        return fields;
    }
    const auto begin = out.rfind("*******", agent);
    const auto end = out.find("*******\nAgent", agent);
    std::istringstream lines(out.substr(begin, end == std::string::npos ? end : end - begin));
    std::string line;
    static const std::regex field(R"(^\s*([A-Za-z][A-Za-z0-9 ]*?):\s+(.*\S)\s*$)");
    std::smatch m;
    while (std::getline(lines, line)) {
        if (std::regex_match(line, m, field)) {
            fields[m[1]].push_back(m[2]);
        }
    }
    return fields;
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

// A GPU page fault sets the guest's memory events; ROCr's VM-fault handler, woken through
// the guest libhsakmt, reports it and aborts the program, as it does on a real GPU.
TEST_F(Rocr, GpuFaultEndsTheProgramAsOnAGpu) {
    const Guest g = run_in_guest({XENHSA_ROCR_CHECK_BINARY, "--fault"});
    EXPECT_TRUE(check_held(g.run, "vector-add"));
    EXPECT_NE(g.run.out.find("info dispatching-fault"), std::string::npos) << g.run.out;
    EXPECT_TRUE(WIFEXITED(g.run.status) && WEXITSTATUS(g.run.status) == 128 + SIGABRT)
        << "exit status " << g.run.status << "\n"
        << g.run.out;
    EXPECT_EQ(g.run.out.find("check fault-reported FAIL"), std::string::npos) << g.run.out;
    ASSERT_NE(g.domid, 0u);
    EXPECT_TRUE(released_within(g.domid));
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

// A queue the software GPU stops (an unknown code object, a malformed dispatch, a packet
// type it does not run) is reported as a GPU's command processor reports it: the error
// code in the queue's inactive signal, which ROCr turns into the queue's error callback.
TEST_F(Rocr, AStoppedQueueReachesRocrAsTheErrorAGpuRaises) {
    for (const char* cause : {"code", "dimensions", "packet"}) {
        const Guest g = run_in_guest({XENHSA_ROCR_CHECK_BINARY, "--queue-error", cause});
        EXPECT_TRUE(scenario_passed(g.run)) << cause << "\n" << g.run.out;
        EXPECT_TRUE(check_held(g.run, "queue-error-reported")) << cause << "\n" << g.run.out;
        EXPECT_TRUE(check_held(g.run, "queue-error-within-1s")) << cause << "\n" << g.run.out;
        ASSERT_NE(g.domid, 0u);
        EXPECT_TRUE(released_within(g.domid));
    }
}

// Without a callback, ROCr's default handler says why and aborts, as on a GPU.
TEST_F(Rocr, AStoppedQueueWithoutACallbackAbortsWithROCrsMessage) {
    const std::string command =
        std::string("exec ") + XENHSA_ROCR_CHECK_BINARY + " --queue-error-abort code 2>&1";
    const Guest g = run_in_guest({"/bin/sh", "-c", command});
    EXPECT_NE(g.run.out.find("info dispatching-queue-error"), std::string::npos) << g.run.out;
    EXPECT_TRUE(WIFEXITED(g.run.status) && WEXITSTATUS(g.run.status) == 128 + SIGABRT)
        << "exit status " << g.run.status << "\n"
        << g.run.out;
    EXPECT_NE(g.run.out.find("inactivated due to async error"), std::string::npos) << g.run.out;
    EXPECT_NE(g.run.out.find("HSA_STATUS_ERROR_INVALID_CODE_OBJECT"), std::string::npos)
        << g.run.out;
    EXPECT_EQ(g.run.out.find("check queue-error-aborted FAIL"), std::string::npos) << g.run.out;
    ASSERT_NE(g.domid, 0u);
    EXPECT_TRUE(released_within(g.domid));
}

// The link broken while the program waits (its worker killed, its device unplugged by
// the toolstack): the guest library reports it as a GPU reset, and ROCr's VM-fault handler
// aborts the program with its message within a second, instead of its waits waking
// forever.
class RocrLostLink : public Rocr, public ::testing::WithParamInterface<std::string> {};

TEST_P(RocrLostLink, EndsTheProgramAsAGpuResetWithinASecond) {
    CapturedProcess program(
        run_args({"/bin/sh", "-c",
                  std::string("exec ") + XENHSA_ROCR_CHECK_BINARY + " --wait-ms 60000 2>&1"}));
    ASSERT_TRUE(program.wait_for_line("info long-wait-start", kScenarioPatience))
        << program.output();
    const uint32_t domid = last_domid();
    const auto dev = device(domid);
    ASSERT_TRUE(dev && dev->contains("worker_pid")) << status_text();
    const auto broken = std::chrono::steady_clock::now();
    std::unique_ptr<CapturedProcess> unplug;
    if (GetParam() == "worker-killed") {
        ASSERT_EQ(::kill(dev->at("worker_pid").get<pid_t>(), SIGKILL), 0);
    } else {
        unplug = std::make_unique<CapturedProcess>(
            std::vector<std::string>{XENHSA_CTL_BINARY, "--sim-dir", sim().dir().string(), "unplug",
                                     "--domid", std::to_string(domid), "--timeout", "20"});
    }
    const auto ended = program.wait(kPatience);
    const auto took = std::chrono::steady_clock::now() - broken;
    ASSERT_TRUE(ended) << program.output();
    // In a PV dom0 the program's system memory is the backend's lent pages, which an
    // unplug takes back: a thread may die of SIGBUS on them before ROCr's handler speaks.
    const bool lent_memory_revoked =
        pv_dom0() && GetParam() == "unplugged" && program.output().find("BUS") != std::string::npos;
    if (!lent_memory_revoked) {
        EXPECT_TRUE(WIFEXITED(*ended) && WEXITSTATUS(*ended) == 128 + SIGABRT)
            << "exit status " << *ended << "\n"
            << program.output();
        EXPECT_NE(program.output().find("Reason: Generic hang recovery"), std::string::npos)
            << program.output();
        EXPECT_NE(program.output().find("the link to the backend broke"), std::string::npos)
            << program.output();
    }
    EXPECT_LT(took, 1s) << std::chrono::duration<double>(took).count() << " s\n"
                        << program.output();
    if (unplug) {
        (void)unplug->wait(kPatience);
    }
}

INSTANTIATE_TEST_SUITE_P(Rocr, RocrLostLink, ::testing::Values("worker-killed", "unplugged"),
                         [](const auto& p) {
                             std::string name = p.param;
                             name.erase(std::remove(name.begin(), name.end(), '-'), name.end());
                             return name;
                         });

#ifdef XENHSA_ROCR_TEST_HOOKS
// A state-changing request the backend answers too late (its worker held in the KFD's
// queue creation, as by a hung driver): the guest library ends the session at its
// request timeout instead of waiting, so the program learns of it at once (ROCr's
// hsa_queue_create fails with "Queue create failed"), its releases succeed as on a KFD
// after a GPU reset, hsa_shut_down ends, and the backend tears down the session and the
// queue its late answer made.
TEST_F(Rocr, AStateChangingRequestThatTimesOutEndsTheSessionNotTheProgram) {
    const auto armed = control({{"op", "fault-plan"}, {"worker", "delay=kfd.create_queue#1:6000"}});
    ASSERT_TRUE(armed.is_object() && armed.value("ok", false)) << armed.dump();
    CapturedProcess program(
        run_args({"/usr/bin/env", "XENHSA_REQUEST_TIMEOUT_MS=1000", "/bin/sh", "-c",
                  std::string("exec ") + XENHSA_ROCR_CHECK_BINARY + " 2>&1"}));
    ASSERT_TRUE(program.wait_for_line("check kernels ok", kScenarioPatience)) << program.output();
    const auto asked = std::chrono::steady_clock::now();
    ASSERT_TRUE(program.wait_for_line("check hsa_queue_create FAIL", kScenarioPatience))
        << program.output();
    const auto told = std::chrono::steady_clock::now() - asked;
    // The request's 1 s, well before the backend's answer at 6 s.
    EXPECT_LT(told, 3s) << std::chrono::duration<double>(told).count() << " s\n"
                        << program.output();
    const auto ended = program.wait(kPatience);
    ASSERT_TRUE(ended) << program.output();
    EXPECT_TRUE(WIFEXITED(*ended) && WEXITSTATUS(*ended) == 1) << *ended << "\n"
                                                               << program.output();
    EXPECT_NE(program.output().find("went unanswered within XENHSA_REQUEST_TIMEOUT_MS"),
              std::string::npos)
        << program.output();
    EXPECT_NE(program.output().find("check shut-down ok"), std::string::npos) << program.output();
    EXPECT_EQ(program.output().find("Assertion"), std::string::npos) << program.output();
    const uint32_t domid = last_domid();
    ASSERT_NE(domid, 0u);
    EXPECT_TRUE(released_within(domid));
}
#endif

// A ROCm process SIGKILLed in a domain that lives on (its device's grant driver clears
// the ring's fe_alive and kicks: gntalloc's unmap notification) is reclaimed by the
// backend within a second, without any other process's help, and the next program on
// that device starts at once.
TEST_F(Rocr, AKilledProcessInALivingDomainIsReclaimedWithinASecond) {
    // A first program keeps the domain alive on device 0.
    auto holder =
        std::make_unique<CapturedProcess>(run_args({XENHSA_ROCR_CHECK_BINARY, "--repeat", "0"}));
    ASSERT_TRUE(holder->wait_for_line("info repeating", kScenarioPatience)) << holder->output();
    const uint32_t domid = last_domid();
    const std::string dir = sim().dir().string();
    const std::string dom = std::to_string(domid);
    ASSERT_TRUE(ctl({"plug", "--domid", dom, "--devid", "1"}).ok()) << status_text();
    const auto device1 = [&] { return device(domid, 1); };
    const std::vector<std::string> on_device1{
        XENHSA_RUN_BINARY,        "--sim-dir", dir,    "--domid", dom, "--devid", "1", "--",
        XENHSA_ROCR_CHECK_BINARY, "--wait-ms", "60000"};
    CapturedProcess doomed(on_device1);
    const auto pid_line = doomed.wait_for_line("info pid=", kScenarioPatience);
    ASSERT_TRUE(pid_line) << doomed.output();
    ASSERT_TRUE(doomed.wait_for_line("info long-wait-start", kScenarioPatience)) << doomed.output();
    const auto before = device1();
    ASSERT_TRUE(before && before->is_object() && before->value("handles", 0) > 0) << status_text();

    ASSERT_EQ(::kill(std::stoi(*word_value(*pid_line, "pid")), SIGKILL), 0);
    const auto killed = std::chrono::steady_clock::now();
    bool reclaimed = false;
    while (!reclaimed && std::chrono::steady_clock::now() - killed < 5s) {
        const auto d = device1();
        reclaimed = d && d->is_object() && d->value("handles", 1) == 0 &&
                    d->value("mapped_pages", 1) == 0 && d->value("pinned_pages", 1) == 0;
        if (!reclaimed) {
            std::this_thread::sleep_for(20ms);
        }
    }
    const auto took = std::chrono::steady_clock::now() - killed;
    EXPECT_TRUE(reclaimed) << status_text();
    EXPECT_LT(took, 1s) << std::chrono::duration<double>(took).count() << " s";
    (void)doomed.wait(kPatience);

    // The domain lives on (its other program computes), and the next program on device 1
    // starts at once.
    std::vector<std::string> again = on_device1;
    again.resize(again.size() - 2);  // no wait this time
    const Output next = run(again, kScenarioPatience);
    EXPECT_TRUE(scenario_passed(next)) << next.out;
    holder->signal(SIGTERM);
    (void)holder->wait(kPatience);
}

// ROCr's image support (HIP initialises it) reads the GPU's tiling setup through
// hsaKmtGetTileConfig, which the backend answers for its GPU: the image capabilities of a
// GFX9 GPU, where ROCr used to abort on an assertion.
TEST_F(Rocr, ImageSupportGetsTheGpusTileConfigAsHipNeedsIt) {
    const Guest g = run_in_guest({XENHSA_ROCR_CHECK_BINARY, "--images"});
    EXPECT_TRUE(scenario_passed(g.run)) << g.run.out;
    EXPECT_TRUE(check_held(g.run, "image-capability")) << g.run.out;
}

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
    EXPECT_TRUE(scenario_passed(g.run)) << g.run.out;
    for (const char* check : {"device", "pageable-round-trip", "registered-copy-in",
                              "registered-cpu-writes-seen", "unregistered-bytes-kept",
                              "neighbours-untouched", "pinned-round-trip", "shared-refused"}) {
        EXPECT_TRUE(check_held(g.run, check)) << check;
    }
    EXPECT_TRUE(released_within(g.domid));
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

// Two ROCm programs at once in one guest, with no configuration: each `xenhsa-run` in the
// domain claims a device of its own, so each runs over a worker and a GPU address space of
// its own. Both ask for the same VA window (as the real thunk's fixed aperture hints give
// every process the same GPU addresses), fill buffers at the same VAs with different values
// on the GPU, wait for each other, and each reads back its own.
TEST_F(Rocr, TwoProgramsInOneGuestRunAtOnceEachInAGpuAddressSpaceOfItsOwn) {
    run_options_ = {"--devices", "3"};
    // A first program computes on (and keeps the domain alive: on the simulator a domain
    // ends with its last process).
    CapturedProcess holder(run_args({XENHSA_ROCR_CHECK_BINARY, "--repeat", "0"}));
    ASSERT_TRUE(holder.wait_for_line("info repeating", kScenarioPatience)) << holder.output();
    const uint32_t domid = last_domid();
    ASSERT_NE(domid, 0u);
    const std::filesystem::path meet = sim().dir() / "isolation";
    std::filesystem::create_directories(meet);
    const auto in_domain = [&](const char* value) {
        return std::vector<std::string>{XENHSA_RUN_BINARY,
                                        "--sim-dir",
                                        sim().dir().string(),
                                        "--domid",
                                        std::to_string(domid),
                                        "--window-base",
                                        "0x200000000000",
                                        "--",
                                        XENHSA_ROCR_CHECK_BINARY,
                                        "--isolation",
                                        value,
                                        meet.string()};
    };
    CapturedProcess one(in_domain("0x11111111"));
    CapturedProcess two(in_domain("0x22222222"));
    const auto one_status = one.wait(kScenarioPatience);
    const auto two_status = two.wait(kScenarioPatience);
    EXPECT_TRUE(one_status && WIFEXITED(*one_status) && WEXITSTATUS(*one_status) == 0)
        << one.output();
    EXPECT_TRUE(two_status && WIFEXITED(*two_status) && WEXITSTATUS(*two_status) == 0)
        << two.output();
    for (const CapturedProcess* p : {&one, &two}) {
        EXPECT_NE(p->output().find("check isolation-own-data ok"), std::string::npos)
            << p->output();
    }
    // The system buffer at the same VA in both: what each read back there on the GPU was
    // its own. (Device memory lands where ROCr's allocation order puts it, which its
    // threads vary.)
    static const std::regex va_line(R"(info isolation device-va=(\S+) system-va=(\S+))");
    std::smatch m1;
    std::smatch m2;
    ASSERT_TRUE(std::regex_search(one.output(), m1, va_line)) << one.output();
    ASSERT_TRUE(std::regex_search(two.output(), m2, va_line)) << two.output();
    EXPECT_EQ(m1[2].str(), m2[2].str());
    // Devices 1 and 2 were each connected once and closed again with nothing left, while
    // the first program held device 0 and computed on.
    for (const uint32_t devid : {1u, 2u}) {
        const auto d = device(domid, devid);
        ASSERT_TRUE(d && d->is_object()) << status_text();
        EXPECT_EQ(d->value("state", ""), "Closed") << "device " << devid << ": " << status_text();
        EXPECT_EQ(d->value("handles", 1), 0) << status_text();
    }
    const auto d0 = device(domid, 0);
    ASSERT_TRUE(d0 && d0->is_object()) << status_text();
    EXPECT_EQ(d0->value("state", ""), "Connected") << status_text();
    holder.signal(SIGTERM);
    (void)holder.wait(kPatience);
    EXPECT_EQ(holder.output().find("FAIL"), std::string::npos) << holder.output();
}

// A child forked from a ROCm process holds copies of its parent's ring, grants and event
// channel: as with the real thunk, its libhsakmt calls answer KERNEL_IO_CHANNEL_NOT_OPENED,
// its hsaKmtCloseKFD touches nothing of the parent's, and the parent computes on.
TEST_F(Rocr, AForkedChildGetsNoChannelAndLeavesItsParentAlone) {
    const Guest g = run_in_guest({XENHSA_ROCR_CHECK_BINARY, "--fork"});
    EXPECT_TRUE(scenario_passed(g.run)) << g.run.out;
    EXPECT_TRUE(check_held(g.run, "fork-child")) << g.run.out;
    EXPECT_TRUE(check_held(g.run, "fork-parent-goes-on")) << g.run.out;
    ASSERT_NE(g.domid, 0u);
    EXPECT_TRUE(released_within(g.domid));
}

// Where its domain has a device free, the child's own hsaKmtOpenKFD opens anew, as with
// the real thunk: it claims that device (never its parent's), works, and closes it.
TEST_F(Rocr, AForkedChildOpensAnewOnADeviceOfItsOwn) {
    run_options_ = {"--devices", "2"};
    const Guest g = run_in_guest({XENHSA_ROCR_CHECK_BINARY, "--fork-opens"});
    EXPECT_TRUE(scenario_passed(g.run)) << g.run.out;
    EXPECT_TRUE(check_held(g.run, "fork-child")) << g.run.out;
    EXPECT_NE(g.run.out.find("info fork-child get-version=20 open=0 get-version-after=0 close=0"),
              std::string::npos)
        << g.run.out;
    EXPECT_TRUE(check_held(g.run, "fork-parent-goes-on")) << g.run.out;
    ASSERT_NE(g.domid, 0u);
    EXPECT_TRUE(released_within(g.domid));
}

// The last hsaKmtCloseKFD while another thread waits (libhsakmt alone, without ROCr, whose
// threads would use the memory the close gives back): the wait ends with an error at once
// and the closed session is never touched (a sanitized library would report it).
TEST_F(Rocr, ClosingWhileAnotherThreadWaitsEndsTheWaitSafely) {
    const Guest g = run_in_guest({XENHSA_ROCR_CHECK_BINARY, "--close-under-wait"});
    EXPECT_TRUE(scenario_passed(g.run)) << g.run.out;
    EXPECT_TRUE(check_held(g.run, "close-under-wait")) << g.run.out;
    ASSERT_NE(g.domid, 0u);
    EXPECT_TRUE(released_within(g.domid));
}

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

TEST_F(Rocr, ProgramKilledMidDispatchLeavesNothingAndOthersGoOn) {
    auto other = start_guest({"vecadd", "--repeat", "0"});
    const auto other_line = other->wait_for_line("info repeating", kScenarioPatience);
    ASSERT_TRUE(other_line) << other->output();
    const auto alive = domid_in(*other_line);
    ASSERT_TRUE(alive);

    CapturedProcess doomed(run_args({XENHSA_ROCR_CHECK_BINARY, "--repeat", "0"}));
    const auto pid_line = doomed.wait_for_line("info pid=", kScenarioPatience);
    ASSERT_TRUE(pid_line) << doomed.output();
    ASSERT_TRUE(doomed.wait_for_line("info repeating", kScenarioPatience)) << doomed.output();
    const uint32_t dead = last_domid();
    ASSERT_NE(dead, 0u);
    const auto before = device(dead);
    ASSERT_TRUE(before && before->is_object()) << status_text();

    const pid_t program = std::stoi(*word_value(*pid_line, "pid"));
    ASSERT_EQ(::kill(program, SIGKILL), 0);
    const auto ended = doomed.wait(kPatience);
    ASSERT_TRUE(ended && WIFEXITED(*ended) && WEXITSTATUS(*ended) == 128 + SIGKILL)
        << "xenhsa-run should report the program's SIGKILL: " << doomed.output();
    EXPECT_TRUE(released_within(dead, 5s));

    other->signal(SIGTERM);
    const Output other_run = finish_guest(*other);
    EXPECT_TRUE(scenario_passed(other_run));
    EXPECT_TRUE(check_held(other_run, "result"));

    const Guest after = run_in_guest({XENHSA_ROCR_CHECK_BINARY});
    EXPECT_TRUE(scenario_passed(after.run)) << "a new ROCm guest after the killed one";
}

}  // namespace
}  // namespace xenhsa::testing::scenarios
