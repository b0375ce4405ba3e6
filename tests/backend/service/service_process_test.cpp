// The service's processes on the simulated hypervisor (service_fixture.hpp): discovery,
// the ring, quotas, operator commands, ends of guests, devices and the supervisor.
#include "service_fixture.hpp"

namespace {

using namespace xenhsa::test::service_process;

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

TEST_F(ServiceTest, DestroyedGuestLosesItsWorker) {
    const auto [a, b] = start_with_two_guests();
    const pid_t pid_a = worker_pid(a);
    ASSERT_GT(pid_a, 0);

    ASSERT_TRUE(sim::destroy_domain(sim_.dir(), a));
    EXPECT_TRUE(eventually([&] { return process_gone(pid_a); }));
    EXPECT_TRUE(eventually([&] { return device(a).is_null(); })) << "the device is forgotten";
    // The toolstack (xl knows no xenhsa device) leaves the backend's side to the backend.
    EXPECT_TRUE(eventually([&] {
        return !dom0_.store->read(xen::kNoTx,
                                  "/local/domain/0/backend/xenhsa/" + std::to_string(a));
    })) << "the backend removes its directories of the dead guest";
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
