// The service's processes on the simulated hypervisor: a real xenhsa-sim daemon, the
// real xenhsa-backend (supervisor + workers) and xenhsa-ctl binaries, the test as
// toolstack (dom0) and scripted frontends in forked children attached to guest domains.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xenhsa/proto.h>

#include <algorithm>
#include <child_process.hpp>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sim_instance.hpp>
#include <spawned_process.hpp>
#include <string>
#include <thread_confinement.hpp>
#include <vector>
#include <xenhsa/backend/service/cpu_groups.hpp>
#include <xenhsa/backend/service/worker_uids.hpp>
#include <xenhsa/backend/service/xenbus.hpp>
#include <xenhsa/xen/sim/client.hpp>

#include "scripted_frontend.hpp"

namespace {

namespace fs = std::filesystem;
namespace xen = xenhsa::xen;
namespace sim = xenhsa::xen::sim;
using namespace std::chrono_literals;
using namespace xenhsa::test;
using xenhsa::backend::service::backend_dir;
using xenhsa::backend::service::cpu_cgroup_of;
using xenhsa::backend::service::CpuGroups;
using xenhsa::backend::service::DeviceId;
using xenhsa::backend::service::frontend_dir;
using xenhsa::backend::service::WorkerUidRange;
using xenhsa::testing::eventually;
using xenhsa::testing::kPatience;
using xenhsa::testing::Process;
using xenhsa::testing::process_gone;
using xenhsa::testing::run;
using xenhsa::testing::with_backend_test_args;

class ServiceTest : public ::testing::Test {
protected:
    ServiceTest() : sim_(SimInstance::start()), dom0_(sim::attach(sim_.dir(), 0).value()) {}

    ~ServiceTest() override {
        frontends_.clear();  // the guests go first
        if (backend_) {
            backend_->signal(SIGTERM);
            (void)backend_->wait(kPatience);
        }
    }

    void start_backend(const std::vector<std::string>& env = {},
                       const std::vector<std::string>& extra_args = {}) {
        std::vector<std::string> args{XENHSA_BACKEND_BINARY, "--sim-dir", sim_.dir().string(),
                                      "--gpu", "soft"};
        args.insert(args.end(), extra_args.begin(), extra_args.end());
        backend_ = std::make_unique<Process>(with_backend_test_args(args), -1, env);
        ASSERT_GT(backend_->pid(), 0);
        ASSERT_TRUE(eventually([&] { return fs::exists(sim_.dir() / "backend.sock"); }))
            << "the control socket never appeared";
    }

    // A guest domain with one plugged xenhsa device (the toolstack's part) and a
    // scripted frontend for it.
    // `plugged` false: the device is left for the test to plug.
    xen::DomId add_guest(const std::string& name, uint32_t devid = 0, bool plugged = true) {
        auto domid = sim::create_domain(sim_.dir(), name, 64);
        EXPECT_TRUE(domid);
        if (!domid) {
            return 0;
        }
        const xen::DomId fe = domid.value();
        auto frontend = std::make_unique<ChildProcess>(
            ChildProcess::spawn([dir = sim_.dir(), fe, devid](xenhsa::testing::Link& link) {
                return run_scripted_frontend(dir, fe, devid, link);
            }));
        EXPECT_EQ(frontend->link().receive(kPatience), std::optional<uint64_t>(0))
            << "the frontend did not attach";
        frontends_[fe] = std::move(frontend);
        if (plugged) {
            plug(fe, devid);
        }
        return fe;
    }

    void plug(xen::DomId fe, uint32_t devid) {
        auto& store = *dom0_.store;
        const std::string be = backend_dir(0, {fe, devid});
        const std::string fr = frontend_dir({fe, devid});
        ASSERT_TRUE(store.mkdir(xen::kNoTx, be));
        ASSERT_TRUE(store.set_perms(xen::kNoTx, be,
                                    {{0, xen::StoreAccess::none}, {fe, xen::StoreAccess::read}}));
        ASSERT_TRUE(store.write(xen::kNoTx, be + "/frontend", fr));
        ASSERT_TRUE(store.write(xen::kNoTx, be + "/frontend-id", std::to_string(fe)));
        ASSERT_TRUE(store.write(xen::kNoTx, be + "/state", "1"));
        ASSERT_TRUE(store.mkdir(xen::kNoTx, fr));
        ASSERT_TRUE(store.set_perms(xen::kNoTx, fr,
                                    {{fe, xen::StoreAccess::none}, {0, xen::StoreAccess::read}}));
        ASSERT_TRUE(store.write(xen::kNoTx, fr + "/backend", be));
        ASSERT_TRUE(store.write(xen::kNoTx, fr + "/backend-id", "0"));
        ASSERT_TRUE(store.write(xen::kNoTx, fr + "/state", "1"));
    }

