#include <sys/mman.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <xenhsa/xen/reservation.hpp>

namespace xenhsa::xen {

namespace {

constexpr int kReserveFlags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;

}  // namespace

void fatal(const char* what, int err) noexcept {
    if (err != 0) {
        std::fprintf(stderr, "xenhsa: fatal: %s: %s\n", what, std::strerror(err));
    } else {
        std::fprintf(stderr, "xenhsa: fatal: %s\n", what);
    }
    std::fflush(stderr);
    std::abort();
}

Result<std::byte*> reserve(std::size_t len) noexcept {
    void* p = ::mmap(nullptr, len, PROT_NONE, kReserveFlags, -1, 0);
    if (p == MAP_FAILED) return std::error_code(errno, std::generic_category());
    return static_cast<std::byte*>(p);
}

void rereserve(std::byte* at, std::size_t len) noexcept {
    void* p = ::mmap(at, len, PROT_NONE, kReserveFlags | MAP_FIXED, -1, 0);
    if (p == MAP_FAILED) fatal("cannot restore a PROT_NONE reservation", errno);
}

bool move_view_over(void* view, std::byte* at, std::size_t len,
                    void (*copy_bytes)(void*, const void*, std::size_t)) noexcept {
    copy_bytes(view, at, len);
    return ::mremap(view, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, at) != MAP_FAILED;
}

}  // namespace xenhsa::xen
