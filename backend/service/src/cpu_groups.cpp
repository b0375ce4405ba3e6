#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <fstream>
#include <sstream>
#include <system_error>
#include <xenhsa/backend/service/cpu_groups.hpp>

namespace xenhsa::backend::service {

namespace {

// cgroup v2's default weight, and v1's shares for the same (1024 per 100).
constexpr std::string_view kWeightV2 = "100";
constexpr std::string_view kSharesV1 = "1024";

bool has_controller(std::string_view list, std::string_view controller) {
    while (!list.empty()) {
        const auto sep = list.find_first_of(", ");
        if (list.substr(0, sep) == controller) {
            return true;
        }
        if (sep == std::string_view::npos) {
            break;
        }
        list.remove_prefix(sep + 1);
    }
    return false;
}

std::string read_text(const std::filesystem::path& path) {
    std::ifstream in(path);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

// One write(2) of `text` (cgroup files take a value per write).
xen::Result<void> write_text(const std::filesystem::path& path, std::string_view text) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
        return xen::errno_code(errno);
    }
    const ssize_t n = ::write(fd, text.data(), text.size());
    const int error = errno;
    ::close(fd);
    if (n != static_cast<ssize_t>(text.size())) {
        return xen::errno_code(n < 0 ? error : EIO);
    }
    return boost::outcome_v2::success();
}

xen::Result<void> make_dir(const std::filesystem::path& path) {
    if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
        return xen::errno_code(errno);
    }
    return boost::outcome_v2::success();
}

std::string describe(const std::filesystem::path& path, const std::error_code& ec) {
    return path.string() + ": " + ec.message();
}

}  // namespace

std::optional<CpuCgroup> cpu_cgroup_of(std::string_view proc_cgroup) {
    std::optional<CpuCgroup> unified;
    while (!proc_cgroup.empty()) {
        const auto eol = proc_cgroup.find('\n');
        std::string_view line = proc_cgroup.substr(0, eol);
        proc_cgroup.remove_prefix(eol == std::string_view::npos ? proc_cgroup.size() : eol + 1);
        const auto first = line.find(':');
        const auto second = first == std::string_view::npos ? first : line.find(':', first + 1);
        if (second == std::string_view::npos) {
            continue;
        }
        const std::string_view id = line.substr(0, first);
        const std::string_view controllers = line.substr(first + 1, second - first - 1);
        const std::string_view path = line.substr(second + 1);
        if (path.empty() || path.front() != '/') {
            continue;
        }
        if (has_controller(controllers, "cpu")) {
            return CpuCgroup{false, std::string(path)};
        }
        if (id == "0" && controllers.empty()) {
            unified = CpuCgroup{true, std::string(path)};
        }
    }
    return unified;
}

CpuGroups CpuGroups::open(const std::filesystem::path& root) {
    CpuGroups groups;
    const auto own = cpu_cgroup_of(read_text("/proc/self/cgroup"));
    if (!own) {
        groups.why_ = "no cgroup with the cpu controller in /proc/self/cgroup";
        return groups;
    }
    const std::filesystem::path relative = std::filesystem::path(own->path).relative_path();
    if (!own->unified) {
        std::filesystem::path mount = root / "cpu";
        if (!std::filesystem::exists(mount / "cpu.shares")) {
            mount = root / "cpu,cpuacct";
        }
        const std::filesystem::path dir = mount / relative;
        if (::access((dir / "cgroup.procs").c_str(), W_OK) != 0) {
            groups.why_ = describe(dir, xen::errno_code(errno));
            return groups;
        }
        groups.dir_ = dir;
        groups.unified_ = false;
        groups.why_.clear();
        return groups;
    }
    std::filesystem::path base =
        std::filesystem::exists(root / "cgroup.controllers") ? root : root / "unified";
    std::filesystem::path dir = base / relative;
    const bool in_leaf = dir.filename() == kSupervisorLeaf;
    if (in_leaf) {
        dir = dir.parent_path();  // a supervisor that restarted
    }
    if (!has_controller(read_text(dir / "cgroup.controllers"), "cpu")) {
        groups.why_ = dir.string() +
                      " may not share out the cpu controller (systemd: Delegate=cpu in the "
                      "unit, and ProtectControlGroups=no)";
        return groups;
    }
    if (!in_leaf) {
        const std::filesystem::path leaf = dir / kSupervisorLeaf;
        if (auto made = make_dir(leaf); !made) {
            groups.why_ = describe(leaf, made.error());
            return groups;
        }
        if (auto moved = write_text(leaf / "cgroup.procs", std::to_string(::getpid())); !moved) {
            groups.why_ = describe(leaf / "cgroup.procs", moved.error());
            return groups;
        }
    }
    if (auto shared = write_text(dir / "cgroup.subtree_control", "+cpu"); !shared) {
        groups.why_ = describe(dir / "cgroup.subtree_control", shared.error());
        return groups;
    }
    groups.dir_ = dir;
    groups.unified_ = true;
    groups.why_.clear();
    return groups;
}

CpuGroups CpuGroups::at(const std::filesystem::path& dir) {
    CpuGroups groups;
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec)) {
        groups.why_ = dir.string() + ": not a cgroup directory";
        return groups;
    }
    groups.dir_ = dir;
    groups.unified_ = std::filesystem::exists(dir / "cgroup.controllers", ec);
    groups.why_.clear();
    return groups;
}

std::filesystem::path CpuGroups::group_of(pid_t pid) const {
    return dir_ / (std::string(kPrefix) + std::to_string(pid));
}

xen::Result<void> CpuGroups::place(pid_t pid) const {
    if (!enabled()) {
        return xen::errc(std::errc::operation_not_supported);
    }
    const std::filesystem::path group = group_of(pid);
    if (auto made = make_dir(group); !made) {
        return made.error();
    }
    auto placed = write_text(group / (unified_ ? "cpu.weight" : "cpu.shares"),
                             unified_ ? kWeightV2 : kSharesV1);
    if (placed) {
        placed = write_text(group / "cgroup.procs", std::to_string(pid));
    }
    if (!placed) {
        remove(pid);
    }
    return placed;
}

void CpuGroups::remove(pid_t pid) const noexcept {
    if (enabled()) {
        (void)::rmdir(group_of(pid).c_str());  // EBUSY while a process is in it
    }
}

void CpuGroups::sweep() const noexcept {
    if (!enabled()) {
        return;
    }
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(dir_, ec)) {
        const std::string name = entry.path().filename().string();
        if (name.rfind(kPrefix, 0) != 0) {
            continue;
        }
        pid_t pid = 0;
        const char* digits = name.data() + kPrefix.size();
        const auto [end, parse_error] = std::from_chars(digits, name.data() + name.size(), pid);
        if (parse_error != std::errc() || end != name.data() + name.size() || pid <= 0) {
            continue;
        }
        if (::kill(pid, 0) != 0 && errno == ESRCH) {
            (void)::rmdir(entry.path().c_str());
        }
    }
}

}  // namespace xenhsa::backend::service