    uint64_t ask(xen::DomId fe, uint64_t cmd) {
        auto& link = frontends_.at(fe)->link();
        if (!link.send(cmd)) {
            return kNoAnswer;
        }
        return link.receive(kPatience).value_or(kNoAnswer);
    }

    std::string be_read(xen::DomId fe, const std::string& key) {
        auto v = dom0_.store->read(xen::kNoTx, backend_dir(0, {fe, 0}) + "/" + key);
        return v ? v.value() : "<" + v.error().message() + ">";
    }

    bool be_state_is(xen::DomId fe, const std::string& state) {
        return eventually([&] { return be_read(fe, "state") == state; });
    }

    // A backend serving two connected guests, "guest-a" and "guest-b".
    std::pair<xen::DomId, xen::DomId> start_with_two_guests() {
        start_backend();
        const auto a = add_guest("guest-a");
        const auto b = add_guest("guest-b");
        connect(a);
        connect(b);
        return {a, b};
    }

    nlohmann::json status() {
        const auto r =
            run({XENHSA_CTL_BINARY, "--sim-dir", sim_.dir().string(), "status", "--json"});
        EXPECT_TRUE(r.ok()) << r.out;
        auto j = nlohmann::json::parse(r.out, nullptr, false);
        return j.is_discarded() ? nlohmann::json::object() : j;
    }

    // The device entry of `fe` in `xenhsa-ctl status --json`, or null.
    nlohmann::json device(xen::DomId fe) {
        const auto s = status();
        if (s.contains("domains") && s["domains"].is_array()) {
            for (const auto& d : s["domains"]) {
                if (d.value("domid", -1) == fe) {
                    return d;
                }
            }
        }
        return nullptr;
    }

    pid_t worker_pid(xen::DomId fe) {
        const auto d = device(fe);
        return d.is_object() ? d.value("worker_pid", -1) : -1;
    }

    void connect(xen::DomId fe) {
        ASSERT_TRUE(be_state_is(fe, "2")) << be_read(fe, "state");
        ASSERT_EQ(ask(fe, kPublish), 0u);
        ASSERT_TRUE(be_state_is(fe, "4")) << be_read(fe, "state") << " " << be_read(fe, "error");
    }

