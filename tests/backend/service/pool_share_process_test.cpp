// Issue 11 item 2 on the simulated hypervisor: guests share the backend's LEND pool, and a
// guest that keeps lent pages mapped after its connection ended has them counted against
// its own share, never another guest's. The real xenhsa-sim daemon and xenhsa-backend;
// each guest is a forked child driving the guest library (GuestDevice, Client).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <xenhsa/proto.h>

#include <child_process.hpp>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sim_instance.hpp>
#include <spawned_process.hpp>
#include <string>
#include <vector>
#include <xenhsa/backend/service/xenbus.hpp>
#include <xenhsa/frontend/client.hpp>
#include <xenhsa/frontend/errors.hpp>
#include <xenhsa/frontend/guest_device.hpp>
#include <xenhsa/frontend/toolstack.hpp>
#include <xenhsa/xen/sim/client.hpp>

namespace {

namespace fs = std::filesystem;
namespace xen = xenhsa::xen;
namespace sim = xenhsa::xen::sim;
namespace frontend = xenhsa::frontend;
using xenhsa::backend::service::backend_dir;
using xenhsa::testing::eventually;
using xenhsa::testing::kPatience;
using xenhsa::testing::Link;
using xenhsa::testing::Process;
using xenhsa::testing::run;
using xenhsa::testing::with_backend_test_args;

// Commands to a lending guest; kLend carries the page count in its upper 32 bits.
enum Cmd : uint64_t {
    kConnect = 1,  // (re)connect and HELLO: answers the session's max_lend_pages
    kLend,         // LEND: answers the status (OK, QUOTA, ...); the pages stay mapped
    kDisconnect,   // xenbus close, keeping every lent page mapped
    kUnmapOne,     // unmaps one held lent buffer locally (the oldest)
    kUnmapAll,     // unmaps every held lent buffer locally
    kExit,
};
constexpr uint64_t kFailed = 1u << 20;

uint64_t lend(uint32_t pages) { return kLend | uint64_t{pages} << 32; }

// The child's body: a guest that lends and may keep what it borrowed past its connection.
int lending_guest(const fs::path& dir, xen::DomId self, Link& link) {
    auto platform = sim::attach(dir, self);
    if (!platform) {
        return 1;
    }
    xen::Platform& p = platform.value();
    frontend::GuestDevice device(p, frontend::DeviceConfig{});
    struct Connection {
        std::unique_ptr<frontend::Client> client;
        std::vector<frontend::LentBuffer> lent;  // destroyed before their client
    };
    std::vector<Connection> connections;  // the current one last
    if (!link.send(0)) {
        return 1;
    }
    for (;;) {
        const auto cmd = link.receive(std::chrono::hours(1));
        if (!cmd || *cmd == kExit) {
            return 0;
        }
        uint64_t answer = kFailed;
        switch (*cmd & 0xFFFFFFFFu) {
            case kConnect: {
                auto connected = device.state() == frontend::DeviceState::idle ? device.connect()
                                                                               : device.reconnect();
                if (!connected) {
                    break;
                }
                Connection c;
                c.client = std::make_unique<frontend::Client>(device, *p.sharer, *p.grants);
                auto session = c.client->hello();
                if (!session) {
                    break;
                }
                answer = session.value().max_lend_pages;
                connections.push_back(std::move(c));
                break;
            }
            case kLend: {
                if (connections.empty()) {
                    break;
                }
                const auto pages = static_cast<uint32_t>(*cmd >> 32);
                auto lent = connections.back().client->lend(pages, true);
                if (lent) {
                    connections.back().lent.push_back(std::move(lent).value());
                    answer = XENHSA_STATUS_OK;
                } else if (frontend::status_of(lent.error()) >= 0) {
                    answer = static_cast<uint64_t>(frontend::status_of(lent.error()));
                }
                break;
            }
            case kDisconnect:
                answer = device.close() ? 0 : kFailed;
                break;
            case kUnmapOne:
                for (auto& c : connections) {
                    if (!c.lent.empty()) {
                        c.lent.erase(c.lent.begin());
                        answer = 0;
                        break;
                    }
                }
                break;
            case kUnmapAll:
                for (auto& c : connections) {
                    c.lent.clear();
                }
                answer = 0;
                break;
            default:
                break;
        }
        if (!link.send(answer)) {
            return 0;
        }
    }
}

class PoolShareTest : public ::testing::Test {
protected:
    PoolShareTest() : sim_(SimInstance::start()), dom0_(sim::attach(sim_.dir(), 0).value()) {}

