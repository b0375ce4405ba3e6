// A CPU share per guest: each worker in a cgroup of its own, all with the same weight,
// under the supervisor's cgroup in the hierarchy that has the cpu controller (cgroup v2,
// delegated by systemd with Delegate=cpu; or v1's "cpu"). The kernel's scheduler then
// splits the CPU between guests rather than between threads, so a guest that keeps 64
// queues busy (64 threads) gets one guest's share while another guest has work.
#ifndef XENHSA_BACKEND_SERVICE_CPU_GROUPS_HPP
#define XENHSA_BACKEND_SERVICE_CPU_GROUPS_HPP

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <xenhsa/xen/types.hpp>

namespace xenhsa::backend::service {

// A process's cgroup in the hierarchy that has the cpu controller.
struct CpuCgroup {
    bool unified = false;  // cgroup v2
    std::string path;      // e.g. "/system.slice/xenhsa-backend.service"
};

// From the text of /proc/<pid>/cgroup: v1's line with the cpu controller if there is one
// (a hybrid host keeps cpu in v1), else the v2 line; nullopt for neither.
std::optional<CpuCgroup> cpu_cgroup_of(std::string_view proc_cgroup);

class CpuGroups {
public:
    static constexpr std::string_view kPrefix = "xenhsa-worker-";
    static constexpr std::string_view kSupervisorLeaf = "supervisor";

    CpuGroups() = default;  // disabled
    // The groups of this supervisor, under its own cgroup (`root` is where the cgroup
    // hierarchies are mounted). On cgroup v2 the supervisor moves itself into a leaf
    // "supervisor" first, as processes may only live in leaves once children share the
    // cpu controller. Disabled, with the reason, when that cannot be done.
    static CpuGroups open(const std::filesystem::path& root = "/sys/fs/cgroup");
    // The groups a supervisor opened at `dir` (a worker's view, to place itself).
    static CpuGroups at(const std::filesystem::path& dir);

    [[nodiscard]] bool enabled() const noexcept { return !dir_.empty(); }
    [[nodiscard]] const std::string& why_disabled() const noexcept { return why_; }
    [[nodiscard]] const std::filesystem::path& dir() const noexcept { return dir_; }
    [[nodiscard]] std::filesystem::path group_of(pid_t pid) const;

    // Moves worker `pid` (all its threads) into a new group of its own with the weight
    // every worker has.
    xen::Result<void> place(pid_t pid) const;
    // Removes the group of a worker that ended (empty once it was reaped).
    void remove(pid_t pid) const noexcept;
    // Removes the groups of workers that are gone (they ended while no supervisor ran).
    void sweep() const noexcept;

private:
    std::filesystem::path dir_;
    bool unified_ = false;
    std::string why_ = "not opened";
};

}  // namespace xenhsa::backend::service

#endif
