#include "leak_checks.hpp"

#include <filesystem>
#include <fstream>

namespace xenhsa::testing::scenarios {

namespace {

namespace fs = std::filesystem;

constexpr std::size_t kMappingSlack = 8;

std::size_t entries(const fs::path& dir) {
    std::error_code ec;
    std::size_t n = 0;
    for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator();
         it.increment(ec)) {
        ++n;
    }
    return n;
}

}  // namespace

Resources resources_of(pid_t pid) {
    const fs::path proc = "/proc/" + std::to_string(pid);
    Resources r{entries(proc / "fd"), entries(proc / "task"), 0};
    std::ifstream maps(proc / "maps");
    std::string line;
    while (std::getline(maps, line)) {
        // "address perms offset dev inode path": a path is the sixth field.
        const auto path = line.find(" /");
        r.mappings += path != std::string::npos ? 1 : 0;
    }
    return r;
}

std::optional<std::string> grew(const Resources& base, const Resources& now) {
    if (now.fds > base.fds || now.threads > base.threads ||
        now.mappings > base.mappings + kMappingSlack) {
        return "fds " + std::to_string(base.fds) + " -> " + std::to_string(now.fds) + ", threads " +
               std::to_string(base.threads) + " -> " + std::to_string(now.threads) + ", mappings " +
               std::to_string(base.mappings) + " -> " + std::to_string(now.mappings);
    }
    return std::nullopt;
}

std::optional<std::string> sanitizer_report(std::string_view log) {
    for (const char* mark : {"AddressSanitizer", "LeakSanitizer",
                             "runtime error:", "ThreadSanitizer", "UndefinedBehaviorSanitizer"}) {
        if (log.find(mark) != std::string_view::npos) {
            return std::string(mark);
        }
    }
    return std::nullopt;
}

}  // namespace xenhsa::testing::scenarios
