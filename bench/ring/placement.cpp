#include "placement.hpp"

#include <sched.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

namespace xenhsa::bench {

namespace {

std::string proc_dir(pid_t pid) { return pid == 0 ? "/proc/self" : "/proc/" + std::to_string(pid); }

std::vector<pid_t> tasks_of(pid_t pid) {
    std::vector<pid_t> tasks;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(proc_dir(pid) + "/task", ec)) {
        tasks.push_back(static_cast<pid_t>(std::stol(entry.path().filename().string())));
    }
    return tasks;
}

}  // namespace

std::vector<Placement> placements() {
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    if (::sched_getaffinity(0, sizeof allowed, &allowed) != 0) {
        throw std::system_error(errno, std::generic_category(), "sched_getaffinity");
    }
    std::vector<int> cpus;
    for (int cpu = 0; cpu < CPU_SETSIZE && cpus.size() < 2; ++cpu) {
        if (CPU_ISSET(cpu, &allowed)) {
            cpus.push_back(cpu);
        }
    }
    std::vector<Placement> out{{"same_cpu", cpus.at(0), cpus.at(0)}};
    if (cpus.size() > 1) {
        out.push_back({"cross_cpu", cpus[0], cpus[1]});
    }
    return out;
}

void pin_process(pid_t pid, int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    for (const pid_t task : tasks_of(pid)) {
        if (::sched_setaffinity(task, sizeof set, &set) != 0 && errno != ESRCH) {
            throw std::system_error(errno, std::generic_category(), "sched_setaffinity");
        }
    }
}

std::vector<pid_t> children_of(pid_t pid) {
    std::vector<pid_t> children;
    for (const pid_t task : tasks_of(pid)) {
        std::ifstream in(proc_dir(pid) + "/task/" + std::to_string(task) + "/children");
        for (pid_t child = 0; in >> child;) {
            children.push_back(child);
        }
    }
    return children;
}

}  // namespace xenhsa::bench
