#include "host_maps.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "real_libc.hpp"

namespace xenhsa::kfd_shim {

bool parse_maps_line(const std::string& line, Vma& vma) {
    unsigned long long start = 0;
    unsigned long long end = 0;
    char perms[5] = {};
    int path_at = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx %4s %*s %*s %*s %n", &start, &end, perms, &path_at) <
        3) {
        return false;
    }
    vma.start = start;
    vma.end = end;
    vma.read = perms[0] == 'r';
    vma.write = perms[1] == 'w';
    vma.shared = perms[3] == 's';
    vma.path = path_at > 0 && static_cast<size_t>(path_at) < line.size() ? line.substr(path_at)
                                                                         : std::string();
    return true;
}

bool is_grant_mapping(const Vma& vma, uint32_t own_domid) {
    if (vma.path == "/dev/xen/gntdev") {
        return true;
    }
    constexpr const char* kSim = "/memfd:xenhsa-sim-d";
    if (vma.path.rfind(kSim, 0) != 0) {
        return false;
    }
    unsigned owner = 0;
    return std::sscanf(vma.path.c_str() + std::strlen(kSim), "%u-gfn", &owner) == 1 &&
           owner != own_domid;
}

bool HostMaps::open() {
    if (fd_ < 0) {
        fd_ = real::open("/proc/self/maps", O_RDONLY | O_CLOEXEC, 0);
    }
    return fd_ >= 0;
}

std::vector<Vma> HostMaps::covering(uint64_t start, uint64_t end) const {
    std::vector<Vma> out;
    if (fd_ < 0) {
        return out;
    }
    // The whole file in one go (a seq_file: a read from offset 0 starts it over).
    std::string text;
    char buffer[16384];
    for (off_t at = 0;;) {
        const ssize_t n = ::pread(fd_, buffer, sizeof buffer, at);
        if (n < 0) {
            return {};
        }
        if (n == 0) {
            break;
        }
        text.append(buffer, static_cast<size_t>(n));
        at += n;
    }
    size_t from = 0;
    while (from < text.size()) {
        size_t to = text.find('\n', from);
        if (to == std::string::npos) {
            to = text.size();
        }
        Vma vma;
        if (parse_maps_line(text.substr(from, to - from), vma) && vma.end > start &&
            vma.start < end) {
            out.push_back(std::move(vma));
        }
        from = to + 1;
    }
    return out;
}

}  // namespace xenhsa::kfd_shim
