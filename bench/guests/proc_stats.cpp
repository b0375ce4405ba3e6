#include "proc_stats.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

namespace xenhsa::bench {

namespace {

std::filesystem::path proc(pid_t pid) {
    return std::filesystem::path("/proc") / std::to_string(pid);
}

// The fields of /proc/<pid>/stat after "pid (comm)": field 3 (state) is element 0.
std::optional<std::vector<std::string>> stat_fields(pid_t pid) {
    std::ifstream in(proc(pid) / "stat");
    std::string text;
    if (!std::getline(in, text)) {
        return std::nullopt;
    }
    const auto paren = text.rfind(')');  // comm may hold spaces and parentheses
    if (paren == std::string::npos || paren + 2 > text.size()) {
        return std::nullopt;
    }
    std::istringstream rest(text.substr(paren + 2));
    return std::vector<std::string>(std::istream_iterator<std::string>(rest),
                                    std::istream_iterator<std::string>());
}

}  // namespace

std::optional<double> cpu_seconds(pid_t pid, bool with_reaped_children) {
    const auto fields = stat_fields(pid);
    // utime, stime, cutime, cstime: fields 14..17.
    if (!fields || fields->size() < 15) {
        return std::nullopt;
    }
    double ticks = std::stod((*fields)[11]) + std::stod((*fields)[12]);
    if (with_reaped_children) {
        ticks += std::stod((*fields)[13]) + std::stod((*fields)[14]);
    }
    return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

std::optional<double> schedstat_seconds(pid_t pid) {
    std::error_code ec;
    std::filesystem::directory_iterator tasks(proc(pid) / "task", ec);
    if (ec) {
        return std::nullopt;
    }
    double ns = 0;
    for (const auto& task : tasks) {
        std::ifstream in(task.path() / "schedstat");
        double on_cpu = 0;
        if (in >> on_cpu) {
            ns += on_cpu;
        }
    }
    return ns / 1e9;
}

std::vector<pid_t> children_of(pid_t parent) {
    std::vector<pid_t> out;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
        const std::string name = entry.path().filename().string();
        if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) {
            continue;
        }
        const pid_t pid = static_cast<pid_t>(std::stol(name));
        const auto fields = stat_fields(pid);
        if (fields && fields->size() > 1 && std::stol((*fields)[1]) == parent) {
            out.push_back(pid);
        }
    }
    return out;
}

std::string command_line(pid_t pid) {
    std::ifstream in(proc(pid) / "cmdline", std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (char& c : text) {
        if (c == '\0') {
            c = ' ';
        }
    }
    while (!text.empty() && text.back() == ' ') {
        text.pop_back();
    }
    return text;
}

std::optional<MemoryUse> memory_use(pid_t pid) {
    std::ifstream in(proc(pid) / "smaps_rollup");
    if (!in) {
        return std::nullopt;
    }
    MemoryUse use;
    bool rss = false;
    bool pss = false;
    std::string key;
    uint64_t kib = 0;
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream words(line);
        if (!(words >> key >> kib)) {
            continue;
        }
        if (key == "Rss:") {
            use.rss_kib = kib;
            rss = true;
        } else if (key == "Pss:") {
            use.pss_kib = kib;
            pss = true;
        }
    }
    if (!rss || !pss) {
        return std::nullopt;
    }
    return use;
}

}  // namespace xenhsa::bench
