#include "embedded_services.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <system_error>
#include <thread>

extern char** environ;

namespace xenhsa::bench {

namespace {

using namespace std::chrono_literals;

bool wait_for_socket(const std::filesystem::path& socket, pid_t pid) {
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (std::chrono::steady_clock::now() < deadline) {
        std::error_code ec;
        if (std::filesystem::is_socket(socket, ec)) {
            return true;
        }
        int status = 0;
        if (waitpid(pid, &status, WNOHANG) == pid) {
            return false;  // it died
        }
        std::this_thread::sleep_for(10ms);
    }
    return false;
}

}  // namespace

std::filesystem::path own_bin_dir() {
    std::error_code ec;
    const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    return ec ? std::filesystem::current_path() : self.parent_path();
}

EmbeddedServices::EmbeddedServices(const std::filesystem::path& bin_dir, const ServiceArgs& extra) {
    std::string templ = (std::filesystem::temp_directory_path() / "xenhsa-bench.XXXXXX").string();
    if (mkdtemp(templ.data()) == nullptr) {
        throw std::system_error(errno, std::generic_category(), "mkdtemp");
    }
    dir_ = templ;
    try {
        std::vector<std::string> sim{"--sim-dir", dir_.string(), "--log-level", "warn"};
        sim.insert(sim.end(), extra.sim.begin(), extra.sim.end());
        start(bin_dir / "xenhsa-sim", sim, dir_ / "xenhsa-sim.sock");
        std::vector<std::string> backend{"--sim-dir", dir_.string(), "--gpu",
                                         extra.gpu,   "--log-level", "warn"};
        backend.insert(backend.end(), extra.backend.begin(), extra.backend.end());
        start(bin_dir / "xenhsa-backend", backend, dir_ / "backend.sock", extra.backend_env);
    } catch (...) {
        stop();
        throw;
    }
}

EmbeddedServices::~EmbeddedServices() { stop(); }

void EmbeddedServices::start(const std::filesystem::path& binary,
                             const std::vector<std::string>& args,
                             const std::filesystem::path& socket,
                             const std::vector<std::string>& env) {
    std::vector<std::string> storage{binary.string()};
    storage.insert(storage.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& s : storage) {
        argv.push_back(s.data());
    }
    argv.push_back(nullptr);
    // Their logs go to the sim dir, so the benchmark's output stays key=value lines.
    const std::string log = (dir_ / (binary.filename().string() + ".log")).string();
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(),
                                     O_WRONLY | O_CREAT | O_APPEND, 0600);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    std::vector<std::string> env_storage(env);
    std::vector<char*> envp;
    for (auto& e : env_storage) {
        envp.push_back(e.data());
    }
    for (char** e = environ; *e != nullptr; ++e) {
        envp.push_back(*e);
    }
    envp.push_back(nullptr);
    pid_t pid = -1;
    const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) {
        throw std::system_error(rc, std::generic_category(), "spawn " + binary.string());
    }
    pids_.push_back(pid);
    if (!wait_for_socket(socket, pid)) {
        throw std::runtime_error(binary.filename().string() + " did not start (see " + log + ")");
    }
}

void EmbeddedServices::stop() noexcept {
    for (auto it = pids_.rbegin(); it != pids_.rend(); ++it) {
        kill(*it, SIGTERM);
        int status = 0;
        while (waitpid(*it, &status, 0) < 0 && errno == EINTR) {
        }
    }
    pids_.clear();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
}

}  // namespace xenhsa::bench
