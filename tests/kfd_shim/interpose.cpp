// The C library entry points the shim takes over in the process it is preloaded into;
// everything that is not the emulated KFD, render node or sysfs goes to the real one.
// These are the only symbols the library exports (the rest is hidden).
#include <fcntl.h>
#include <stdarg.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "call_log.hpp"
#include "inside_shim.hpp"
#include "real_libc.hpp"
#include "shim.hpp"

using xenhsa::kfd_shim::Node;
using xenhsa::kfd_shim::Shim;
namespace real = xenhsa::kfd_shim::real;

namespace {

mode_t mode_arg(int flags, va_list ap) {
    return (flags & (O_CREAT | O_TMPFILE)) != 0 ? static_cast<mode_t>(va_arg(ap, int)) : 0;
}

// A fake sysfs file opened with open(2): a memfd holding its contents.
int open_file(const std::string& contents) {
    const int fd = ::memfd_create("xenhsa-kfd-shim-sysfs", MFD_CLOEXEC);
    if (fd >= 0 &&
        ::write(fd, contents.data(), contents.size()) == static_cast<ssize_t>(contents.size())) {
        ::lseek(fd, 0, SEEK_SET);
        return fd;
    }
    if (fd >= 0) {
        real::close(fd);
    }
    errno = EIO;
    return -1;
}

int open_path(const char* path, int flags, mode_t mode) {
    if (const Node node = Shim::node_at(path); node != Node::none) {
        return Shim::get().open_node(node, flags);
    }
    if (const std::string* contents = Shim::file(path)) {
        return open_file(*contents);
    }
    return real::open(path, flags, mode);
}

int openat_path(int dirfd, const char* path, int flags, mode_t mode) {
    if (path != nullptr && path[0] == '/' &&
        (Shim::node_at(path) != Node::none || Shim::file(path) != nullptr)) {
        return open_path(path, flags, mode);
    }
    return real::openat(dirfd, path, flags, mode);
}

FILE* fopen_path(const char* path, const char* mode) {
    if (const std::string* contents = Shim::file(path)) {
        return ::fmemopen(const_cast<char*>(contents->data()), contents->size(), "r");
    }
    return real::fopen(path, mode);
}

int stat_path(const char* path, struct stat* st) {
    if (const Node node = Shim::node_at(path); node != Node::none) {
        Shim::get().fill_stat(node, st);
        return 0;
    }
    if (Shim::is_dir(path) || Shim::file(path) != nullptr) {
        std::memset(st, 0, sizeof *st);
        st->st_mode = Shim::is_dir(path) ? S_IFDIR | 0755 : S_IFREG | 0444;
        st->st_nlink = 1;
        if (const std::string* contents = Shim::file(path)) {
            st->st_size = static_cast<off_t>(contents->size());
        }
        return 0;
    }
    return real::stat(path, st);
}

int fstat_fd(int fd, struct stat* st) {
    if (const Node node = Shim::get().node_of(fd); node != Node::none) {
        Shim::get().fill_stat(node, st);
        return 0;
    }
    return real::fstat(fd, st);
}

int dup_fd(int fd, int cmd, long arg) {
    const int to = real::fcntl(fd, cmd, arg);
    if (to >= 0 && (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC)) {
        Shim::get().duplicated(fd, to);
    }
    return to;
}

void* mmap_fd(void* addr, size_t length, int prot, int flags, int fd, off_t offset) {
    if (fd >= 0) {
        if (const Node node = Shim::get().node_of(fd); node != Node::none) {
            const xenhsa::kfd_shim::InsideShim inside;
            return Shim::get().mmap(node, addr, length, prot, flags, static_cast<uint64_t>(offset));
        }
    }
    return real::mmap(addr, length, prot, flags, fd, offset);
}

}  // namespace

