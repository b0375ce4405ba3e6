// The worker's xenbus state machine and the strict reading of the frontend's keys,
// in-process over the simulated xenstore tree with a fake session factory.
#include <gtest/gtest.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

#include <boost/asio/io_context.hpp>
#include <memory>
#include <optional>
#include <string>
#include <xenhsa/backend/service/frontend_keys.hpp>
#include <xenhsa/backend/service/xenbus.hpp>
#include <xenhsa/backend/service/xenbus_device.hpp>

#include "tree_store.hpp"

namespace {

using namespace xenhsa::backend::service;
using xenhsa::test::FixedDomains;
using xenhsa::test::TreeStore;
namespace xen = xenhsa::xen;

constexpr xen::DomId kFe = 5;
constexpr DeviceId kDev{kFe, 0};

struct FakeSession final : ConnectedGuest {
    explicit FakeSession(int& live_count) : live(live_count) { ++live; }
    ~FakeSession() override { --live; }
    [[nodiscard]] DeviceStats stats() const noexcept override { return {7, 6, 5, 4, 3, 2}; }
    void revoke_all() noexcept override { ++revokes; }
    bool revoke_handle(uint64_t handle) noexcept override { return handle == 0x42; }
    int& live;
    int revokes = 0;
};

struct FakeFactory final : GuestConnector {
    [[nodiscard]] uint32_t max_ring_page_order() const noexcept override { return max_order; }
    xen::Result<std::unique_ptr<ConnectedGuest>> connect(const ConnectArgs& start) override {
        ++connects;
        keys = start.keys;
        fatal = start.on_fatal;
        if (fail) {
            return fail;
        }
        auto session = std::make_unique<FakeSession>(live);
        last = session.get();
        return std::unique_ptr<ConnectedGuest>(std::move(session));
    }
    uint32_t max_order = 3;
    int connects = 0;
    int live = 0;
    std::error_code fail;
    std::optional<FrontendKeys> keys;
    CloseRequest fatal;
    FakeSession* last = nullptr;
};

class XenbusDeviceTest : public ::testing::Test {
protected:
    XenbusDeviceTest() {
        EXPECT_TRUE(tree.introduce_domain(kFe).has_value());
        platform.store = std::make_unique<TreeStore>(tree, 0);
        platform.domains = std::make_unique<FixedDomains>(0);
        // The toolstack's part: both directories, both states Initialising.
        auto& ts = toolstack;
        EXPECT_TRUE(ts.write(0, be + "/frontend", fe).has_value());
        EXPECT_TRUE(ts.write(0, be + "/frontend-id", std::to_string(kFe)).has_value());
        EXPECT_TRUE(ts.write(0, be + "/state", "1").has_value());
        EXPECT_TRUE(
            ts.set_perms(0, be, {{0, xen::StoreAccess::none}, {kFe, xen::StoreAccess::read}})
                .has_value());
        EXPECT_TRUE(ts.write(0, fe + "/backend", be).has_value());
        EXPECT_TRUE(ts.write(0, fe + "/backend-id", "0").has_value());
        EXPECT_TRUE(ts.write(0, fe + "/state", "1").has_value());
        EXPECT_TRUE(
            ts.set_perms(0, fe, {{kFe, xen::StoreAccess::none}, {0, xen::StoreAccess::read}})
                .has_value());
        device = std::make_unique<XenbusDevice>(io, platform, factory, kDev, log);
        device->on_store_failure = [this](std::error_code) { ++store_failures; };
    }

    // Delivers every queued watch event and every posted handler, until quiet.
    void settle() {
        for (int round = 0; round < 100; ++round) {
            bool any = false;
            for (;;) {
                auto ev = platform.store->next_event();
                ASSERT_TRUE(ev.has_value());
                if (!ev.value()) {
                    break;
                }
                any = true;
                device->on_watch(*ev.value());
            }
            io.restart();
            any = io.poll() != 0 || any;
            if (!any) {
                return;
            }
        }
        FAIL() << "the state machine did not settle";
    }

