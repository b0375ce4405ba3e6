#include "private_counters.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace xenhsa::hsa::kmt {

namespace {

constexpr const char* kShared[] = {"/dev/shm/hsakmt_shared_mem", "/dev/shm/sem.hsakmt_semaphore"};

// Also once another process removed the file (the thunk does at its close): the kernel
// then names it "<path> (deleted)", and whoever still holds it shares it.
bool is_shared(std::string_view path) {
    constexpr std::string_view kDeleted = " (deleted)";
    if (path.ends_with(kDeleted)) {
        path.remove_suffix(kDeleted.size());
    }
    for (const char* p : kShared) {
        if (path == p) {
            return true;
        }
    }
    return false;
}

struct Mapping {
    uintptr_t start = 0;
    uintptr_t end = 0;
    int prot = 0;
};

std::vector<Mapping> shared_mappings() {
    std::vector<Mapping> out;
    std::ifstream maps("/proc/self/maps");
    for (std::string line; std::getline(maps, line);) {
        std::istringstream in(line);
        std::string range, perms, offset, dev, inode, path;
        in >> range >> perms >> offset >> dev >> inode >> path;
        if (!is_shared(path)) {
            continue;
        }
        Mapping m;
        m.start = std::stoull(range.substr(0, range.find('-')), nullptr, 16);
        m.end = std::stoull(range.substr(range.find('-') + 1), nullptr, 16);
        m.prot = (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0);
        out.push_back(m);
    }
    return out;
}

}  // namespace

std::string keep_thunk_counters_private() {
    for (const Mapping& m : shared_mappings()) {
        const std::size_t len = m.end - m.start;
        auto* at = reinterpret_cast<std::byte*>(m.start);
        std::vector<std::byte> contents(at, at + len);
        // MAP_FIXED over exactly the range the thunk mapped, and nothing else.
        if (::mmap(at, len, PROT_READ | PROT_WRITE, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1,
                   0) == MAP_FAILED) {
            return std::string("cannot replace the thunk's shared counters: ") +
                   std::strerror(errno);
        }
        std::memcpy(at, contents.data(), len);
        if (m.prot != (PROT_READ | PROT_WRITE) && ::mprotect(at, len, m.prot) != 0) {
            return std::string("mprotect: ") + std::strerror(errno);
        }
    }
    // The thunk closes its fd when the KFD closes: the number stays taken, by /dev/null.
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
        std::error_code link_ec;
        if (!is_shared(std::filesystem::read_symlink(entry.path(), link_ec).string())) {
            continue;
        }
        const int fd = std::stoi(entry.path().filename().string());
        const int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
        if (null < 0 || ::dup3(null, fd, O_CLOEXEC) < 0) {
            const int err = errno;
            if (null >= 0) {
                ::close(null);
            }
            return std::string("cannot let go of the thunk's shared counters: ") +
                   std::strerror(err);
        }
        ::close(null);
    }
    return {};
}

}  // namespace xenhsa::hsa::kmt