    SimInstance sim_;
    xen::Platform dom0_;
    std::unique_ptr<Process> backend_;
    std::map<xen::DomId, std::unique_ptr<ChildProcess>> frontends_;
};

TEST(ServiceBinaries, HelpWorks) {
    EXPECT_TRUE(run({XENHSA_BACKEND_BINARY, "--help"}).ok());
    EXPECT_TRUE(run({XENHSA_CTL_BINARY, "--help"}).ok());
    EXPECT_FALSE(run({XENHSA_BACKEND_BINARY}).ok()) << "needs --sim-dir or --xen";
    EXPECT_FALSE(run({XENHSA_BACKEND_BINARY, "--sim-dir", "/nonexistent", "--gpu", "cuda"}).ok());
    EXPECT_FALSE(
        run({XENHSA_BACKEND_BINARY, "--sim-dir", "/nonexistent", "--soft-gfx", "gfx1030"}).ok())
        << "an unknown software agent target";
    EXPECT_FALSE(
        run({XENHSA_BACKEND_BINARY, "--sim-dir", "/nonexistent", "--set", "max_handles=12abc"})
            .ok())
        << "quotas are parsed strictly before anything starts";
}

TEST_F(ServiceTest, QuotasFromTheConfigFileAndTheCommandLineReachTheGuest) {
    const fs::path config = sim_.dir() / "quotas.json";
    {
        std::FILE* f = std::fopen(config.c_str(), "w");
        ASSERT_NE(f, nullptr);
        std::fputs("{\"max_handles\": 300, \"max_queues\": 4}\n", f);
        std::fclose(f);
    }
    start_backend({}, {"--config", config.string()});
    const auto a = add_guest("guest-a");
    connect(a);
    ASSERT_EQ(ask(a, kHello), uint64_t{XENHSA_STATUS_OK});
    EXPECT_EQ(ask(a, kHelloMaxHandles), 300u);

    // --set overrides the file.
    backend_->signal(SIGTERM);
    ASSERT_TRUE(backend_->wait(kPatience));
    ASSERT_EQ(ask(a, kClose), 0u);
    ASSERT_EQ(ask(a, kInitialise), 0u);
    start_backend({}, {"--config", config.string(), "--set", "max_handles=200"});
    connect(a);
    ASSERT_EQ(ask(a, kHello), uint64_t{XENHSA_STATUS_OK});
    EXPECT_EQ(ask(a, kHelloMaxHandles), 200u);
}

TEST_F(ServiceTest, TheSoftAgentTargetAndSdmaReachTheGuest) {
    start_backend({}, {"--soft-gfx", "gfx90a"});
    const auto fe = add_guest("guest-a");
    connect(fe);
    const uint64_t features = ask(fe, kConnectAll);
    ASSERT_LT(features, kFailed) << "line " << (features - kFailed);
    EXPECT_EQ(features, XENHSA_FEATURES_KNOWN) << "the service grants SDMA over the soft agent";
    EXPECT_EQ(ask(fe, kGpuVersion), 0x09000Au) << "gfx90a is 9.0.10";
}

TEST_F(ServiceTest, DiscoversADeviceAndStartsItsWorker) {
    start_backend();
    const auto fe = add_guest("guest-a");
    ASSERT_TRUE(be_state_is(fe, "2")) << "the worker moves the device to InitWait";
    EXPECT_EQ(be_read(fe, "versions"), "1");
    EXPECT_EQ(be_read(fe, "max-ring-page-order"), "3");
    const pid_t pid = worker_pid(fe);
    EXPECT_GT(pid, 0);
    EXPECT_NE(pid, backend_->pid());
}

TEST_F(ServiceTest, WorkerConnectsAndServesTheRing) {
    start_backend();
    const auto fe = add_guest("guest-a");
    connect(fe);
    EXPECT_EQ(ask(fe, kBeAlive), 1u);
    EXPECT_EQ(ask(fe, kHello), uint64_t{XENHSA_STATUS_OK}) << "the core answers on the ring";
    const auto d = device(fe);
    ASSERT_TRUE(d.is_object());
    EXPECT_EQ(d["state"], "Connected");
}

TEST_F(ServiceTest, MultiPageRing) {
    start_backend();
    const auto fe = add_guest("guest-a");
    ASSERT_TRUE(be_state_is(fe, "2"));
    ASSERT_EQ(ask(fe, kPublishOrder2), 0u);
    ASSERT_TRUE(be_state_is(fe, "4")) << be_read(fe, "error");
    EXPECT_EQ(ask(fe, kBeAlive), 1u);
    ASSERT_EQ(ask(fe, kHello), uint64_t{XENHSA_STATUS_OK});
    for (int i = 0; i < 20; ++i) {  // past the 16 slots of a one-page ring: any answer
        ASSERT_LT(ask(fe, kHello), kFailed) << i;
    }
    const pid_t pid = worker_pid(fe);
    ASSERT_GT(pid, 0);
    ASSERT_EQ(::kill(pid, SIGKILL), 0);
    EXPECT_TRUE(eventually([&] { return ask(fe, kBeAlive) == 0; }))
        << "be_alive is cleared through the extra mapping of ring page 0";
}

TEST_F(ServiceTest, MalformedStoreValuesCloseTheDeviceWithAnErrorNode) {
    start_backend();
    const auto fe = add_guest("guest-a");
    ASSERT_TRUE(be_state_is(fe, "2"));
    const pid_t pid = worker_pid(fe);

    ASSERT_EQ(ask(fe, kPublishBadRingRef), 0u);
    ASSERT_TRUE(be_state_is(fe, "6"));
    EXPECT_EQ(be_read(fe, "error"), "22 ring-ref: not a decimal store value");

    ASSERT_EQ(ask(fe, kInitialise), 0u);
    ASSERT_TRUE(be_state_is(fe, "2")) << "a reconnect in the same worker";
    ASSERT_EQ(ask(fe, kPublishBadOrder), 0u);
    ASSERT_TRUE(be_state_is(fe, "6"));
    EXPECT_EQ(be_read(fe, "error"), "34 ring-page-order: out of range");

    ASSERT_EQ(ask(fe, kInitialise), 0u);
    ASSERT_TRUE(be_state_is(fe, "2"));
    ASSERT_EQ(ask(fe, kPublishMissingKeys), 0u);
    ASSERT_TRUE(be_state_is(fe, "6"));
    EXPECT_EQ(be_read(fe, "error"), "2 notify-ref: missing");

    EXPECT_EQ(worker_pid(fe), pid) << "nothing crashed";
    ASSERT_EQ(ask(fe, kInitialise), 0u);
    connect(fe);
    EXPECT_EQ(be_read(fe, "error"), "<No such file or directory>");
    EXPECT_EQ(ask(fe, kHello), uint64_t{XENHSA_STATUS_OK});
}

TEST_F(ServiceTest, KilledWorkerTouchesOnlyItsGuest) {
    const auto [a, b] = start_with_two_guests();
    const pid_t pid_a = worker_pid(a);
    const pid_t pid_b = worker_pid(b);
    ASSERT_GT(pid_a, 0);
    ASSERT_GT(pid_b, 0);

    ASSERT_EQ(::kill(pid_a, SIGKILL), 0);
    EXPECT_TRUE(be_state_is(a, "6")) << "the supervisor marks the device Closed";
    EXPECT_TRUE(eventually([&] { return ask(a, kBeAlive) == 0; })) << "unmap notification";
    EXPECT_TRUE(eventually([&] { return process_gone(pid_a); })) << "the supervisor reaps";

    // The other guest does not notice.
    EXPECT_EQ(be_read(b, "state"), "4");
    EXPECT_EQ(worker_pid(b), pid_b);
    EXPECT_EQ(ask(b, kBeAlive), 1u);
    EXPECT_EQ(ask(b, kHello), uint64_t{XENHSA_STATUS_OK});

    // The frontend reconnects and gets a fresh worker.
    ASSERT_EQ(ask(a, kClose), 0u);
    ASSERT_EQ(ask(a, kInitialise), 0u);
    connect(a);
    const pid_t fresh = worker_pid(a);
    EXPECT_GT(fresh, 0);
    EXPECT_NE(fresh, pid_a);
    EXPECT_EQ(ask(a, kHello), uint64_t{XENHSA_STATUS_OK});
}

std::vector<std::string> fd_targets(pid_t pid) {
    std::vector<std::string> targets;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec)) {
        std::error_code link;
        targets.push_back(fs::read_symlink(e.path(), link).string());
    }
    return targets;
}