    void fe_write(const std::string& key, const std::string& value) {
        ASSERT_TRUE(guest.write(0, fe + "/" + key, value).has_value());
    }
    void fe_rm(const std::string& key) { ASSERT_TRUE(guest.rm(0, fe + "/" + key).has_value()); }
    std::optional<std::string> be_read(const std::string& key) {
        auto v = toolstack.read(0, be + "/" + key);
        return v ? std::optional<std::string>(v.value()) : std::nullopt;
    }
    std::string be_state() { return be_read("state").value_or("<none>"); }

    void publish(uint32_t order = 0) {
        if (order != 0) {
            fe_write("ring-page-order", std::to_string(order));
            for (uint32_t i = 0; i < (1u << order); ++i) {
                fe_write("ring-ref" + std::to_string(i), std::to_string(100 + i));
            }
        } else {
            fe_write("ring-ref", "100");
        }
        fe_write("notify-ref", "200");
        fe_write("doorbell-ref", "201");
        fe_write("event-channel", "9");
    }

    void start_and_publish(uint32_t order = 0) {
        ASSERT_TRUE(device->start().has_value());
        settle();
        ASSERT_EQ(be_state(), "2");
        publish(order);
        fe_write("state", "3");
        settle();
    }

    xen::sim::StoreTree tree;
    TreeStore toolstack{tree, 0};
    TreeStore guest{tree, kFe};
    xen::Platform platform;
    boost::asio::io_context io;
    FakeFactory factory;
    std::shared_ptr<spdlog::logger> log =
        std::make_shared<spdlog::logger>("test", std::make_shared<spdlog::sinks::null_sink_mt>());
    std::string be = backend_dir(0, kDev);
    std::string fe = frontend_dir(kDev);
    std::unique_ptr<XenbusDevice> device;
    int store_failures = 0;
};

TEST(XenbusNames, StatesAndPaths) {
    EXPECT_EQ(to_string(XenbusState::init_wait), "InitWait");
    EXPECT_EQ(to_string(XenbusState::connected), "Connected");
    EXPECT_EQ(parse_xenbus_state("4"), XenbusState::connected);
    EXPECT_EQ(parse_xenbus_state("04"), std::nullopt);
    EXPECT_EQ(parse_xenbus_state("9"), std::nullopt);
    EXPECT_EQ(parse_xenbus_state(" 4"), std::nullopt);
    EXPECT_EQ(backend_dir(0, {3, 1}), "/local/domain/0/backend/xenhsa/3/1");
    EXPECT_EQ(frontend_dir({3, 1}), "/local/domain/3/device/xenhsa/1");
}

TEST_F(XenbusDeviceTest, StartAdvertisesAndWaits) {
    ASSERT_TRUE(device->start().has_value());
    settle();
    EXPECT_EQ(be_read("versions"), "1");
    EXPECT_EQ(be_read("max-ring-page-order"), "3");
    EXPECT_EQ(be_read("hotplug-status"), "connected");  // what a toolstack waits for
    EXPECT_EQ(be_state(), "2");
    EXPECT_EQ(device->state(), XenbusState::init_wait);
    EXPECT_EQ(factory.connects, 0);
}

TEST_F(XenbusDeviceTest, ConnectsAfterTheFrontendPublishes) {
    start_and_publish();
    EXPECT_EQ(be_state(), "4");
    ASSERT_EQ(factory.connects, 1);
    ASSERT_TRUE(factory.keys);
    EXPECT_EQ(factory.keys->ring_page_order, 0u);
    EXPECT_EQ(factory.keys->ring_refs, std::vector<xen::GrantRef>{100});
    EXPECT_EQ(factory.keys->notify_ref, 200u);
    EXPECT_EQ(factory.keys->doorbell_ref, 201u);
    EXPECT_EQ(factory.keys->event_channel, 9u);
    EXPECT_EQ(factory.live, 1);
    const auto status = device->status();
    EXPECT_EQ(status.state, XenbusState::connected);
    EXPECT_EQ(status.stats.mapped_pages, 7u);
    EXPECT_EQ(status.stats.handles, 2u);
}

TEST_F(XenbusDeviceTest, MultiPageRingReadsNumberedRefsOnly) {
    fe_write("ring-ref", "bogus");  // order > 0 never reads it
    start_and_publish(2);
    EXPECT_EQ(be_state(), "4");
    ASSERT_TRUE(factory.keys);
    EXPECT_EQ(factory.keys->ring_page_order, 2u);
    EXPECT_EQ(factory.keys->ring_refs, (std::vector<xen::GrantRef>{100, 101, 102, 103}));
}

struct BadKey {
    const char* key;
    const char* value;  // nullptr: removed
    const char* error;  // the error node
};

class MalformedKeyTest : public XenbusDeviceTest, public ::testing::WithParamInterface<BadKey> {};

TEST_P(MalformedKeyTest, ClosesWithAnErrorNode) {
    ASSERT_TRUE(device->start().has_value());
    settle();
    publish();
    if (GetParam().value != nullptr) {
        fe_write(GetParam().key, GetParam().value);
    } else {
        fe_rm(GetParam().key);
    }
    fe_write("state", "3");
    settle();
    EXPECT_EQ(be_state(), "6");
    EXPECT_EQ(be_read("error"), GetParam().error);
    EXPECT_EQ(factory.connects, 0);
    EXPECT_EQ(store_failures, 0);
}

INSTANTIATE_TEST_SUITE_P(
    Keys, MalformedKeyTest,
    ::testing::Values(BadKey{"ring-ref", "12abc", "22 ring-ref: not a decimal store value"},
                      BadKey{"ring-ref", "-1", "22 ring-ref: not a decimal store value"},
                      BadKey{"ring-ref", " 12", "22 ring-ref: not a decimal store value"},
                      BadKey{"ring-ref", "012", "22 ring-ref: not a decimal store value"},
                      BadKey{"ring-ref", "", "22 ring-ref: not a decimal store value"},
                      BadKey{"ring-ref", "4294967296", "34 ring-ref: out of range"},
                      BadKey{"ring-page-order", "9", "34 ring-page-order: out of range"},
                      BadKey{"ring-page-order", "4", "34 ring-page-order: out of range"},
                      BadKey{"event-channel", "99999999999", "34 event-channel: out of range"},
                      BadKey{"ring-ref", nullptr, "2 ring-ref: missing"},
                      BadKey{"notify-ref", nullptr, "2 notify-ref: missing"},
                      BadKey{"doorbell-ref", nullptr, "2 doorbell-ref: missing"},
                      BadKey{"event-channel", nullptr, "2 event-channel: missing"}));

// Every page is its own grant (issue 11, item 4): ring-ref is 100, notify-ref 200.
INSTANTIATE_TEST_SUITE_P(
    DistinctGrants, MalformedKeyTest,
    ::testing::Values(
        BadKey{"notify-ref", "100", "17 notify-ref: names a grant another key names"},
        BadKey{"doorbell-ref", "100", "17 doorbell-ref: names a grant another key names"},
        BadKey{"doorbell-ref", "200", "17 doorbell-ref: names a grant another key names"}));

TEST_F(XenbusDeviceTest, OrderAboveWhatTheBackendAdvertisedIsRefused) {
    factory.max_order = 1;
    start_and_publish(2);
    EXPECT_EQ(be_state(), "6");
    EXPECT_EQ(be_read("error"), "34 ring-page-order: out of range");
}

TEST_F(XenbusDeviceTest, ReconnectAfterAnErrorClearsTheErrorNode) {
    ASSERT_TRUE(device->start().has_value());
    settle();
    publish();
    fe_write("ring-ref", "12abc");
    fe_write("state", "3");
    settle();
    ASSERT_EQ(be_state(), "6");
    // The frontend fixes its keys and starts over.
    fe_write("state", "1");
    settle();
    EXPECT_EQ(be_state(), "2");
    fe_write("ring-ref", "12");
    fe_write("state", "3");
    settle();
    EXPECT_EQ(be_state(), "4");
    EXPECT_EQ(be_read("error"), std::nullopt);
}

TEST_F(XenbusDeviceTest, FrontendClosingTearsDownThenReconnects) {
    start_and_publish();
    ASSERT_EQ(factory.live, 1);
    fe_write("state", "5");
    settle();
    EXPECT_EQ(factory.live, 0);
    EXPECT_EQ(be_state(), "6");
    fe_write("state", "6");
    settle();
    EXPECT_EQ(be_state(), "6");
    fe_write("state", "1");
    settle();
    EXPECT_EQ(be_state(), "2");
    fe_write("state", "3");
    settle();
    EXPECT_EQ(be_state(), "4");
    EXPECT_EQ(factory.connects, 2);
    EXPECT_EQ(factory.live, 1);
}

TEST_F(XenbusDeviceTest, FrontendRestartWhileConnected) {
    start_and_publish();
    fe_write("state", "1");
    settle();
    EXPECT_EQ(factory.live, 0);
    EXPECT_EQ(be_state(), "2");
}

TEST_F(XenbusDeviceTest, FrontendDirectoryGoneTearsDown) {
    start_and_publish();
    ASSERT_TRUE(toolstack.rm(0, fe).has_value());
    settle();
    EXPECT_EQ(factory.live, 0);
    EXPECT_EQ(be_state(), "6");
}

TEST_F(XenbusDeviceTest, MalformedFrontendStateCloses) {
    start_and_publish();
    fe_write("state", "4x");
    settle();
    EXPECT_EQ(factory.live, 0);
    EXPECT_EQ(be_state(), "6");
    EXPECT_EQ(be_read("error"), "22 state: not a xenbus state");
}

TEST_F(XenbusDeviceTest, SessionFatalClosesFromTheLoop) {
    start_and_publish();
    ASSERT_TRUE(factory.fatal);
    factory.fatal("ring overflow");
    EXPECT_EQ(factory.live, 1);  // not from inside the call
    settle();
    EXPECT_EQ(factory.live, 0);
    EXPECT_EQ(be_state(), "6");
    EXPECT_EQ(be_read("error"), "71 ring overflow");
}

TEST_F(XenbusDeviceTest, FatalOfAnEarlierSessionIsIgnored) {
    start_and_publish();
    auto old_fatal = factory.fatal;
    fe_write("state", "1");
    settle();
    fe_write("state", "3");
    settle();
    ASSERT_EQ(be_state(), "4");
    old_fatal("late");
    settle();
    EXPECT_EQ(be_state(), "4");
    EXPECT_EQ(factory.live, 1);
}

TEST_F(XenbusDeviceTest, ConnectFailureCloses) {
    factory.fail = xen::errc(std::errc::permission_denied);
    start_and_publish();
    EXPECT_EQ(be_state(), "6");
    EXPECT_EQ(be_read("error").value_or("").rfind("13 connect: ", 0), 0u);
}

TEST_F(XenbusDeviceTest, RevokeAllReachesTheSession) {
    start_and_publish();
    device->revoke_all();
    ASSERT_NE(factory.last, nullptr);
    EXPECT_EQ(factory.last->revokes, 1);
    EXPECT_TRUE(device->revoke_handle(0x42));
    EXPECT_FALSE(device->revoke_handle(0x43));
    EXPECT_EQ(be_state(), "4");
}

TEST_F(XenbusDeviceTest, ShutdownClosesAndIgnoresTheFrontend) {
    start_and_publish();
    device->shutdown();
    EXPECT_EQ(factory.live, 0);
    EXPECT_EQ(be_state(), "6");
    fe_write("state", "1");
    settle();
    EXPECT_EQ(be_state(), "6");
}

// The toolstack's unplug, as libxl does it: online 0 and state Closing in one
// transaction, then it waits for Closed before it removes the directories.
class UnplugTest : public XenbusDeviceTest {
protected:
    void unplug_offline() {
        auto tx = toolstack.transaction_start();
        ASSERT_TRUE(tx.has_value());
        ASSERT_TRUE(toolstack.write(tx.value(), be + "/online", "0").has_value());
        ASSERT_TRUE(toolstack.write(tx.value(), be + "/state", "5").has_value());
        ASSERT_TRUE(toolstack.transaction_end(tx.value(), true).has_value());
    }
};

TEST_F(UnplugTest, OfflineClosesAndKeepsTheDeviceClosedUntilOnlineAgain) {
    ASSERT_TRUE(toolstack.write(0, be + "/online", "1").has_value());
    start_and_publish();
    ASSERT_EQ(factory.live, 1);
    unplug_offline();
    settle();
    EXPECT_EQ(factory.live, 0);
    EXPECT_EQ(be_state(), "6");

    fe_write("state", "6");
    fe_write("state", "1");  // a frontend that would reconnect is not served while offline
    settle();
    EXPECT_EQ(be_state(), "6");
    EXPECT_EQ(factory.connects, 1);

    ASSERT_TRUE(toolstack.write(0, be + "/online", "1").has_value());  // plugged again
    settle();
    EXPECT_EQ(be_state(), "2");
    fe_write("state", "3");
    settle();
    EXPECT_EQ(be_state(), "4");
    EXPECT_EQ(factory.connects, 2);
    EXPECT_EQ(store_failures, 0);
}

TEST_F(UnplugTest, OfflineAfterTheGuestClosedSaysClosedAgain) {
    start_and_publish();
    fe_write("state", "5");
    settle();
    ASSERT_EQ(be_state(), "6");
    unplug_offline();
    settle();
    EXPECT_EQ(be_state(), "6") << "the toolstack waits for Closed";
}

TEST_F(UnplugTest, OfflineBeforeTheFrontendConnectsClosesTheAdvertisedDevice) {
    ASSERT_TRUE(device->start().has_value());
    settle();
    ASSERT_EQ(be_state(), "2");
    ASSERT_TRUE(toolstack.write(0, be + "/online", "0").has_value());
    settle();
    EXPECT_EQ(be_state(), "6");
    publish();
    fe_write("state", "3");
    settle();
    EXPECT_EQ(factory.connects, 0);
}

TEST_F(XenbusDeviceTest, UnpluggedDeviceIsNotRecreated) {
    start_and_publish();
    ASSERT_TRUE(toolstack.rm(0, be).has_value());
    fe_write("state", "5");
    settle();
    EXPECT_EQ(factory.live, 0);
    EXPECT_FALSE(toolstack.read(0, be).has_value());
    EXPECT_EQ(store_failures, 0);
}

TEST_F(XenbusDeviceTest, StoreFailureIsReported) {
    ASSERT_TRUE(device->start().has_value());
    settle();
    publish();
    static_cast<TreeStore&>(*platform.store).fail_writes = true;
    fe_write("state", "3");
    settle();
    EXPECT_EQ(store_failures, 1);
    EXPECT_EQ(factory.live, 0);
}

TEST(FrontendKeys, ReadsEveryKeyStrictly) {
    xen::sim::StoreTree tree;
    TreeStore store(tree, 0);
    const std::string dir = "/local/domain/7/device/xenhsa/0";
    ASSERT_TRUE(store.write(0, dir + "/ring-page-order", "1").has_value());
    ASSERT_TRUE(store.write(0, dir + "/ring-ref0", "4294967295").has_value());
    ASSERT_TRUE(store.write(0, dir + "/ring-ref1", "0").has_value());
    ASSERT_TRUE(store.write(0, dir + "/notify-ref", "3").has_value());
    ASSERT_TRUE(store.write(0, dir + "/doorbell-ref", "4").has_value());
    ASSERT_TRUE(store.write(0, dir + "/event-channel", "5").has_value());
    auto keys = read_frontend_keys(store, dir, 3);
    ASSERT_TRUE(keys.has_value());
    EXPECT_EQ(keys.value().ring_refs, (std::vector<xen::GrantRef>{4294967295u, 0u}));

    // A grant named twice: the ring's pages, the notify page and the doorbell page are
    // distinct pages, or one would overlay another.
    ASSERT_TRUE(store.write(0, dir + "/ring-ref1", "4294967295").has_value());
    auto twice = read_frontend_keys(store, dir, 3);
    ASSERT_FALSE(twice.has_value());
    EXPECT_EQ(twice.error().key, "ring-ref1");
    EXPECT_EQ(twice.error().error, std::errc::file_exists);
    ASSERT_TRUE(store.write(0, dir + "/ring-ref1", "0").has_value());

    ASSERT_TRUE(store.rm(0, dir + "/ring-ref1").has_value());
    auto missing = read_frontend_keys(store, dir, 3);
    ASSERT_FALSE(missing.has_value());
    EXPECT_EQ(missing.error().key, "ring-ref1");
    EXPECT_EQ(missing.error().error, std::errc::no_such_file_or_directory);
}

}  // namespace
