#include "thread_confinement.hpp"

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string_view>
#include <system_error>

namespace xenhsa::testing {

ProcFields proc_fields(const std::filesystem::path& status_file) {
    ProcFields fields;
    std::ifstream in(status_file);
    std::string line;
    while (std::getline(in, line)) {
        const auto colon = line.find(':');
        if (colon != std::string::npos) {
            const auto value = line.find_first_not_of(" \t", colon + 1);
            fields[line.substr(0, colon)] = value == std::string::npos ? "" : line.substr(value);
        }
    }
    return fields;
}

std::map<pid_t, ProcFields> thread_fields(pid_t pid) {
    std::map<pid_t, ProcFields> threads;
    std::error_code ec;
    const std::filesystem::path tasks = "/proc/" + std::to_string(pid) + "/task";
    for (const auto& entry : std::filesystem::directory_iterator(tasks, ec)) {
        auto fields = proc_fields(entry.path() / "status");
        if (!fields.empty()) {  // a thread that ended meanwhile has none
            threads.emplace(std::stoi(entry.path().filename().string()), std::move(fields));
        }
    }
    return threads;
}

::testing::AssertionResult every_thread_confined(pid_t pid, std::size_t min_threads) {
    const auto threads = thread_fields(pid);
    std::string wrong;
    const auto expect = [&](pid_t tid, const ProcFields& f, std::string_view key,
                            std::string_view want) {
        const auto it = f.find(std::string(key));
        const std::string got = it == f.end() ? "(none)" : it->second;
        if (got != want) {
            const auto name = f.find("Name");
            wrong += "\n  thread " + std::to_string(tid) + " (" +
                     (name == f.end() ? "?" : name->second) + "): " + std::string(key) + " " + got +
                     ", not " + std::string(want);
        }
    };
    constexpr std::string_view kNoCaps = "0000000000000000";
    for (const auto& [tid, f] : threads) {
        expect(tid, f, "Seccomp", "2");
        expect(tid, f, "NoNewPrivs", "1");
        expect(tid, f, "CapEff", kNoCaps);
        expect(tid, f, "CapPrm", kNoCaps);
        expect(tid, f, "CapAmb", kNoCaps);
        if (::geteuid() == 0) {
            expect(tid, f, "CapBnd", kNoCaps);
            const auto uid = f.find("Uid");
            if (uid == f.end() || uid->second.starts_with("0\t") ||
                uid->second.find("\t0\t") != std::string::npos || uid->second.ends_with("\t0")) {
                wrong += "\n  thread " + std::to_string(tid) + ": Uid " +
                         (uid == f.end() ? "(none)" : uid->second) + " has root in it";
            }
        }
    }
    if (threads.size() < min_threads) {
        wrong += "\n  " + std::to_string(threads.size()) + " threads, fewer than " +
                 std::to_string(min_threads);
    }
    if (!wrong.empty()) {
        return ::testing::AssertionFailure()
               << "process " << pid << ", " << threads.size() << " threads:" << wrong;
    }
    return ::testing::AssertionSuccess() << threads.size() << " threads confined";
}

std::optional<uid_t> sole_identity(pid_t pid) {
    const auto threads = thread_fields(pid);
    std::optional<std::string> id;
    for (const auto& [tid, f] : threads) {
        for (const char* key : {"Uid", "Gid"}) {
            const auto it = f.find(key);
            if (it == f.end()) {
                return std::nullopt;
            }
            std::istringstream fields(it->second);
            std::string one;
            int count = 0;
            while (fields >> one) {
                if (!id) {
                    id = one;
                }
                if (one != *id) {
                    return std::nullopt;
                }
                ++count;
            }
            if (count != 4) {
                return std::nullopt;
            }
        }
    }
    if (!id) {
        return std::nullopt;
    }
    return static_cast<uid_t>(std::stoul(*id));
}

}  // namespace xenhsa::testing
