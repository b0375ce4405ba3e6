/*
 * xenhsa-run's preload for unmodified ROCm tools. Debian's rocminfo checks two things
 * before it starts, though neither matters to ROCr, which reaches the GPU through
 * libhsakmt (in a guest, xenhsa's):
 *   - open("/dev/kfd", O_RDWR) must succeed (it never uses the descriptor). A guest has no
 *     /dev/kfd: an open of exactly that path opens /dev/null instead.
 *   - popen("lsmod | grep amdgpu") must print something. A guest has no amdgpu module:
 *     exactly that command runs xenhsa's lsmod ($XENHSA_LSMOD) instead of the system's
 *     (a shell may run a built-in lsmod whatever PATH says, as busybox does).
 * Debian 13's rocminfo (6.1) reads /sys/module/amdgpu/initstate instead of lsmod: it must
 * say "live". A read-only fopen of exactly that path reads "live" when the system has no
 * such file (a guest has no amdgpu module).
 * Nothing else is touched.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <unistd.h>

static int is_kfd(const char* path) { return path != NULL && strcmp(path, "/dev/kfd") == 0; }

static int kfd_flags(int flags) {
    return (flags & (O_ACCMODE | O_CLOEXEC | O_NONBLOCK)) | O_CLOEXEC;
}

static mode_t mode_of(int flags, va_list ap) {
    return (flags & (O_CREAT | O_TMPFILE)) != 0 ? (mode_t)va_arg(ap, int) : 0;
}

#define XENHSA_SHIM_OPEN(name)                                              \
    int name(const char* path, int flags, ...) {                            \
        static int (*real)(const char*, int, ...);                          \
        va_list ap;                                                         \
        va_start(ap, flags);                                                \
        const mode_t mode = mode_of(flags, ap);                             \
        va_end(ap);                                                         \
        if (real == NULL) {                                                 \
            real = (int (*)(const char*, int, ...))dlsym(RTLD_NEXT, #name); \
        }                                                                   \
        if (is_kfd(path)) {                                                 \
            return real("/dev/null", kfd_flags(flags));                     \
        }                                                                   \
        return real(path, flags, mode);                                     \
    }

#define XENHSA_SHIM_OPENAT(name)                                                 \
    int name(int dirfd, const char* path, int flags, ...) {                      \
        static int (*real)(int, const char*, int, ...);                          \
        va_list ap;                                                              \
        va_start(ap, flags);                                                     \
        const mode_t mode = mode_of(flags, ap);                                  \
        va_end(ap);                                                              \
        if (real == NULL) {                                                      \
            real = (int (*)(int, const char*, int, ...))dlsym(RTLD_NEXT, #name); \
        }                                                                        \
        if (is_kfd(path)) {                                                      \
            return real(dirfd, "/dev/null", kfd_flags(flags));                   \
        }                                                                        \
        return real(dirfd, path, flags, mode);                                   \
    }

XENHSA_SHIM_OPEN(open)
XENHSA_SHIM_OPEN(open64)
XENHSA_SHIM_OPENAT(openat)
XENHSA_SHIM_OPENAT(openat64)

static const char kInitstate[] = "/sys/module/amdgpu/initstate";

/* A file with a descriptor (C++ streams read the descriptor, not the FILE's buffer). */
static FILE* live_file(void) {
    static const char live[] = "live\n";
    const int fd = memfd_create("amdgpu-initstate", MFD_CLOEXEC);
    if (fd < 0) {
        return NULL;
    }
    FILE* f = NULL;
    if (write(fd, live, sizeof live - 1) == (ssize_t)(sizeof live - 1) &&
        lseek(fd, 0, SEEK_SET) == 0) {
        f = fdopen(fd, "r");
    }
    if (f == NULL) {
        close(fd);
    }
    return f;
}

#define XENHSA_SHIM_FOPEN(name)                                                    \
    FILE* name(const char* path, const char* mode) {                               \
        static FILE* (*real)(const char*, const char*);                            \
        if (real == NULL) {                                                        \
            real = (FILE * (*)(const char*, const char*)) dlsym(RTLD_NEXT, #name); \
        }                                                                          \
        FILE* f = real(path, mode);                                                \
        if (f == NULL && path != NULL && mode != NULL && strcmp(mode, "r") == 0 && \
            strcmp(path, kInitstate) == 0) {                                       \
            return live_file();                                                    \
        }                                                                          \
        return f;                                                                  \
    }

XENHSA_SHIM_FOPEN(fopen)
XENHSA_SHIM_FOPEN(fopen64)

FILE* popen(const char* command, const char* type) {
    static FILE* (*real)(const char*, const char*);
    if (real == NULL) {
        real = (FILE * (*)(const char*, const char*)) dlsym(RTLD_NEXT, "popen");
    }
    const char* lsmod = getenv("XENHSA_LSMOD");
    char replaced[4096];
    if (command != NULL && lsmod != NULL && strcmp(command, "lsmod | grep amdgpu") == 0 &&
        strchr(lsmod, '\'') == NULL &&
        snprintf(replaced, sizeof replaced, "'%s' | grep amdgpu", lsmod) < (int)sizeof replaced) {
        return real(replaced, type);
    }
    return real(command, type);
}