extern "C" {

__attribute__((constructor)) static void xenhsa_kfd_shim_init() {
    real::resolve();
    xenhsa::kfd_shim::call_log().open_from_env();
}

__attribute__((visibility("default"))) int open(const char* path, int flags, ...) {
    va_list ap;
    va_start(ap, flags);
    const mode_t mode = mode_arg(flags, ap);
    va_end(ap);
    return open_path(path, flags, mode);
}
__attribute__((visibility("default"))) int open64(const char* path, int flags, ...) {
    va_list ap;
    va_start(ap, flags);
    const mode_t mode = mode_arg(flags, ap);
    va_end(ap);
    return open_path(path, flags, mode);
}
__attribute__((visibility("default"))) int __open_2(const char* path, int flags) {
    return open_path(path, flags, 0);
}
__attribute__((visibility("default"))) int __open64_2(const char* path, int flags) {
    return open_path(path, flags, 0);
}
__attribute__((visibility("default"))) int openat(int dirfd, const char* path, int flags, ...) {
    va_list ap;
    va_start(ap, flags);
    const mode_t mode = mode_arg(flags, ap);
    va_end(ap);
    return openat_path(dirfd, path, flags, mode);
}
__attribute__((visibility("default"))) int openat64(int dirfd, const char* path, int flags, ...) {
    va_list ap;
    va_start(ap, flags);
    const mode_t mode = mode_arg(flags, ap);
    va_end(ap);
    return openat_path(dirfd, path, flags, mode);
}
__attribute__((visibility("default"))) FILE* fopen(const char* path, const char* mode) {
    return fopen_path(path, mode);
}
__attribute__((visibility("default"))) FILE* fopen64(const char* path, const char* mode) {
    return fopen_path(path, mode);
}
__attribute__((visibility("default"))) DIR* opendir(const char* path) {
    if (DIR* dir = Shim::get().open_dir(path)) {
        return dir;
    }
    return real::opendir(path);
}
__attribute__((visibility("default"))) struct dirent* readdir(DIR* dir) {
    struct dirent* entry = nullptr;
    if (Shim::get().read_dir(dir, entry)) {
        return entry;
    }
    return real::readdir(dir);
}
__attribute__((visibility("default"))) struct dirent64* readdir64(DIR* dir) {
    static_assert(sizeof(struct dirent) == sizeof(struct dirent64));
    return reinterpret_cast<struct dirent64*>(readdir(dir));
}
__attribute__((visibility("default"))) int closedir(DIR* dir) {
    if (Shim::get().close_dir(dir)) {
        return 0;
    }
    return real::closedir(dir);
}
__attribute__((visibility("default"))) int stat(const char* path, struct stat* st) {
    return stat_path(path, st);
}
__attribute__((visibility("default"))) int stat64(const char* path, struct stat64* st) {
    static_assert(sizeof(struct stat) == sizeof(struct stat64));
    return stat_path(path, reinterpret_cast<struct stat*>(st));
}
__attribute__((visibility("default"))) int fstat(int fd, struct stat* st) {
    return fstat_fd(fd, st);
}
__attribute__((visibility("default"))) int fstat64(int fd, struct stat64* st) {
    return fstat_fd(fd, reinterpret_cast<struct stat*>(st));
}
__attribute__((visibility("default"))) int access(const char* path, int mode) {
    if (Shim::node_at(path) != Node::none || Shim::is_dir(path) || Shim::file(path) != nullptr) {
        return 0;
    }
    return real::access(path, mode);
}
__attribute__((visibility("default"))) int close(int fd) {
    Shim::get().forget(fd);
    return real::close(fd);
}
__attribute__((visibility("default"))) int dup(int fd) {
    const int to = real::dup(fd);
    if (to >= 0) {
        Shim::get().duplicated(fd, to);
    }
    return to;
}
__attribute__((visibility("default"))) int dup2(int fd, int to) {
    const int r = real::dup2(fd, to);
    if (r >= 0 && fd != to) {
        Shim::get().duplicated(fd, to);
    }
    return r;
}
__attribute__((visibility("default"))) int dup3(int fd, int to, int flags) {
    const int r = real::dup3(fd, to, flags);
    if (r >= 0) {
        Shim::get().duplicated(fd, to);
    }
    return r;
}
__attribute__((visibility("default"))) int fcntl(int fd, int cmd, ...) {
    va_list ap;
    va_start(ap, cmd);
    const long arg = va_arg(ap, long);
    va_end(ap);
    return dup_fd(fd, cmd, arg);
}
__attribute__((visibility("default"))) int fcntl64(int fd, int cmd, ...) {
    va_list ap;
    va_start(ap, cmd);
    const long arg = va_arg(ap, long);
    va_end(ap);
    return dup_fd(fd, cmd, arg);
}
__attribute__((visibility("default"))) int ioctl(int fd, unsigned long request, ...) {
    va_list ap;
    va_start(ap, request);
    void* arg = va_arg(ap, void*);
    va_end(ap);
    if (const Node node = Shim::get().node_of(fd); node != Node::none) {
        const xenhsa::kfd_shim::InsideShim inside;
        const int err = Shim::get().ioctl(node, request, arg);
        if (err != 0) {
            errno = err;
            return -1;
        }
        return 0;
    }
    return real::ioctl(fd, request, arg);
}
__attribute__((visibility("default"))) void* mmap(void* addr, size_t length, int prot, int flags,
                                                  int fd, off_t offset) {
    return mmap_fd(addr, length, prot, flags, fd, offset);
}
__attribute__((visibility("default"))) void* mmap64(void* addr, size_t length, int prot, int flags,
                                                    int fd, off_t offset) {
    return mmap_fd(addr, length, prot, flags, fd, offset);
}
__attribute__((visibility("default"))) int munmap(void* addr, size_t length) {
    if (!xenhsa::kfd_shim::inside_shim()) {
        if (auto* process = Shim::process_if_open()) {
            const xenhsa::kfd_shim::InsideShim inside;
            process->before_munmap(reinterpret_cast<uint64_t>(addr), length);
        }
    }
    return real::munmap(addr, length);
}

}  // extern "C"
