#include "sim_instance.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>
#include <xenhsa/xen/sim/client.hpp>

#include "spawned_process.hpp"

namespace xenhsa::testing {

namespace {

using namespace std::chrono_literals;
constexpr auto kTimeout = 10s;

std::filesystem::path make_temp_dir() {
    // Short: the socket path must fit in sun_path (108 bytes).
    std::string tmpl = "/tmp/xenhsa-sim-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) {
        throw std::runtime_error(std::string("SimInstance: mkdtemp: ") + std::strerror(errno));
    }
    return tmpl;
}

// Reaps `pid` within the timeout; its wait status, or -1.
int reap(pid_t pid, std::chrono::milliseconds timeout) {
    return wait_for_exit(pid, timeout).value_or(-1);
}

}  // namespace

SimInstance SimInstance::start(const std::vector<std::string>& extra) {
    SimInstance sim;
    sim.dir_ = make_temp_dir();
    // The daemon must not outlive the test process, whatever happens to it: spawn() ties
    // it to this thread.
    const char* level = std::getenv("XENHSA_SIM_LOG");
    std::vector<std::string> args{XENHSA_SIM_BINARY, "--sim-dir", sim.dir_.string(), "--log-level",
                                  level != nullptr ? level : "warn"};
    args.insert(args.end(), extra.begin(), extra.end());
    sim.pid_ = spawn(args);
    if (sim.pid_ < 0) throw std::runtime_error("SimInstance: fork failed");

    const auto deadline = std::chrono::steady_clock::now() + kTimeout;
    for (;;) {
        if (auto domains = xen::sim::list_domains(sim.dir_); domains) return sim;
        if (const auto status = wait_for_exit(sim.pid_, 0ms)) {
            sim.pid_ = -1;
            throw std::runtime_error("SimInstance: xenhsa-sim exited at start (status " +
                                     std::to_string(*status) + ")");
        }
        if (std::chrono::steady_clock::now() >= deadline) {
            throw std::runtime_error("SimInstance: xenhsa-sim did not answer within 10 s");
        }
        std::this_thread::sleep_for(5ms);
    }
}

SimInstance::SimInstance(SimInstance&& o) noexcept
    : dir_(std::move(o.dir_)), pid_(std::exchange(o.pid_, -1)) {
    o.dir_.clear();
}

SimInstance& SimInstance::operator=(SimInstance&& o) noexcept {
    if (this != &o) {
        stop();
        dir_ = std::move(o.dir_);
        o.dir_.clear();
        pid_ = std::exchange(o.pid_, -1);
    }
    return *this;
}

SimInstance::~SimInstance() { stop(); }

void SimInstance::stop() noexcept {
    if (pid_ > 0) {
        ::kill(pid_, SIGTERM);
        int status = reap(pid_, kTimeout);
        if (status == -1) {
            ::kill(pid_, SIGKILL);
            status = reap(pid_, kTimeout);
            ADD_FAILURE() << "xenhsa-sim did not exit on SIGTERM";
        } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            ADD_FAILURE() << "xenhsa-sim ended with wait status " << status
                          << " (a sanitizer report on its stderr?)";
        }
        pid_ = -1;
    }
    if (!dir_.empty()) {
        std::error_code ec;
        std::filesystem::remove_all(dir_, ec);
        dir_.clear();
    }
}

}  // namespace xenhsa::testing
