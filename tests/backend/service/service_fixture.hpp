// The service process tests' fixture: a real xenhsa-sim daemon, the real xenhsa-backend
// (supervisor + workers) and xenhsa-ctl binaries, the test as toolstack (dom0) and
// scripted frontends in forked children attached to guest domains.
#ifndef XENHSA_TESTS_BACKEND_SERVICE_SERVICE_FIXTURE_HPP
#define XENHSA_TESTS_BACKEND_SERVICE_SERVICE_FIXTURE_HPP

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

namespace xenhsa::test::service_process {

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

}  // namespace xenhsa::test::service_process

#endif