    ~PoolShareTest() override {
        guests_.clear();
        if (backend_) {
            backend_->signal(SIGTERM);
            (void)backend_->wait(kPatience);
        }
    }

    void start_backend(const std::vector<std::string>& extra) {
        std::vector<std::string> args{XENHSA_BACKEND_BINARY, "--sim-dir", sim_.dir().string(),
                                      "--gpu", "soft"};
        args.insert(args.end(), extra.begin(), extra.end());
        backend_ = std::make_unique<Process>(with_backend_test_args(args));
        ASSERT_TRUE(eventually([&] { return fs::exists(sim_.dir() / "backend.sock"); }));
    }

    // A guest domain with a lending guest process and one plugged device.
    xen::DomId add_guest(const std::string& name) {
        auto domid = sim::create_domain(sim_.dir(), name, 64);
        EXPECT_TRUE(domid);
        if (!domid) {
            return 0;
        }
        const xen::DomId fe = domid.value();
        auto child = std::make_unique<ChildProcess>(ChildProcess::spawn(
            [dir = sim_.dir(), fe](Link& link) { return lending_guest(dir, fe, link); }));
        EXPECT_EQ(child->link().receive(kPatience), std::optional<uint64_t>(0));
        guests_[fe] = std::move(child);
        EXPECT_TRUE(frontend::add_device(*dom0_.store, 0, fe, 0));
        return fe;
    }

    uint64_t ask(xen::DomId fe, uint64_t cmd) {
        auto& link = guests_.at(fe)->link();
        return link.send(cmd) ? link.receive(kPatience).value_or(kFailed + 1) : kFailed + 2;
    }

    std::string be_read(xen::DomId fe, const std::string& key) {
        auto v = dom0_.store->read(xen::kNoTx, backend_dir(0, {fe, 0}) + "/" + key);
        return v ? v.value() : "<" + v.error().message() + ">";
    }

    nlohmann::json device(xen::DomId fe) {
        const auto r =
            run({XENHSA_CTL_BINARY, "--sim-dir", sim_.dir().string(), "status", "--json"});
        const auto j = nlohmann::json::parse(r.out, nullptr, false);
        if (j.is_object() && j.contains("domains") && j["domains"].is_array()) {
            for (const auto& d : j["domains"]) {
                if (d.value("domid", -1) == fe) {
                    return d;
                }
            }
        }
        return nullptr;
    }

