#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "atomics_path.hpp"
#include "host_checks.hpp"
#include "pcie_config.hpp"

namespace xenhsa::backend::doctor {
namespace {

namespace fs = std::filesystem;

// `lspci -s 0b:00.0 -xxx` of a Fiji GPU (seed 000), before `setpci ... 80.b=40`: its
// PCI Express capability is at 0x58, so Device Control 2 is at 0x80. (The seed's copy of
// row 80 reads "0000 00 00 0e ..."; the row after the setpci shows it is "00 00 00 00 0e".)
constexpr const char* kFijiBefore = R"(
00: 02 10 00 73 07 05 10 00 c1 00 00 03 10 00 80 00
10: 0c 00 00 e0 ff 2f 00 00 0c 00 00 f0 ff 2f 00 00
20: 01 00 00 00 00 00 b0 c7 00 00 00 00 02 10 35 0b
30: 00 00 fe ff 48 00 00 00 00 00 00 00 0b 01 00 00
40: 00 00 00 00 00 00 00 00 09 50 08 00 02 10 35 0b
50: 01 58 03 f6 08 00 00 00 10 a0 12 00 a1 8f 00 00
60: 2c 28 00 00 03 0d 40 08 00 00 01 11 00 00 00 00
70: 00 00 00 00 00 00 00 00 00 00 00 00 00 00 70 00
80: 00 00 00 00 0e 00 00 00 03 00 01 00 00 00 00 00
90: 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
a0: 05 00 81 00 98 03 e0 fe 00 00 00 00 00 00 00 00
b0: 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
c0: 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
d0: 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
e0: 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
f0: 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
)";

std::vector<uint8_t> from_lspci(const std::string& dump) {
    std::vector<uint8_t> bytes;
    std::istringstream in(dump);
    std::string line;
    while (std::getline(in, line)) {
        const auto colon = line.find(':');
        if (colon == std::string::npos) {
            continue;
        }
        std::istringstream row(line.substr(colon + 1));
        std::string hex;
        while (row >> hex) {
            bytes.push_back(static_cast<uint8_t>(std::stoul(hex, nullptr, 16)));
        }
    }
    return bytes;
}

std::vector<uint8_t> fiji(bool requester) {
    auto bytes = from_lspci(kFijiBefore);
    if (requester) {
        bytes.at(0x80) = 0x40;  // what `setpci -d *:7300 80.b=40` wrote
    }
    return bytes;
}

// A 256-byte config space with only a PCI Express capability (at 0x40).
std::vector<uint8_t> port(PortType type, uint32_t devcap2, uint16_t devctl2 = 0) {
    std::vector<uint8_t> s(256, 0);
    s[0x06] = 0x10;  // status: capability list
    s[0x34] = 0x40;
    s[0x40] = 0x10;
    s[0x41] = 0x00;
    s[0x42] = static_cast<uint8_t>(static_cast<uint8_t>(type) << 4);
    for (int i = 0; i < 4; ++i) {
        s[0x40 + 0x24 + i] = static_cast<uint8_t>(devcap2 >> (8 * i));
    }
    s[0x40 + 0x28] = static_cast<uint8_t>(devctl2);
    s[0x40 + 0x29] = static_cast<uint8_t>(devctl2 >> 8);
    return s;
}

constexpr uint32_t kComplete = kDevCap2AtomicComp32 | kDevCap2AtomicComp64;

PciFunction fn(std::string address, const std::vector<uint8_t>& space) {
    return {std::move(address), parse_pcie_config(space)};
}

TEST(PcieConfig, TheSeedDumpsShowTheRequesterBit) {
    const ParsedConfig before = parse_pcie_config(fiji(false));
    ASSERT_TRUE(before.config);
    EXPECT_EQ(before.config->type, PortType::legacy_endpoint);  // flags 0x0012
    EXPECT_EQ(before.config->devctl2 & kDevCtl2AtomicRequester, 0);
    const ParsedConfig after = parse_pcie_config(fiji(true));
    ASSERT_TRUE(after.config);
    EXPECT_NE(after.config->devctl2 & kDevCtl2AtomicRequester, 0);
}

TEST(PcieConfig, UnreadableSpacesSayWhy) {
    auto space = fiji(false);
    space.resize(64);  // what sysfs shows an unprivileged reader
    EXPECT_EQ(parse_pcie_config(space).problem, ConfigProblem::too_short);
    auto loop = port(PortType::endpoint, 0);
    loop[0x40] = 0x05;  // MSI, pointing back at itself
    loop[0x41] = 0x40;
    EXPECT_EQ(parse_pcie_config(loop).problem, ConfigProblem::bad_cap_list);
    auto plain = port(PortType::endpoint, 0);
    plain[0x06] = 0;  // no capability list
    EXPECT_EQ(parse_pcie_config(plain).problem, ConfigProblem::no_pcie_cap);
}

TEST(AtomicsPath, ARequesterBitClearGetsTheSetpciCommand) {
    const AtomicsVerdict v =
        check_atomics_path({fn("0000:0b:00.0", fiji(false)),
                            fn("0000:00:03.1", port(PortType::root_port, kComplete))});
    EXPECT_FALSE(v.ok);
    EXPECT_NE(v.detail.find("0000:0b:00.0"), std::string::npos) << v.detail;
    EXPECT_NE(v.remedy.find("setpci -s 0000:0b:00.0 CAP_EXP+28.w=0040:0040"), std::string::npos)
        << v.remedy;
}

TEST(AtomicsPath, AWholeChainThroughASwitchPasses) {
    const AtomicsVerdict v = check_atomics_path(
        {fn("0000:0b:00.0", fiji(true)),
         fn("0000:0a:00.0", port(PortType::downstream_port, kDevCap2AtomicRoute)),
         fn("0000:09:00.0", port(PortType::upstream_port, kDevCap2AtomicRoute)),
         fn("0000:00:03.1", port(PortType::root_port, kComplete))});
    EXPECT_TRUE(v.ok) << v.detail;
    EXPECT_TRUE(v.remedy.empty());
}

TEST(AtomicsPath, TheLinkThatBreaksTheChainIsNamed) {
    const auto gpu = fn("0000:0b:00.0", fiji(true));
    const auto root = fn("0000:00:03.1", port(PortType::root_port, kComplete));
    const auto no_route = check_atomics_path(
        {gpu, fn("0000:0a:00.0", port(PortType::downstream_port, 0)),
         fn("0000:09:00.0", port(PortType::upstream_port, kDevCap2AtomicRoute)), root});
    EXPECT_FALSE(no_route.ok);
    EXPECT_NE(no_route.detail.find("0000:0a:00.0 (switch downstream port)"), std::string::npos)
        << no_route.detail;

    const auto no_completer = check_atomics_path(
        {gpu, fn("0000:00:03.1", port(PortType::root_port, kDevCap2AtomicComp32))});
    EXPECT_FALSE(no_completer.ok);
    EXPECT_NE(no_completer.detail.find("0000:00:03.1 (root port)"), std::string::npos);

    const auto blocked = check_atomics_path(
        {gpu, fn("0000:0a:00.0", port(PortType::downstream_port, kDevCap2AtomicRoute)),
         fn("0000:09:00.0",
            port(PortType::upstream_port, kDevCap2AtomicRoute, kDevCtl2AtomicEgressBlock)),
         root});
    EXPECT_FALSE(blocked.ok);
    EXPECT_NE(blocked.detail.find("Egress Blocking"), std::string::npos);
    EXPECT_NE(blocked.remedy.find("0000:09:00.0"), std::string::npos);

    auto hidden = fiji(true);
    hidden.resize(64);
    const auto unprivileged = check_atomics_path({fn("0000:0b:00.0", hidden), root});
    EXPECT_FALSE(unprivileged.ok);
    EXPECT_NE(unprivileged.remedy.find("root"), std::string::npos);

    const auto no_root = check_atomics_path({gpu});
    EXPECT_FALSE(no_root.ok) << "a path that ends without a root port cannot be vouched for";
}

// A host tree under a temporary root.
class FakeHost : public ::testing::Test {
protected:
    void SetUp() override {
        root_ = fs::temp_directory_path() /
                ("xenhsa-doctor-" + std::to_string(::getpid()) + "-" +
                 ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(root_);
        fs::create_directories(root_);
    }
    void TearDown() override { fs::remove_all(root_); }

    void file(const std::string& path, const std::string& text) {
        const fs::path p = root_ / fs::path(path).relative_path();
        fs::create_directories(p.parent_path());
        std::ofstream(p) << text;
    }
    void bytes(const std::string& path, const std::vector<uint8_t>& data) {
        const fs::path p = root_ / fs::path(path).relative_path();
        fs::create_directories(p.parent_path());
        std::ofstream(p, std::ios::binary)
            .write(reinterpret_cast<const char*>(data.data()),
                   static_cast<std::streamsize>(data.size()));
    }
    // A function at `chain` (sysfs directory names from the host bridge down), linked
    // from /sys/bus/pci/devices as the kernel does.
    void pci(const std::string& chain, const std::vector<uint8_t>& config,
             const std::string& vendor = "0x8086", const std::string& cls = "0x060400") {
        const std::string dir = "/sys/devices/" + chain;
        bytes(dir + "/config", config);
        file(dir + "/vendor", vendor + "\n");
        file(dir + "/class", cls + "\n");
        const fs::path link = root_ / "sys/bus/pci/devices" / fs::path(chain).filename();
        fs::create_directories(link.parent_path());
        fs::create_symlink(fs::path("../../../devices") / chain, link);
    }
    void gpu_host(bool requester) {
        pci("pci0000:00/0000:00:03.1", port(PortType::root_port, kComplete));
        pci("pci0000:00/0000:00:03.1/0000:0b:00.0", fiji(requester), "0x1002", "0x030000");
        file("/dev/kfd", "");
        file("/sys/class/kfd/kfd/topology/nodes/0/properties", "cpu_cores_count 8\n");
        file("/sys/class/kfd/kfd/topology/nodes/1/properties",
             "simd_count 256\ngfx_target_version 80003\n");
        file("/sys/module/amdgpu/parameters/noretry", "1\n");
    }
    void xen_dom0(const std::string& gntalloc_limit) {
        file("/sys/hypervisor/type", "xen\n");
        file("/sys/hypervisor/version/major", "4\n");
        file("/sys/hypervisor/version/minor", "17\n");
        file("/sys/hypervisor/version/extra", ".3\n");
        file("/proc/xen/capabilities", "control_d\n");
        file("/dev/xen/xenbus", "");
        file("/dev/xen/gntdev", "");
        file("/dev/xen/gntalloc", "");
        file("/dev/xen/evtchn", "");
        file("/sys/module/xen_gntalloc/parameters/limit", gntalloc_limit + "\n");
    }
    DoctorOptions options() const {
        DoctorOptions o;
        o.root = root_;
        o.lend_pages = 65536;
        return o;
    }
    std::vector<Check> run() { return run_checks(options()); }

    static const Check& find(const std::vector<Check>& checks, const std::string& name) {
        for (const Check& c : checks) {
            if (c.name == name) {
                return c;
            }
        }
        static const Check none{"(missing)", Status::info, "", ""};
        ADD_FAILURE() << "no check named " << name;
        return none;
    }

    fs::path root_;
};

TEST_F(FakeHost, ABareHostSaysPlainlyThatThereIsNoGpuAndNoXen) {
    const auto checks = run();
    EXPECT_EQ(find(checks, "AMD GPU").status, Status::warn);
    EXPECT_NE(find(checks, "AMD GPU").detail.find("software GPU agent"), std::string::npos);
    EXPECT_EQ(find(checks, "Xen").status, Status::warn);
    EXPECT_NE(find(checks, "Xen").detail.find("not running on Xen"), std::string::npos);
    EXPECT_FALSE(any_failed(checks));
}

TEST_F(FakeHost, AGpuWithoutTheRequesterBitFailsWithTheRemedy) {
    gpu_host(false);
    const auto checks = run();
    EXPECT_EQ(find(checks, "AMD GPU").status, Status::pass);
    const Check& atomics = find(checks, "PCIe AtomicOps 0000:0b:00.0");
    EXPECT_EQ(atomics.status, Status::fail);
    EXPECT_NE(atomics.remedy.find("setpci -s 0000:0b:00.0"), std::string::npos);
    EXPECT_EQ(find(checks, "/dev/kfd").status, Status::pass);
    EXPECT_EQ(find(checks, "GPU targets").detail, "gfx803");
    EXPECT_NE(find(checks, "XNACK").detail.find("noretry=1"), std::string::npos);
    EXPECT_TRUE(any_failed(checks));
}

TEST_F(FakeHost, AGoodGpuOnXenPassesAndALowGntallocLimitWarns) {
    gpu_host(true);
    xen_dom0("1024");
    const auto checks = run();
    EXPECT_EQ(find(checks, "PCIe AtomicOps 0000:0b:00.0").status, Status::pass);
    EXPECT_EQ(find(checks, "Xen").status, Status::pass);
    EXPECT_NE(find(checks, "Xen").detail.find("Xen 4.17.3, this is dom0"), std::string::npos);
    EXPECT_EQ(find(checks, "/dev/xen/gntdev").status, Status::pass);
    EXPECT_EQ(find(checks, "gntalloc limit").status, Status::warn);
    EXPECT_FALSE(any_failed(checks));
}

// A driver domain: a domU that serves devices, with or without the GPU passed through.
TEST_F(FakeHost, ADriverDomainSaysItsDevicesItsGpuAndTheMaptrackBoundItCannotRead) {
    xen_dom0("1048576");
    file("/proc/xen/capabilities", "");
    DoctorOptions o = options();
    o.backend_devices = BackendDevices{1, 2};
    auto checks = run_checks(o);
    EXPECT_NE(find(checks, "Xen").detail.find("this is a domU"), std::string::npos);
    const Check& gpu = find(checks, "AMD GPU");
    EXPECT_EQ(gpu.status, Status::warn);
    EXPECT_NE(gpu.detail.find("no AMD GPU passed through to this domain"), std::string::npos);
    EXPECT_NE(gpu.remedy.find("xl pci-assignable-add"), std::string::npos);
    EXPECT_EQ(find(checks, "backend devices").detail,
              "2 xenhsa device(s) of 1 guest(s) plugged with this domain as backend");
    EXPECT_NE(find(checks, "grant maps (maptrack)").detail.find("max_maptrack_frames"),
              std::string::npos);
    EXPECT_FALSE(any_failed(checks));
    o.xen_on_arm = true;
    EXPECT_NE(find(run_checks(o), "XSM").remedy.find("xsm=dummy"), std::string::npos)
        << "a driver domain on Arm is told about SILO";

    o.backend_devices = BackendDevices{};
    gpu_host(true);
    checks = run_checks(o);
    EXPECT_NE(find(checks, "backend devices").remedy.find("--backend-domid"), std::string::npos);
    EXPECT_NE(find(checks, "backend devices").remedy.find("@releaseDomain"), std::string::npos);
    EXPECT_NE(find(checks, "AMD GPU").detail.find("passed through to this domain"),
              std::string::npos);
}

TEST_F(FakeHost, InDom0TheMaptrackIsNotSaidUnreadableAndNoDevicesNeedNoRemedy) {
    xen_dom0("1048576");
    DoctorOptions o = options();
    o.backend_devices = BackendDevices{};
    const auto checks = run_checks(o);
    EXPECT_EQ(find(checks, "backend devices").remedy, "");
    for (const Check& c : checks) {
        EXPECT_NE(c.name, "grant maps (maptrack)") << "dom0 reads it (grant_limits)";
    }
}

TEST_F(FakeHost, MissingXenDevicesAndKfdFail) {
    gpu_host(true);
    xen_dom0("1048576");
    fs::remove(root_ / "dev/kfd");
    fs::remove(root_ / "dev/xen/evtchn");
    const auto checks = run();
    EXPECT_EQ(find(checks, "/dev/kfd").status, Status::fail);
    EXPECT_EQ(find(checks, "/dev/xen/evtchn").status, Status::fail);
    EXPECT_EQ(find(checks, "/dev/xen/evtchn").remedy, "modprobe xen-evtchn");
    EXPECT_EQ(find(checks, "gntalloc limit").status, Status::pass);
    EXPECT_TRUE(any_failed(checks));
}

// Xen's defaults (64 grant frames, 1024 maptrack frames) hold far less than 16 guests'
// default shares: both warn, and the remedy names the frames that would hold them.
TEST_F(FakeHost, XensDefaultGrantTablesWarnAgainstTheGuestsSharesWithTheFramesToSet) {
    gpu_host(true);
    xen_dom0("1048576");
    DoctorOptions o = options();
    o.grant_limits = XenGrantLimits{64, 1024, true};
    const auto checks = run_checks(o);
    const Check& maps = find(checks, "grant maps (maptrack)");
    EXPECT_EQ(maps.status, Status::warn);
    EXPECT_NE(maps.detail.find("1024 frames (Xen's default): 262144 pages (1.0 GiB)"),
              std::string::npos)
        << maps.detail;
    EXPECT_NE(maps.detail.find("16 guests x a map share of 262144 pages (16.0 GiB)"),
              std::string::npos)
        << maps.detail;
    EXPECT_NE(maps.remedy.find("gnttab_max_maptrack_frames=16384"), std::string::npos)
        << maps.remedy;
    const Check& lends = find(checks, "grant table (lends)");
    EXPECT_EQ(lends.status, Status::warn);
    EXPECT_NE(lends.remedy.find("gnttab_max_frames=2049"), std::string::npos) << lends.remedy;
    EXPECT_EQ(find(checks, "GPU-visible system memory per guest").status, Status::info);
    EXPECT_FALSE(any_failed(checks));
}

TEST_F(FakeHost, GrantTablesSizedForTheSharesPass) {
    gpu_host(true);
    xen_dom0("1048576");
    DoctorOptions o = options();
    o.max_guests = 4;
    o.map_pages = 1048576;
    o.grant_limits = XenGrantLimits{513, 16384, false};
    const auto checks = run_checks(o);
    EXPECT_EQ(find(checks, "grant maps (maptrack)").status, Status::pass);
    EXPECT_EQ(find(checks, "grant table (lends)").status, Status::pass);
    EXPECT_NE(find(checks, "GPU-visible system memory per guest").detail.find("up to 4.0 GiB"),
              std::string::npos);
}

TEST_F(FakeHost, WithoutXensAnswerThereIsNoGrantCapacityCheck) {
    gpu_host(true);
    xen_dom0("1048576");
    for (const Check& c : run()) {
        EXPECT_EQ(c.name.find("grant maps"), std::string::npos);
    }
}

// The binary: exit status and JSON.
int run_doctor(const fs::path& root, std::string& out) {
    const std::string cmd =
        std::string(XENHSA_DOCTOR_BINARY) + " --json --sysfs-root '" + root.string() + "'";
    FILE* p = ::popen(cmd.c_str(), "r");
    if (p == nullptr) {
        return -1;
    }
    std::array<char, 4096> buf{};
    std::size_t n = 0;
    while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) {
        out.append(buf.data(), n);
    }
    const int status = ::pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST_F(FakeHost, TheBinaryExitsNonZeroWhenARequirementFails) {
    std::string out;
    EXPECT_EQ(run_doctor(root_, out), 0);
    EXPECT_TRUE(nlohmann::json::parse(out).at("ok").get<bool>());

    gpu_host(false);
    out.clear();
    EXPECT_EQ(run_doctor(root_, out), 1);
    const auto json = nlohmann::json::parse(out);
    EXPECT_FALSE(json.at("ok").get<bool>());
    bool named = false;
    for (const auto& c : json.at("checks")) {
        named =
            named || (c.at("status") == "FAIL" && c.at("name") == "PCIe AtomicOps 0000:0b:00.0");
    }
    EXPECT_TRUE(named) << out;
}

}  // namespace
}  // namespace xenhsa::backend::doctor