// One request on the control socket (a JSON line), its answer line.
nlohmann::json control(const fs::path& socket, const nlohmann::json& request) {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, socket.c_str(), sizeof addr.sun_path - 1);
    std::string answer;
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0) {
        const std::string line = request.dump() + "\n";
        if (::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size())) {
            char c = 0;
            while (::read(fd, &c, 1) == 1 && c != '\n') {
                answer.push_back(c);
            }
        }
    }
    ::close(fd);
    return nlohmann::json::parse(answer, nullptr, false);
}

TEST_F(ServiceTest, WorkersRunConfined) {
    start_backend();
    const auto a = add_guest("guest-a");
    connect(a);
    const pid_t pid = worker_pid(a);
    ASSERT_GT(pid, 0);
    // Every thread, not just the leader /proc/<pid>/status shows.
    EXPECT_TRUE(xenhsa::testing::every_thread_confined(pid));
    for (const auto& target : fd_targets(pid)) {
        for (const char* forbidden :
             {"/dev/xen/privcmd", "/dev/xen/hypercall", "/dev/mem", "/dev/kmem", "/dev/port"}) {
            EXPECT_NE(target, forbidden);
        }
    }
    // Confined, it still serves.
    EXPECT_EQ(ask(a, kHello), uint64_t{XENHSA_STATUS_OK});
    EXPECT_EQ(status().value("confinement_violations", uint64_t{99}), 0u);
}

TEST_F(ServiceTest, AForbiddenSystemCallKillsOnlyThatWorker) {
    const auto [a, b] = start_with_two_guests();
    const pid_t pid_a = worker_pid(a);
    const pid_t pid_b = worker_pid(b);
    ASSERT_GT(pid_a, 0);

    const auto sent =
        control(sim_.dir() / "backend.sock", {{"op", "test-forbidden-syscall"}, {"domid", a}});
    ASSERT_EQ(sent.value("ok", false), true) << sent.dump();
    EXPECT_TRUE(eventually([&] { return process_gone(pid_a); }));
    EXPECT_TRUE(be_state_is(a, "6")) << "its guest sees Closed";
    EXPECT_TRUE(eventually([&] { return ask(a, kBeAlive) == 0; }));
    EXPECT_TRUE(eventually([&] { return status().value("confinement_violations", 0) == 1; }))
        << status().dump();
    EXPECT_EQ(device(a).value("confinement_violations", 0), 1) << device(a).dump();

    // The other guest goes on with the same worker.
    EXPECT_EQ(worker_pid(b), pid_b);
    EXPECT_EQ(be_read(b, "state"), "4");
    EXPECT_EQ(ask(b, kHello), uint64_t{XENHSA_STATUS_OK});
    EXPECT_EQ(device(b).value("confinement_violations", 0), 0);

    // A clean stop still says that a worker broke its filter during the run.
    backend_->signal(SIGTERM);
    const auto ended = backend_->wait(kPatience);
    backend_.reset();
    ASSERT_TRUE(ended);
    EXPECT_TRUE(WIFEXITED(*ended) && WEXITSTATUS(*ended) == 3) << *ended;
}

