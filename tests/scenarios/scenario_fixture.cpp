#include "scenario_fixture.hpp"

#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <charconv>
#include <child_process.hpp>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <xenhsa/xen/sim/client.hpp>

namespace xenhsa::testing::scenarios {

void ScenarioTest::SetUp() {
    sim_.emplace(SimInstance::start(sim_arguments()));
    gpu_ = backend_gpu(sim_->dir());
    // The guests this test starts find the emulated GPU's built-in kernels here.
    for (const std::string& variable : builtin_kernel_env(gpu_)) {
        const auto equals = variable.find('=');
        ::setenv(variable.substr(0, equals).c_str(), variable.substr(equals + 1).c_str(), 1);
    }
    start_backend();
}

pid_t ScenarioTest::launch_backend(const std::vector<std::string>& command) {
    // sh execs the backend with its stderr in a file: the same process, its log kept. The
    // GPU's variables reach the backend only (env sets them): a preloaded shim built with a
    // sanitizer would not start in sh.
    std::vector<std::string> args{"/bin/sh", "-c", "exec env \"$@\" 2>>" + log_path(), "sh"};
    args.insert(args.end(), gpu_.env.begin(), gpu_.env.end());
    args.insert(args.end(), command.begin(), command.end());
    return spawn(args);
}

void ScenarioTest::start_backend() {
    const std::string dir = sim_->dir().string();
    const std::string socket = (sim_->dir() / "backend.sock").string();
    std::filesystem::remove(socket);  // a crashed backend's
    backend_ = std::make_unique<Process>(launch_backend(with_backend_test_args(
        {XENHSA_BACKEND_BINARY, "--sim-dir", dir, "--gpu", gpu_.mode, "--log-level", "warn"})));
    ASSERT_GT(backend_->pid(), 0);
    std::optional<int> ended;
    ASSERT_TRUE(eventually([&] {
        ended = backend_->wait(std::chrono::milliseconds(0));
        return ended || std::filesystem::exists(socket);
    })) << "xenhsa-backend's control socket never appeared";
    ASSERT_FALSE(ended) << "xenhsa-backend " << describe_status(ended);
}

void ScenarioTest::crash_backend() {
    backend_->signal(SIGKILL);
    const auto ended = backend_->wait(kPatience);
    ASSERT_TRUE(ended && WIFSIGNALED(*ended) && WTERMSIG(*ended) == SIGKILL)
        << describe_status(ended);
    backend_.reset();
}

void ScenarioTest::TearDown() {
    if (backend_ && backend_->pid() > 0) {
        // A worker that broke its seccomp filter dies like any other: the scenario may
        // have passed through a reconnect, so ask the supervisor, which counts them.
        if (const auto s = status()) {
            EXPECT_EQ(s->value("confinement_violations", uint64_t{0}), 0u)
                << "a worker was killed by its seccomp filter (dmesg shows the system call)";
        }
        backend_->signal(SIGTERM);
        const auto ended = backend_->wait(kPatience);
        EXPECT_TRUE(exited_with(ended, 0))
            << "xenhsa-backend on SIGTERM: " << describe_status(ended)
            << " (a sanitizer report on its stderr?)";
        if (HasFailure()) {
            std::cerr << "--- xenhsa-backend's stderr ---\n" << backend_log() << "---\n";
        }
    }
    backend_.reset();
    sim_.reset();
}

std::string ScenarioTest::log_path() const { return (sim_->dir() / "backend.log").string(); }

std::string ScenarioTest::backend_log() const {
    std::ifstream in(log_path());
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

nlohmann::json ScenarioTest::control(const nlohmann::json& request) {
    const std::string socket = (sim_->dir() / "backend.sock").string();
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, socket.c_str(), sizeof addr.sun_path - 1);
    std::string answer;
    if (fd >= 0 && ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0) {
        const std::string line = request.dump() + "\n";
        if (::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size())) {
            char c = 0;
            while (::read(fd, &c, 1) == 1 && c != '\n') {
                answer.push_back(c);
            }
        }
    }
    if (fd >= 0) {
        ::close(fd);
    }
    return nlohmann::json::parse(answer, nullptr, false);
}

bool ScenarioTest::nothing_held(std::string& why) {
    const auto s = control({{"op", "status"}});
    if (!s.is_object() || !s.contains("domains") || !s["domains"].is_array()) {
        why = "no status answer";
        return false;
    }
    for (const auto& d : s["domains"]) {
        for (const char* key :
             {"mapped_pages", "pinned_pages", "lent_pages", "queues", "events", "handles"}) {
            if (!d.is_object() || d.value(key, uint64_t{0}) != 0) {
                why = "backend status " + d.dump();
                return false;
            }
        }
    }
    const auto domains = xen::sim::list_domains(sim_->dir());
    if (!domains) {
        why = "xenhsa-sim list: " + domains.error().message();
        return false;
    }
    for (const auto& d : domains.value()) {
        if (d.domid == 0 && (d.mapped_pages != 0 || d.shared_pages != 0)) {
            why = "dom0 still maps " + std::to_string(d.mapped_pages) + " grant pages and shares " +
                  std::to_string(d.shared_pages);
            return false;
        }
    }
    return true;
}

