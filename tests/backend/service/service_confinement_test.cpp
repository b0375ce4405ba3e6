// A worker's confinement, as the service runs it on the simulated hypervisor
// (service_fixture.hpp): every thread confined, a forbidden call kills only that worker,
// what a compromised worker tries is refused, a uid and a CPU share of its own each.
#include "service_fixture.hpp"

namespace {

using namespace xenhsa::test::service_process;

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
    // The ioctls a real-Xen worker's grant broker makes for it (mapping a grant, binding a
    // port: they name a domain), made directly.
    refused({{"attempt", "ioctl-gntdev-map"}}, {EPERM});
    refused({{"attempt", "ioctl-evtchn-bind"}}, {EPERM});
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

}  // namespace