// An attacker running code in a confined worker (the test hook "test-attack" makes each
// attempt inside the worker): what could reach beyond its guest is refused, by the
// argument filter, the allowlist (which kills) or the kernel, and the other guests go on.
TEST_F(ServiceTest, ACompromisedWorkerIsRefusedWhatReachesBeyondItsGuest) {
    start_backend();
    const auto a = add_guest("guest-a");
    const auto b = add_guest("guest-b");
    const auto c = add_guest("guest-c");
    connect(a);
    connect(b);
    connect(c);
    const pid_t pid_a = worker_pid(a);
    const pid_t pid_b = worker_pid(b);
    const pid_t pid_c = worker_pid(c);
    ASSERT_GT(pid_a, 0);
    ASSERT_GT(pid_c, 0);
    const auto attack = [&](xen::DomId fe, const nlohmann::json& attempt) {
        nlohmann::json request = attempt;
        request["op"] = "test-attack";
        request["domid"] = fe;
        return control(sim_.dir() / "backend.sock", request);
    };
    const auto refused = [&](const nlohmann::json& attempt, std::initializer_list<int> errnos) {
        const auto answer = attack(a, attempt);
        EXPECT_EQ(answer.value("ok", false), true) << attempt.dump() << " -> " << answer.dump();
        EXPECT_EQ(answer.value("refused", false), true)
            << attempt.dump() << " -> " << answer.dump();
        const int error = answer.value("errno", 0);
        EXPECT_TRUE(std::find(errnos.begin(), errnos.end(), error) != errnos.end())
            << attempt.dump() << " -> " << answer.dump();
    };
    // Another process's secrets (the filter refuses the open; a sanitized build, whose
    // runtime opens files, leaves it to the kernel: another user's environment).
    refused({{"attempt", "open"}, {"path", "/proc/1/environ"}}, {EACCES});
    // Signals to another worker or the supervisor; a terminal's input; another process as
    // the owner of its fd's signals.
    refused({{"attempt", "tgkill"}, {"pid", pid_b}}, {EPERM});
    refused({{"attempt", "ioctl-tiocsti"}}, {EPERM});
    refused({{"attempt", "fcntl-setown"}, {"pid", backend_->pid()}}, {EPERM});
#ifdef XENHSA_SANITIZED
    refused({{"attempt", "kill"}, {"pid", pid_b}}, {EPERM});
    refused({{"attempt", "kill"}, {"pid", backend_->pid()}}, {EPERM});
#endif
    // Through its own hypervisor handles, which act for its guest only: another guest's
    // store keys, its grants, an event channel to it.
    const std::string b_backend = "/local/domain/0/backend/xenhsa/" + std::to_string(b) + "/0";
    refused({{"attempt", "store-write"}, {"path", b_backend + "/state"}}, {EACCES});
    refused({{"attempt", "store-read"},
             {"path", "/local/domain/" + std::to_string(b) + "/device/xenhsa/0/ring-ref"}},
            {EACCES});
    refused({{"attempt", "grant-map"}, {"granter", b}, {"ref", 8}}, {EPERM});
    refused({{"attempt", "evtchn-bind"}, {"remote", b}}, {EPERM});
    EXPECT_EQ(be_read(b, "state"), "4") << "guest b's backend state untouched";
    EXPECT_EQ(status().value("confinement_violations", uint64_t{99}), 0u) << status().dump();

    // What the allowlist kills: running a program, a new socket (a is killed by the one,
    // c by the other).
    EXPECT_EQ(attack(a, {{"attempt", "exec"}, {"path", "/bin/true"}}).value("ok", true), false);
    EXPECT_EQ(attack(c, {{"attempt", "socket"}}).value("ok", true), false);
    EXPECT_TRUE(eventually([&] { return process_gone(pid_a) && process_gone(pid_c); }));
    EXPECT_TRUE(eventually([&] { return status().value("confinement_violations", 0) == 2; }))
        << status().dump();

    // The other guest goes on with the same worker.
    EXPECT_EQ(worker_pid(b), pid_b);
    EXPECT_EQ(be_read(b, "state"), "4");
    EXPECT_EQ(ask(b, kHello), uint64_t{XENHSA_STATUS_OK});
    EXPECT_EQ(device(b).value("confinement_violations", 0), 0);
}

