#include "real_libc.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace xenhsa::kfd_shim::real {

namespace {

struct Table {
    int (*open)(const char*, int, ...) = nullptr;
    int (*openat)(int, const char*, int, ...) = nullptr;
    int (*close)(int) = nullptr;
    int (*dup)(int) = nullptr;
    int (*dup2)(int, int) = nullptr;
    int (*dup3)(int, int, int) = nullptr;
    int (*fcntl)(int, int, ...) = nullptr;
    int (*ioctl)(int, unsigned long, ...) = nullptr;
    void* (*mmap)(void*, size_t, int, int, int, off_t) = nullptr;
    int (*munmap)(void*, size_t) = nullptr;
    FILE* (*fopen)(const char*, const char*) = nullptr;
    DIR* (*opendir)(const char*) = nullptr;
    struct dirent* (*readdir)(DIR*) = nullptr;
    int (*closedir)(DIR*) = nullptr;
    int (*stat)(const char*, struct stat*) = nullptr;
    int (*fstat)(int, struct stat*) = nullptr;
    int (*access)(const char*, int) = nullptr;
};

Table table;

template <class F>
void next(F& slot, const char* name) noexcept {
    slot = reinterpret_cast<F>(::dlsym(RTLD_NEXT, name));
}

}  // namespace

void resolve() noexcept {
    if (table.close != nullptr) {
        return;
    }
    next(table.mmap, "mmap");
    next(table.munmap, "munmap");
    next(table.open, "open");
    next(table.openat, "openat");
    next(table.dup, "dup");
    next(table.dup2, "dup2");
    next(table.dup3, "dup3");
    next(table.fcntl, "fcntl");
    next(table.ioctl, "ioctl");
    next(table.fopen, "fopen");
    next(table.opendir, "opendir");
    next(table.readdir, "readdir");
    next(table.closedir, "closedir");
    next(table.stat, "stat");
    next(table.fstat, "fstat");
    next(table.access, "access");
    next(table.close, "close");
}

int open(const char* path, int flags, mode_t mode) {
    resolve();
    return table.open(path, flags, mode);
}
int openat(int dirfd, const char* path, int flags, mode_t mode) {
    resolve();
    return table.openat(dirfd, path, flags, mode);
}
int close(int fd) {
    resolve();
    return table.close(fd);
}
int dup(int fd) {
    resolve();
    return table.dup(fd);
}
int dup2(int fd, int to) {
    resolve();
    return table.dup2(fd, to);
}
int dup3(int fd, int to, int flags) {
    resolve();
    return table.dup3(fd, to, flags);
}
int fcntl(int fd, int cmd, long arg) {
    resolve();
    return table.fcntl(fd, cmd, arg);
}
int ioctl(int fd, unsigned long request, void* arg) {
    resolve();
    return table.ioctl(fd, request, arg);
}
void* mmap(void* addr, size_t length, int prot, int flags, int fd, off_t offset) {
    if (table.mmap == nullptr) {
        return reinterpret_cast<void*>(::syscall(SYS_mmap, addr, length, prot, flags, fd, offset));
    }
    return table.mmap(addr, length, prot, flags, fd, offset);
}
int munmap(void* addr, size_t length) {
    if (table.munmap == nullptr) {
        return static_cast<int>(::syscall(SYS_munmap, addr, length));
    }
    return table.munmap(addr, length);
}
FILE* fopen(const char* path, const char* mode) {
    resolve();
    return table.fopen(path, mode);
}
DIR* opendir(const char* path) {
    resolve();
    return table.opendir(path);
}
struct dirent* readdir(DIR* dir) {
    resolve();
    return table.readdir(dir);
}
int closedir(DIR* dir) {
    resolve();
    return table.closedir(dir);
}
int stat(const char* path, struct stat* st) {
    resolve();
    return table.stat(path, st);
}
int fstat(int fd, struct stat* st) {
    resolve();
    return table.fstat(fd, st);
}
int access(const char* path, int mode) {
    resolve();
    return table.access(path, mode);
}

}  // namespace xenhsa::kfd_shim::real
