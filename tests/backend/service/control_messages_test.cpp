// The control messages' shape and the JSON-lines channel between processes.
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/local/connect_pair.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>
#include <xenhsa/backend/service/control_messages.hpp>
#include <xenhsa/backend/service/line_channel.hpp>
#include <xenhsa/backend/service/logging.hpp>
#include <xenhsa/backend/service/supervisor.hpp>

namespace {

using namespace xenhsa::backend::service;
using Socket = boost::asio::local::stream_protocol::socket;

TEST(ControlMessages, DeviceStatusHasTheDocumentedShape) {
    DeviceStatus s{{3, 1}, XenbusState::connected, {10, 9, 8, 7, 6, 5, 4, 3}, ""};
    const auto j = to_json(s);
    for (const char* key :
         {"domid", "devid", "state", "mapped_pages", "pinned_pages", "lent_pages", "queues",
          "events", "handles", "doorbells_forwarded", "doorbell_polls"}) {
        EXPECT_TRUE(j.contains(key)) << key;
    }
    EXPECT_FALSE(j.contains("error"));
    EXPECT_EQ(j["state"], "Connected");
    EXPECT_EQ(j["domid"], 3);
    EXPECT_EQ(j["lent_pages"], 8);

    const auto back = device_status_from_json(j);
    ASSERT_TRUE(back);
    EXPECT_EQ(back->id, (DeviceId{3, 1}));
    EXPECT_EQ(back->state, XenbusState::connected);
    EXPECT_EQ(back->stats.handles, 5u);
    EXPECT_EQ(back->stats.doorbells_forwarded, 4u);
    EXPECT_EQ(back->stats.doorbell_polls, 3u);

    // From an older worker, without the doorbell counters: still a status.
    auto old_worker = j;
    old_worker.erase("doorbells_forwarded");
    old_worker.erase("doorbell_polls");
    const auto older = device_status_from_json(old_worker);
    ASSERT_TRUE(older);
    EXPECT_EQ(older->stats.doorbell_polls, 0u);
    old_worker["doorbell_polls"] = "lots";
    EXPECT_FALSE(device_status_from_json(old_worker));
}

TEST(ControlMessages, WrongShapesAreRefusedWithoutThrowing) {
    auto j = to_json(DeviceStatus{{3, 1}, XenbusState::closed, {}, "22 ring-ref: missing"});
    EXPECT_EQ(j["error"], "22 ring-ref: missing");
    auto bad = j;
    bad["queues"] = "many";
    EXPECT_FALSE(device_status_from_json(bad));
    bad = j;
    bad["domid"] = 70000;
    EXPECT_FALSE(device_status_from_json(bad));
    bad = j;
    bad["pinned_pages"] = -1;
    EXPECT_FALSE(device_status_from_json(bad));
    EXPECT_FALSE(device_status_from_json(nlohmann::json::array()));
    EXPECT_EQ(json_uint(nlohmann::json(5), "x"), std::nullopt);
    EXPECT_EQ(json_string(nlohmann::json{{"op", 1}}, "op"), std::nullopt);
    EXPECT_EQ(json_bool(nlohmann::json{{"ok", "yes"}}, "ok"), std::nullopt);
    EXPECT_EQ(json_bool(nlohmann::json{{"ok", true}}, "ok"), true);
}

TEST(Logging, JournalOnlyWhenStderrIsTheNamedStream) {
    struct stat st {};
    ASSERT_EQ(::fstat(2, &st), 0);
    const std::string mine = std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
    ::unsetenv("JOURNAL_STREAM");
    EXPECT_FALSE(stderr_is_journal());
    ::setenv("JOURNAL_STREAM", mine.c_str(), 1);
    EXPECT_TRUE(stderr_is_journal());
    ::setenv("JOURNAL_STREAM", (mine + "1").c_str(), 1);
    EXPECT_FALSE(stderr_is_journal()) << "another stream (stderr was redirected)";
    ::setenv("JOURNAL_STREAM", "garbage", 1);
    EXPECT_FALSE(stderr_is_journal());
    ::unsetenv("JOURNAL_STREAM");
    EXPECT_EQ(parse_log_level("warn"), spdlog::level::warn);
    EXPECT_EQ(parse_log_level("loud"), std::nullopt);
}

TEST(WorkerArguments, CarryTheConfinement) {
    SupervisorOptions options;
    options.platform.sim_dir = "/tmp/sim";
    options.confinement.user = "xenhsa-worker";
    options.confinement.seccomp = SeccompMode::log;
    auto args = worker_arguments(options, DeviceId{4, 2});
    auto after = [&](const std::string& flag) {
        const auto it = std::find(args.begin(), args.end(), flag);
        return it == args.end() || it + 1 == args.end() ? std::string("<none>") : *(it + 1);
    };
    EXPECT_EQ(after("--worker-user"), "xenhsa-worker");
    EXPECT_EQ(after("--worker-seccomp"), "log");
    EXPECT_EQ(after("--worker-confinement"), "<none>");
    options.confinement.enabled = false;
    args = worker_arguments(options, DeviceId{4, 2});
    EXPECT_EQ(after("--worker-confinement"), "off");
}

TEST(WorkerArguments, CarryThePlatformTheGpuAndTheQuotas) {
    SupervisorOptions options;
    options.platform.sim_dir = "/tmp/sim";
    options.connector.gpu_mode = "soft";
    options.connector.config_file = "/etc/q.json";
    options.connector.settings = {"max_handles=8"};
    options.log_level = spdlog::level::warn;
    options.connector.soft_gfx = "gfx90a";
    options.connector.agent_threads = 3;
    options.connector.ring_spin_us = 20;
    const auto args = worker_arguments(options, DeviceId{4, 2});
    const std::vector<std::string> want = {
        "--worker",       "--fe-domid",  "4",         "--devid",          "2",
        "--control-fd",   "3",           "--sim-dir", "/tmp/sim",         "--gpu",
        "soft",           "--soft-gfx",  "gfx90a",    "--agent-threads",  "3",
        "--ring-spin-us", "20",          "--config",  "/etc/q.json",      "--set",
        "max_handles=8",  "--log-level", "warn",      "--worker-seccomp", "kill"};
    EXPECT_EQ(args, want);
    options.platform.xen = true;
    const auto real = worker_arguments(options, DeviceId{4, 2});
    EXPECT_NE(std::find(real.begin(), real.end(), "--xen"), real.end());
    EXPECT_EQ(std::find(real.begin(), real.end(), "--sim-dir"), real.end());
}

TEST(ConnectorConfig, AgentThreadsShareTheCpusOutAmongLiveWorkers) {
    EXPECT_EQ(agent_threads_for(0, 1, 8), 8u);
    EXPECT_EQ(agent_threads_for(0, 4, 8), 2u);
    EXPECT_EQ(agent_threads_for(0, 3, 8), 2u);
    EXPECT_EQ(agent_threads_for(0, 16, 2), 1u);  // never none
    EXPECT_EQ(agent_threads_for(0, 0, 2), 2u);
    EXPECT_EQ(agent_threads_for(5, 16, 2), 5u);  // --agent-threads wins
    EXPECT_GE(usable_cpus(), 1u);
}

TEST(ConnectorConfig, TheSoftAgentTargetIsChecked) {
    ConnectorConfig config;
    config.gpu_mode = "soft";
    EXPECT_EQ(config.soft_gfx, "gfx900");
    EXPECT_EQ(check_connector_config(config), std::nullopt);
    for (const char* good : {"gfx906", "gfx908", "gfx90a"}) {
        config.soft_gfx = good;
        EXPECT_EQ(check_connector_config(config), std::nullopt) << good;
    }
    config.soft_gfx = "gfx1030";
    const auto problem = check_connector_config(config);
    ASSERT_TRUE(problem.has_value());
    EXPECT_NE(problem->find("--soft-gfx"), std::string::npos) << *problem;
    EXPECT_NE(problem->find("gfx1030"), std::string::npos) << *problem;
    std::string error;
    EXPECT_FALSE(make_connector(config, spdlog::default_logger(), error));
    EXPECT_NE(error.find("--soft-gfx"), std::string::npos) << error;
}

// The example quota file xenhsa-backend's package ships is one the backend accepts, and
// a broken one is refused by the same check.
TEST(ConnectorConfig, TheShippedExampleQuotaFileIsAccepted) {
    ConnectorConfig config;
    config.config_file = XENHSA_EXAMPLE_CONFIG;
    EXPECT_EQ(check_connector_config(config), std::nullopt);
    config.config_file = "/nonexistent/backend.json";
    EXPECT_NE(check_connector_config(config), std::nullopt);
}

class LineChannelTest : public ::testing::Test {
protected:
    LineChannelTest() : a(io), b(io) { boost::asio::local::connect_pair(a, b); }