// A guest's threads compete for the CPU as one guest: each worker, every thread of it, in a
// CPU group of its own with the weight of every other worker's; the group goes with it.
// One uid per worker (issue 25, item 2): every thread of each worker runs as a uid of its
// own from the workers' range, with the gid of the same number, so the kernel refuses
// either worker's signal or ptrace to the other whatever their filters allow.
TEST_F(ServiceTest, EachWorkerHasAUidOfItsOwn) {
    if (::geteuid() != 0) {
        GTEST_SKIP() << "workers keep the test's user when it is not root";
    }
    const auto [a, b] = start_with_two_guests();
    std::vector<uid_t> uids;
    for (const xen::DomId fe : {a, b}) {
        const pid_t pid = worker_pid(fe);
        ASSERT_GT(pid, 0);
        const auto uid = xenhsa::testing::sole_identity(pid);
        ASSERT_TRUE(uid) << "worker " << pid << "'s threads differ in uid or gid";
        EXPECT_TRUE(WorkerUidRange{}.contains(*uid)) << *uid;
        uids.push_back(*uid);
    }
    EXPECT_NE(uids[0], uids[1]);
}

TEST_F(ServiceTest, EachWorkerHasACpuShareOfItsOwn) {
    const auto [a, b] = start_with_two_guests();
    const auto groups = status().value("cpu_groups", nlohmann::json::object());
    if (!groups.value("enabled", false)) {
        GTEST_SKIP() << "no CPU groups on this host: " << groups.dump();
    }
    const std::filesystem::path dir = groups.value("dir", "");
    const auto cgroup_of = [](const std::filesystem::path& proc) {
        std::ifstream in(proc / "cgroup");
        const std::string text((std::istreambuf_iterator<char>(in)), {});
        const auto cg = cpu_cgroup_of(text);
        return cg ? cg->path : std::string("?");
    };
    const auto weight_of = [](const std::filesystem::path& group) {
        for (const char* file : {"cpu.weight", "cpu.shares"}) {
            std::ifstream in(group / file);
            std::string value;
            if (in >> value) {
                return value;
            }
        }
        return std::string("?");
    };
    std::vector<std::string> weights;
    for (const xen::DomId fe : {a, b}) {
        const pid_t pid = worker_pid(fe);
        ASSERT_GT(pid, 0);
        const std::string group = std::string(CpuGroups::kPrefix) + std::to_string(pid);
        const std::filesystem::path proc = "/proc/" + std::to_string(pid);
        std::size_t threads = 0;
        for (const auto& task : std::filesystem::directory_iterator(proc / "task")) {
            EXPECT_EQ(std::filesystem::path(cgroup_of(task.path())).filename(), group)
                << task.path();
            ++threads;
        }
        EXPECT_GE(threads, 1u);
        weights.push_back(weight_of(dir / group));
    }
    EXPECT_NE(weights[0], "?");
    EXPECT_EQ(weights[0], weights[1]);
    EXPECT_EQ(std::filesystem::path(cgroup_of("/proc/" + std::to_string(backend_->pid())))
                  .filename()
                  .string()
                  .rfind(CpuGroups::kPrefix, 0),
              std::string::npos)
        << "the supervisor is in no worker's group";

    const pid_t pid_a = worker_pid(a);
    ASSERT_TRUE(sim::destroy_domain(sim_.dir(), a));
    EXPECT_TRUE(eventually([&] { return process_gone(pid_a); }));
    const auto group_a = dir / (std::string(CpuGroups::kPrefix) + std::to_string(pid_a));
    EXPECT_TRUE(eventually([&] { return !std::filesystem::exists(group_a); })) << group_a;
    EXPECT_EQ(ask(b, kHello), uint64_t{XENHSA_STATUS_OK});
}

TEST_F(ServiceTest, DestroyedGuestLosesItsWorker) {
    const auto [a, b] = start_with_two_guests();
    const pid_t pid_a = worker_pid(a);
    ASSERT_GT(pid_a, 0);

    ASSERT_TRUE(sim::destroy_domain(sim_.dir(), a));
    EXPECT_TRUE(eventually([&] { return process_gone(pid_a); }));
    EXPECT_TRUE(eventually([&] { return device(a).is_null(); })) << "the device is forgotten";
    EXPECT_EQ(be_read(b, "state"), "4");
    EXPECT_EQ(ask(b, kHello), uint64_t{XENHSA_STATUS_OK});
}