std::vector<std::string> ScenarioTest::guest_args(const std::vector<std::string>& scenario) const {
    std::vector<std::string> args{XENHSA_GUEST_BINARY, "--sim-dir", sim_->dir().string()};
    args.insert(args.end(), scenario.begin(), scenario.end());
    return args;
}

Output ScenarioTest::run_guest(const std::vector<std::string>& scenario) {
    return run(guest_args(scenario), kScenarioPatience);
}

std::unique_ptr<CapturedProcess> ScenarioTest::start_guest(
    const std::vector<std::string>& scenario) {
    return std::make_unique<CapturedProcess>(guest_args(scenario));
}

Output ScenarioTest::finish_guest(CapturedProcess& guest) {
    const auto ended = guest.wait(kScenarioPatience);
    return {ended.value_or(-1), guest.output()};
}

Output ScenarioTest::ctl(const std::vector<std::string>& args) {
    std::vector<std::string> all{XENHSA_CTL_BINARY, "--sim-dir", sim_->dir().string()};
    all.insert(all.end(), args.begin(), args.end());
    return run(all);
}

std::optional<nlohmann::json> ScenarioTest::status() {
    std::optional<nlohmann::json> answer;
    (void)eventually([&] {
        const Output r = ctl({"status", "--json"});
        auto j = nlohmann::json::parse(r.out, nullptr, false);
        if (r.ok() && j.is_object() && j.contains("domains") && j["domains"].is_array()) {
            answer = std::move(j);
        }
        return answer.has_value();
    });
    return answer;
}

namespace {

std::optional<nlohmann::json> device_where(const std::optional<nlohmann::json>& status,
                                           uint32_t domid, std::optional<uint32_t> devid) {
    if (!status) {
        return std::nullopt;
    }
    for (const auto& d : (*status)["domains"]) {
        if (d.is_object() && d.value("domid", int64_t{-1}) == int64_t{domid} &&
            (!devid || d.value("devid", int64_t{-1}) == int64_t{*devid})) {
            return d;
        }
    }
    return nlohmann::json(nullptr);
}

}  // namespace

std::optional<nlohmann::json> ScenarioTest::device(uint32_t domid) {
    return device_where(status(), domid, std::nullopt);
}

std::optional<nlohmann::json> ScenarioTest::device(uint32_t domid, uint32_t devid) {
    return device_where(status(), domid, devid);
}

bool ScenarioTest::released(uint32_t domid) {
    const auto d = device(domid);
    if (!d) {
        return false;
    }
    if (d->is_null()) {
        return true;
    }
    for (const char* key :
         {"mapped_pages", "pinned_pages", "lent_pages", "queues", "events", "handles"}) {
        if (!(*d)[key].is_number_unsigned() || (*d)[key].get<uint64_t>() != 0) {
            return false;
        }
    }
    return true;
}

::testing::AssertionResult ScenarioTest::released_within(uint32_t domid,
                                                         std::chrono::milliseconds timeout) {
    if (eventually([&] { return released(domid); }, timeout)) {
        return ::testing::AssertionSuccess();
    }
    return ::testing::AssertionFailure()
           << "after " << timeout.count() << " ms the backend still holds something of domain "
           << domid << ": " << status_text();
}

std::optional<uint32_t> ScenarioTest::expect_passed_and_released(
    const Output& run, const std::vector<std::string>& must_hold) {
    EXPECT_TRUE(scenario_passed(run));
    for (const auto& name : must_hold) {
        EXPECT_TRUE(check_held(run, name));
    }
    const auto domid = domid_in(run.out);
    if (!domid) {
        ADD_FAILURE() << "no domid in the guest's output: " << run.out;
        return std::nullopt;
    }
    EXPECT_TRUE(released_within(*domid));
    return domid;
}

std::string ScenarioTest::status_text() {
    const auto s = status();
    return s ? s->dump() : std::string("<xenhsa-ctl status did not answer>");
}

std::optional<uint32_t> domid_in(std::string_view line_or_output) {
    const auto text = parse_report(line_or_output).info_value("domid");
    uint32_t domid = 0;
    if (!text || text->empty() ||
        std::from_chars(text->data(), text->data() + text->size(), domid).ptr !=
            text->data() + text->size()) {
        return std::nullopt;
    }
    return domid;
}

}  // namespace xenhsa::testing::scenarios
