// The embedded hypervisor and the backend as separate processes, as script/demo runs
// them: `xenhsa-sim` and `xenhsa-backend --gpu soft` (or another GPU) in a fresh temp dir, stopped
// (SIGTERM, reaped) and removed at the end. Extra command-line arguments for either (e.g.
// the sim's --grant-frames, the backend's --max-guests) may be passed at construction.
#ifndef XENHSA_BENCH_EMBEDDED_SERVICES_HPP
#define XENHSA_BENCH_EMBEDDED_SERVICES_HPP

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

namespace xenhsa::bench {

// Appended to each service's own arguments; the backend's GPU (--gpu) and what its
// environment adds (K=V, before the inherited one: e.g. the KFD shim preloaded).
struct ServiceArgs {
    std::vector<std::string> sim;
    std::vector<std::string> backend;
    std::string gpu = "soft";
    std::vector<std::string> backend_env;
};

class EmbeddedServices {
public:
    // Throws std::runtime_error when a binary is missing or a socket does not appear in
    // 10 s (whatever started is stopped again).
    explicit EmbeddedServices(const std::filesystem::path& bin_dir, const ServiceArgs& extra = {});
    EmbeddedServices(const EmbeddedServices&) = delete;
    EmbeddedServices& operator=(const EmbeddedServices&) = delete;
    ~EmbeddedServices();

    [[nodiscard]] const std::filesystem::path& sim_dir() const { return dir_; }
    // The xenhsa-sim daemon.
    [[nodiscard]] pid_t sim_pid() const { return pids_.empty() ? -1 : pids_[0]; }
    // The xenhsa-backend supervisor (its workers are its children).
    [[nodiscard]] pid_t backend_pid() const { return pids_.size() > 1 ? pids_[1] : -1; }

private:
    void start(const std::filesystem::path& binary, const std::vector<std::string>& args,
               const std::filesystem::path& socket, const std::vector<std::string>& env = {});
    void stop() noexcept;

    std::filesystem::path dir_;
    std::vector<pid_t> pids_;  // in start order; stopped in reverse
};

// The directory this binary was started from (where its sibling binaries are built).
std::filesystem::path own_bin_dir();

}  // namespace xenhsa::bench

#endif