TEST_F(ServiceTest, StatusJsonShape) {
    start_backend();
    const auto a = add_guest("guest-a");
    const auto b = add_guest("guest-b");
    connect(a);
    ASSERT_TRUE(be_state_is(b, "2"));

    const auto r = run({XENHSA_CTL_BINARY, "--sim-dir", sim_.dir().string(), "status", "--json"});
    ASSERT_TRUE(r.ok());
    ASSERT_EQ(r.out.find('\n'), r.out.size() - 1) << "one line: " << r.out;
    const auto j = nlohmann::json::parse(r.out);
    ASSERT_TRUE(j.is_object());
    ASSERT_TRUE(j.contains("domains"));
    ASSERT_TRUE(j["domains"].is_array());
    ASSERT_EQ(j["domains"].size(), 2u);
    for (const auto& d : j["domains"]) {
        ASSERT_TRUE(d["domid"].is_number_unsigned());
        ASSERT_TRUE(d["state"].is_string());
        for (const char* key :
             {"mapped_pages", "pinned_pages", "lent_pages", "queues", "events", "handles"}) {
            EXPECT_TRUE(d[key].is_number_unsigned()) << key;
        }
    }
    EXPECT_EQ(device(a)["state"], "Connected");
    EXPECT_EQ(device(b)["state"], "InitWait");

    const auto table = run({XENHSA_CTL_BINARY, "--sim-dir", sim_.dir().string(), "status"});
    EXPECT_TRUE(table.ok());
    EXPECT_NE(table.out.find("Connected"), std::string::npos);
}

TEST_F(ServiceTest, OperatorRevokeAndQuotaChange) {
    start_backend();
    const auto a = add_guest("guest-a");
    connect(a);
    const std::string dir = sim_.dir().string();
    const auto revoked =
        run({XENHSA_CTL_BINARY, "--sim-dir", dir, "revoke", "--domid", std::to_string(a)});
    EXPECT_TRUE(revoked.ok()) << revoked.out;
    EXPECT_FALSE(run({XENHSA_CTL_BINARY, "--sim-dir", dir, "revoke", "--domid", "999"}).ok());
    EXPECT_FALSE(run({XENHSA_CTL_BINARY, "--sim-dir", dir, "revoke", "--domid", std::to_string(a),
                      "--handle", "0x1234"})
                     .ok())
        << "the guest holds no such handle";
    EXPECT_EQ(be_read(a, "state"), "4") << "the connection stays up";
    EXPECT_EQ(ask(a, kHello), uint64_t{XENHSA_STATUS_OK});

    const auto quota = run({XENHSA_CTL_BINARY, "--sim-dir", dir, "quota", "--domid",
                            std::to_string(a), "--set", "max_map_pages=16", "--json"});
    ASSERT_TRUE(quota.ok()) << quota.out;
    const auto j = nlohmann::json::parse(quota.out);
    ASSERT_EQ(j["updated"].size(), 1u);
    EXPECT_EQ(j["updated"][0]["revoked"], 0);
    EXPECT_FALSE(run({XENHSA_CTL_BINARY, "--sim-dir", dir, "quota", "--set", "bogus=1"}).ok());
}

TEST_F(ServiceTest, SigtermRevokesEverythingAndExitsZero) {
    start_backend();
    const auto a = add_guest("guest-a");
    connect(a);
    const pid_t pid = worker_pid(a);
    ASSERT_GT(pid, 0);
    backend_->signal(SIGTERM);
    const auto status = backend_->wait(kPatience);
    ASSERT_TRUE(status);
    EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << *status;
    EXPECT_EQ(be_read(a, "state"), "6");
    EXPECT_EQ(ask(a, kBeAlive), 0u);
    EXPECT_TRUE(process_gone(pid));
    EXPECT_FALSE(fs::exists(sim_.dir() / "backend.sock"));
}

TEST_F(ServiceTest, UnpluggedDeviceLosesItsWorker) {
    start_backend();
    const auto a = add_guest("guest-a");
    connect(a);
    const pid_t pid = worker_pid(a);
    ASSERT_GT(pid, 0);
    ASSERT_TRUE(dom0_.store->rm(xen::kNoTx, backend_dir(0, {a, 0})));
    EXPECT_TRUE(eventually([&] { return process_gone(pid); }));
    EXPECT_TRUE(eventually([&] { return device(a).is_null(); }));
    EXPECT_EQ(be_read(a, "state"), "<No such file or directory>") << "not re-created";
    EXPECT_TRUE(eventually([&] { return ask(a, kBeAlive) == 0; }));
}

