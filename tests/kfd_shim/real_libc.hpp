// The C library's own functions behind the ones the shim interposes (dlsym RTLD_NEXT,
// resolved once when the library loads). mmap and munmap go to the system call when
// called before that: the resolver itself may allocate, and malloc may map.
#ifndef XENHSA_TESTS_KFD_SHIM_REAL_LIBC_HPP
#define XENHSA_TESTS_KFD_SHIM_REAL_LIBC_HPP

#include <dirent.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>

namespace xenhsa::kfd_shim::real {

void resolve() noexcept;

int open(const char* path, int flags, mode_t mode);
int openat(int dirfd, const char* path, int flags, mode_t mode);
int close(int fd);
int dup(int fd);
int dup2(int fd, int to);
int dup3(int fd, int to, int flags);
int fcntl(int fd, int cmd, long arg);
int ioctl(int fd, unsigned long request, void* arg);
void* mmap(void* addr, size_t length, int prot, int flags, int fd, off_t offset);
int munmap(void* addr, size_t length);
FILE* fopen(const char* path, const char* mode);
DIR* opendir(const char* path);
struct dirent* readdir(DIR* dir);
int closedir(DIR* dir);
int stat(const char* path, struct stat* st);
int fstat(int fd, struct stat* st);
int access(const char* path, int mode);

}  // namespace xenhsa::kfd_shim::real

#endif
