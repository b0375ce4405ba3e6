#include "shared_pages.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>

namespace xenhsa::frontend::cli {

namespace {

std::byte* map_shared(int fd, std::size_t bytes) {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    return p == MAP_FAILED ? nullptr : static_cast<std::byte*>(p);
}

}  // namespace

Result<SharedPages> SharedPages::create(std::size_t bytes) {
    const int fd = memfd_create("xenhsa-ring", MFD_CLOEXEC);
    if (fd < 0) {
        return std::error_code(errno, std::generic_category());
    }
    std::error_code err;
    std::byte* guest = nullptr;
    std::byte* peer = nullptr;
    if (ftruncate(fd, static_cast<off_t>(bytes)) != 0 ||
        (guest = map_shared(fd, bytes)) == nullptr || (peer = map_shared(fd, bytes)) == nullptr) {
        err = std::error_code(errno, std::generic_category());
    }
    close(fd);  // the mappings keep the pages
    if (err) {
        if (guest != nullptr) {
            munmap(guest, bytes);
        }
        return err;
    }
    return SharedPages(guest, peer, bytes);
}

SharedPages::SharedPages(SharedPages&& other) noexcept
    : guest_(other.guest_), peer_(other.peer_), bytes_(other.bytes_) {
    other.guest_ = nullptr;
    other.peer_ = nullptr;
}

SharedPages::~SharedPages() {
    if (guest_ != nullptr) {
        munmap(guest_, bytes_);
    }
    if (peer_ != nullptr) {
        munmap(peer_, bytes_);
    }
}

}  // namespace xenhsa::frontend::cli
