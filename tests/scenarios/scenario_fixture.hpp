// A real xenhsa-sim daemon and a real `xenhsa-backend --gpu soft` per test (or `--gpu kfd`
// over the KFD shim: XENHSA_TEST_GPU, backend_gpu.hpp), and
// `xenhsa-guest --sim-dir DIR <scenario>` processes against them (each creates its own
// domain and plugs its device as the toolstack would). The backend's view comes from
// `xenhsa-ctl status --json`. At the end the guests are killed first, then the backend
// must exit 0 on SIGTERM (a sanitizer report would make it fail). The backend's log (its
// stderr) is kept in the sim's directory and shown when a test fails.
#ifndef XENHSA_TESTS_SCENARIOS_SCENARIO_FIXTURE_HPP
#define XENHSA_TESTS_SCENARIOS_SCENARIO_FIXTURE_HPP

#include <gtest/gtest.h>

#include <backend_gpu.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sim_instance.hpp>
#include <spawned_process.hpp>
#include <string>
#include <vector>

#include "guest_report.hpp"

namespace xenhsa::testing::scenarios {

// A guest scenario may take long under ASan on a loaded machine (stress maps thousands of
// pages); this only bounds a hang.
inline constexpr std::chrono::milliseconds kScenarioPatience{120000};

class ScenarioTest : public ::testing::Test {
protected:
    void SetUp() override;
    void TearDown() override;

    // `xenhsa-guest --sim-dir DIR <scenario...>` to its end.
    Output run_guest(const std::vector<std::string>& scenario);
    // The same, running; its stdout is read as it goes.
    std::unique_ptr<CapturedProcess> start_guest(const std::vector<std::string>& scenario);
    // A started guest to its end (SIGKILLed after kScenarioPatience).
    static Output finish_guest(CapturedProcess& guest);
    // `xenhsa-ctl --sim-dir DIR <args...>` to its end.
    Output ctl(const std::vector<std::string>& args);

    // `xenhsa-ctl status --json`, asked again until every worker answers (one whose guest
    // just left may be busy tearing down); nullopt if that took longer than kPatience.
    std::optional<nlohmann::json> status();
    // The entry of `domid` in status's "domains": null when the backend knows no such
    // device, nullopt when status did not answer.
    std::optional<nlohmann::json> device(uint32_t domid);
    // The same for device `devid` of `domid` (a domain with several devices).
    std::optional<nlohmann::json> device(uint32_t domid, uint32_t devid);
    // Nothing is left for `domid`: no device, or one with 0 mapped/pinned/lent pages,
    // queues, events and handles.
    bool released(uint32_t domid);
    // released() holds within `timeout`; the message shows the backend's status.
    ::testing::AssertionResult released_within(uint32_t domid,
                                               std::chrono::milliseconds timeout = kPatience);
    // The run passed, each check in `must_hold` held, and the backend released its domain.
    // The domid it printed, nullopt (and a failure) when it printed none.
    std::optional<uint32_t> expect_passed_and_released(const Output& run,
                                                       const std::vector<std::string>& must_hold);
    // For failure messages.
    std::string status_text();

    SimInstance& sim() { return *sim_; }
    // The GPU the backend runs on (XENHSA_TEST_GPU: backend_gpu.hpp).
    [[nodiscard]] const BackendGpu& gpu() const { return gpu_; }
    // Starts the backend on the sim and waits for its control socket (SetUp does).
    void start_backend();
    // SIGKILLs the backend's supervisor, as a crash would.
    void crash_backend();
    // Starts the backend's command line; the default keeps its stderr in backend_log().
    virtual pid_t launch_backend(const std::vector<std::string>& command);
    // More of xenhsa-sim's options for this test's hypervisor (SetUp starts it).
    [[nodiscard]] virtual std::vector<std::string> sim_arguments() const { return {}; }
    [[nodiscard]] std::string log_path() const;
    [[nodiscard]] pid_t backend_pid() const { return backend_ ? backend_->pid() : -1; }
    // The backend's stderr so far: its log and any sanitizer report, workers' included.
    [[nodiscard]] std::string backend_log() const;
    // One request on the backend's control socket; its answer (discarded if not JSON).
    nlohmann::json control(const nlohmann::json& request);
    // Every device the backend knows holds nothing (status counters 0), and dom0 maps no
    // grant page and shares no page in the embedded hypervisor; else `why` says what.
    bool nothing_held(std::string& why);

private:
    std::vector<std::string> guest_args(const std::vector<std::string>& scenario) const;

    std::optional<SimInstance> sim_;
    BackendGpu gpu_;
    std::unique_ptr<Process> backend_;
};

// The domid a guest printed (`info domid=N ...`, or another info line with domid=N).
std::optional<uint32_t> domid_in(std::string_view line_or_output);

}  // namespace xenhsa::testing::scenarios

#endif