// xenhsa-ctl plug and unplug take the toolstack's step as libxl does for a PV device:
// both directories in one transaction; then online 0 and Closing, the backend's Closed,
// and both directories removed.
TEST_F(ServiceTest, CtlPlugsAndUnplugsADeviceAsTheToolstackDoes) {
    start_backend();
    const auto a = add_guest("guest-a", 0, /*plugged=*/false);
    const std::string dir = sim_.dir().string();
    const std::string domid = std::to_string(a);
    const auto plugged = run({XENHSA_CTL_BINARY, "--sim-dir", dir, "plug", "--domid", domid});
    ASSERT_TRUE(plugged.ok()) << plugged.out;
    EXPECT_EQ(be_read(a, "online"), "1");
    connect(a);
    EXPECT_EQ(be_read(a, "hotplug-status"), "connected");
    EXPECT_FALSE(run({XENHSA_CTL_BINARY, "--sim-dir", dir, "plug", "--domid", domid}).ok())
        << "plugged twice";
    const pid_t pid = worker_pid(a);
    ASSERT_GT(pid, 0);

    const auto unplugged =
        run({XENHSA_CTL_BINARY, "--sim-dir", dir, "unplug", "--domid", domid, "--timeout", "20"});
    EXPECT_TRUE(unplugged.ok()) << unplugged.out;
    EXPECT_EQ(be_read(a, "state"), "<No such file or directory>");
    EXPECT_FALSE(dom0_.store->read(xen::kNoTx, frontend_dir({a, 0}) + "/state"));
    EXPECT_TRUE(eventually([&] { return process_gone(pid); }));
    EXPECT_TRUE(eventually([&] { return device(a).is_null(); }));
    EXPECT_TRUE(eventually([&] { return ask(a, kBeAlive) == 0; })) << "the guest saw it go";
    EXPECT_FALSE(
        run({XENHSA_CTL_BINARY, "--sim-dir", dir, "unplug", "--domid", domid, "--timeout", "1"})
            .ok())
        << "nothing left to unplug";

    // Plugged again, the same guest connects to a fresh worker.
    ASSERT_TRUE(run({XENHSA_CTL_BINARY, "--sim-dir", dir, "plug", "--domid", domid}).ok());
    EXPECT_TRUE(be_state_is(a, "2")) << be_read(a, "state");
}

TEST_F(ServiceTest, UnplugWithoutABackendRemovesTheDeviceAfterItsTimeout) {
    const auto a = add_guest("guest-a", 0, /*plugged=*/false);  // no backend runs
    const std::string dir = sim_.dir().string();
    const std::string domid = std::to_string(a);
    ASSERT_TRUE(run({XENHSA_CTL_BINARY, "--sim-dir", dir, "plug", "--domid", domid}).ok());
    const auto unplugged =
        run({XENHSA_CTL_BINARY, "--sim-dir", dir, "unplug", "--domid", domid, "--timeout", "1"});
    EXPECT_FALSE(unplugged.ok()) << "nobody closed it";
    EXPECT_EQ(be_read(a, "state"), "<No such file or directory>");
    EXPECT_FALSE(dom0_.store->read(xen::kNoTx, frontend_dir({a, 0}) + "/state"));
}

TEST_F(ServiceTest, TellsSystemdWhenReady) {
    // A stand-in for systemd's notification socket.
    const fs::path path = sim_.dir() / "notify.sock";
    const int sock = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(sock, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
    ASSERT_EQ(::bind(sock, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    start_backend({"NOTIFY_SOCKET=" + path.string()});
    std::string got;
    pollfd pfd{sock, POLLIN, 0};
    if (::poll(&pfd, 1, static_cast<int>(std::chrono::milliseconds(kPatience).count())) > 0) {
        char buf[256] = {};
        const ssize_t n = ::recv(sock, buf, sizeof buf - 1, 0);
        got.assign(buf, n > 0 ? static_cast<std::size_t>(n) : 0);
    }
    ::close(sock);
    EXPECT_NE(got.find("READY=1"), std::string::npos) << got;
}

TEST_F(ServiceTest, WorkersEndWhenTheSupervisorDies) {
    // The orphaned worker becomes this process's child, so that the test reaps it.
    ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
    start_backend();
    const auto a = add_guest("guest-a");
    connect(a);
    const pid_t pid = worker_pid(a);
    ASSERT_GT(pid, 0);
    backend_->signal(SIGKILL);
    ASSERT_TRUE(backend_->wait(kPatience));
    EXPECT_TRUE(be_state_is(a, "6")) << "the orphaned worker revokes and closes";
    EXPECT_TRUE(eventually([&] { return ask(a, kBeAlive) == 0; }));
    int status = 0;
    EXPECT_TRUE(eventually([&] { return ::waitpid(pid, &status, WNOHANG) == pid; }));
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
    ::prctl(PR_SET_CHILD_SUBREAPER, 0);
}

}  // namespace