    SimInstance sim_;
    xen::Platform dom0_;
    std::unique_ptr<Process> backend_;
    std::map<xen::DomId, std::unique_ptr<ChildProcess>> guests_;
};

TEST_F(PoolShareTest, AGuestHoldingLentPagesExhaustsOnlyItsOwnShare) {
    start_backend({"--max-guests", "2", "--lend-pool-pages", "64"});
    const auto a = add_guest("guest-a");
    const auto b = add_guest("guest-b");

    // Each guest's share is half the pool; A lends all of it and keeps it mapped.
    ASSERT_EQ(ask(a, kConnect), 32u);
    EXPECT_EQ(device(a).value("lend_share", 0), 32);
    EXPECT_EQ(device(a).value("held_pages", 99), 0);
    ASSERT_EQ(ask(a, lend(16)), uint64_t{XENHSA_STATUS_OK});
    ASSERT_EQ(ask(a, lend(16)), uint64_t{XENHSA_STATUS_OK});
    EXPECT_EQ(ask(a, lend(1)), uint64_t{XENHSA_STATUS_QUOTA});
    ASSERT_EQ(ask(a, kDisconnect), 0u);

    // Reconnected, A still holds its whole share: no LEND at all.
    EXPECT_EQ(ask(a, kConnect), 0u) << "HELLO's max_lend_pages";
    EXPECT_EQ(ask(a, lend(1)), uint64_t{XENHSA_STATUS_QUOTA});
    EXPECT_TRUE(eventually([&] { return device(a).value("held_pages", 0) == 32; }))
        << device(a).dump();

    // Meanwhile B lends its full share.
    ASSERT_EQ(ask(b, kConnect), 32u);
    EXPECT_EQ(ask(b, lend(32)), uint64_t{XENHSA_STATUS_OK});
    EXPECT_EQ(ask(b, lend(1)), uint64_t{XENHSA_STATUS_QUOTA});

    // A gives half back: the next connection gets that half.
    ASSERT_EQ(ask(a, kDisconnect), 0u);
    ASSERT_EQ(ask(a, kUnmapOne), 0u);
    EXPECT_EQ(ask(a, kConnect), 16u);
    EXPECT_EQ(device(a).value("held_pages", 0), 16) << device(a).dump();
    EXPECT_EQ(ask(a, lend(17)), uint64_t{XENHSA_STATUS_QUOTA});
    EXPECT_EQ(ask(a, lend(16)), uint64_t{XENHSA_STATUS_OK});

    // Everything unmapped: the full share again.
    ASSERT_EQ(ask(a, kDisconnect), 0u);
    ASSERT_EQ(ask(a, kUnmapAll), 0u);
    EXPECT_EQ(ask(a, kConnect), 32u);
    EXPECT_EQ(ask(a, lend(32)), uint64_t{XENHSA_STATUS_OK});
    EXPECT_EQ(device(a).value("held_pages", 99), 0);
    EXPECT_EQ(be_read(b, "state"), "4") << "B was never disturbed";
}

TEST_F(PoolShareTest, ADeviceBeyondMaxGuestsIsRefusedAndGetsTheNextFreeSlot) {
    start_backend({"--max-guests", "2", "--lend-pool-pages", "64"});
    const auto a = add_guest("guest-a");
    const auto b = add_guest("guest-b");
    ASSERT_EQ(ask(a, kConnect), 32u);
    ASSERT_EQ(ask(b, kConnect), 32u);

    const auto c = add_guest("guest-c");
    EXPECT_TRUE(eventually([&] { return be_read(c, "state") == "6"; })) << be_read(c, "state");
    EXPECT_EQ(be_read(c, "error"), "87 the backend serves at most 2 guest devices");
    EXPECT_EQ(device(c).count("lend_share"), 0u) << "no share: " << device(c).dump();
    EXPECT_EQ(ask(c, kConnect), kFailed) << "the frontend sees its device closed";

    // The others go on.
    EXPECT_EQ(ask(a, lend(8)), uint64_t{XENHSA_STATUS_OK});
    EXPECT_EQ(ask(b, lend(8)), uint64_t{XENHSA_STATUS_OK});

    // B's domain goes away: C gets its slot and is served.
    ASSERT_TRUE(sim::destroy_domain(sim_.dir(), b));
    EXPECT_TRUE(eventually([&] { return device(b).is_null(); }));
    EXPECT_EQ(ask(c, kConnect), 32u);
    EXPECT_EQ(ask(c, lend(32)), uint64_t{XENHSA_STATUS_OK});
}

// The backend logs why on stderr; the reasons themselves are PoolShares' unit tests.
TEST(PoolShareOptions, PoolsTooSmallForMaxGuestsStopTheStart) {
    const auto sim = SimInstance::start();
    const auto dir = sim.dir().string();
    const auto exited_1 = [](const xenhsa::testing::Output& r) {
        return r.status != -1 && WIFEXITED(r.status) && WEXITSTATUS(r.status) == 1;
    };
    EXPECT_TRUE(exited_1(run(
        {XENHSA_BACKEND_BINARY, "--sim-dir", dir, "--max-guests", "100", "--lend-pool-pages", "64"},
        std::chrono::seconds(10))))
        << "less than a LEND page each";
    EXPECT_TRUE(exited_1(run(
        {XENHSA_BACKEND_BINARY, "--sim-dir", dir, "--max-guests", "8", "--event-channel-pool", "7"},
        std::chrono::seconds(10))))
        << "an event channel each";
    EXPECT_TRUE(
        exited_1(run({XENHSA_BACKEND_BINARY, "--sim-dir", dir, "--lend-pool-pages", "4294967295"},
                     std::chrono::seconds(10))))
        << "more than dom0's grant table";
}

}  // namespace
