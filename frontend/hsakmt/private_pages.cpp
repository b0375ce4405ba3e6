#include "private_pages.hpp"

#include <fmt/format.h>
#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>
#include <xenhsa/frontend/errors.hpp>

namespace xenhsa::frontend::hsakmt {

namespace {

std::error_code last_errno() { return {errno, std::generic_category()}; }

int prot_of(const std::string& perms) {
    int prot = PROT_NONE;
    prot |= perms.size() > 0 && perms[0] == 'r' ? PROT_READ : 0;
    prot |= perms.size() > 1 && perms[1] == 'w' ? PROT_WRITE : 0;
    prot |= perms.size() > 2 && perms[2] == 'x' ? PROT_EXEC : 0;
    return prot;
}

}  // namespace

#if defined(__SANITIZE_ADDRESS__)
__attribute__((no_sanitize_address)) void copy_pages(void* to, const void* from, uint64_t len) {
    auto* out = static_cast<volatile uint64_t*>(to);
    const auto* in = static_cast<const uint64_t*>(from);
    for (uint64_t i = 0; i < len / sizeof(uint64_t); ++i) {
        out[i] = in[i];
    }
}
#else
void copy_pages(void* to, const void* from, uint64_t len) { std::memcpy(to, from, len); }
#endif

Result<PrivateRange> private_range(uint64_t start, uint64_t end, std::string& why) {
    std::ifstream maps("/proc/self/maps");
    if (!maps) {
        why = "/proc/self/maps cannot be read";
        return std::error_code(EIO, std::generic_category());
    }
    PrivateRange range;
    uint64_t covered = start;
    bool first = true;
    std::string line;
    while (covered < end && std::getline(maps, line)) {
        std::istringstream in(line);
        uint64_t lo = 0;
        uint64_t hi = 0;
        char dash = 0;
        std::string perms;
        std::string offset;
        std::string device;
        std::string inode;
        std::string path;
        in >> std::hex >> lo >> dash >> hi >> perms >> offset >> device >> inode;
        std::getline(in >> std::ws, path);
        if (hi <= covered) {
            continue;
        }
        if (lo > covered) {
            break;  // a hole
        }
        const std::string what = path.empty() ? "anonymous memory" : path;
        if (perms.size() < 4 || perms[3] != 'p') {
            why = fmt::format(
                "{:#x} lies in a shared mapping ({}): its pages are not this "
                "process's alone to move onto granted pages",
                covered, what);
            return std::error_code(ENOTSUP, std::generic_category());
        }
        const int prot = prot_of(perms);
        if ((prot & PROT_READ) == 0) {
            why = fmt::format("{:#x} is not readable ({} {})", covered, perms, what);
            return std::error_code(EFAULT, std::generic_category());
        }
        if (!first && prot != range.prot) {
            why =
                fmt::format("the range changes protection at {:#x} ({} {})", covered, perms, what);
            return std::error_code(ENOTSUP, std::generic_category());
        }
        range.prot = prot;
        first = false;
        covered = hi;
    }
    if (covered < end) {
        why = fmt::format("{:#x} is not mapped", covered);
        return std::error_code(EFAULT, std::generic_category());
    }
    return range;
}

Result<PageCopy> PageCopy::reserve(uint64_t len) {
    void* copy = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (copy == MAP_FAILED) {
        return last_errno();
    }
    return PageCopy(copy, len);
}

void PageCopy::take(const void* at) noexcept {
    if (copy_ != nullptr) {
        copy_pages(copy_, at, len_);
    }
}

Result<PageCopy> PageCopy::of(const void* at, uint64_t len) {
    auto copy = reserve(len);
    if (copy) {
        copy.value().take(at);
    }
    return copy;
}

PageCopy::PageCopy(PageCopy&& other) noexcept
    : copy_(std::exchange(other.copy_, nullptr)), len_(std::exchange(other.len_, 0)) {}

PageCopy::~PageCopy() {
    if (copy_ != nullptr) {
        ::munmap(copy_, len_);
    }
}

Result<void> PageCopy::restore(void* at, int prot) noexcept {
    if (copy_ == nullptr) {
        return std::error_code(EINVAL, std::generic_category());
    }
    if (::mprotect(copy_, len_, prot) != 0) {
        return last_errno();
    }
    // MREMAP_FIXED replaces the destination's mapping in one step.
    void* moved = ::mremap(copy_, len_, len_, MREMAP_MAYMOVE | MREMAP_FIXED, at);
    if (moved == MAP_FAILED) {
        return last_errno();
    }
    copy_ = nullptr;
    return boost::outcome_v2::success();
}

}  // namespace xenhsa::frontend::hsakmt