    void run() { io.run_for(std::chrono::seconds(10)); }

    boost::asio::io_context io;
    Socket a;
    Socket b;
};

TEST_F(LineChannelTest, CarriesObjectsBothWays) {
    auto left = LineChannel::create(std::move(a));
    auto right = LineChannel::create(std::move(b));
    std::vector<nlohmann::json> got;
    right->start(
        [&](const nlohmann::json& m) {
            right->send({{"echo", m}});
            if (m.contains("last")) {
                right->close_after_send();
            }
        },
        [](std::error_code) {});
    left->send({{"op", "status"}, {"id", 1}});
    left->send({{"op", "revoke"}, {"id", 2}, {"last", true}});
    std::error_code closed{1, std::generic_category()};
    bool saw_close = false;
    left->start([&](const nlohmann::json& m) { got.push_back(m); },
                [&](std::error_code ec) {
                    closed = ec;
                    saw_close = true;
                });
    run();
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0]["echo"]["id"], 1);
    EXPECT_EQ(got[1]["echo"]["op"], "revoke");
    EXPECT_TRUE(saw_close);
    EXPECT_FALSE(closed);  // a clean EOF
}

TEST_F(LineChannelTest, GarbageClosesWithProtocolError) {
    auto channel = LineChannel::create(std::move(a));
    std::error_code closed;
    int messages = 0;
    channel->start([&](const nlohmann::json&) { ++messages; },
                   [&](std::error_code ec) { closed = ec; });
    const std::string junk = "{\"ok\":true}\n[1,2]\n";
    boost::asio::write(b, boost::asio::buffer(junk));
    run();
    EXPECT_EQ(messages, 1);
    EXPECT_EQ(closed, std::errc::protocol_error);
    EXPECT_FALSE(channel->is_open());
}

TEST_F(LineChannelTest, OverlongLineClosesWithProtocolError) {
    auto channel = LineChannel::create(std::move(a));
    std::error_code closed;
    channel->start([](const nlohmann::json&) {}, [&](std::error_code ec) { closed = ec; });
    const std::string big(kMaxLine + 10, 'x');
    boost::asio::async_write(b, boost::asio::buffer(big),
                             [](boost::system::error_code, std::size_t) {});
    run();
    EXPECT_EQ(closed, std::errc::protocol_error);
}

}  // namespace
