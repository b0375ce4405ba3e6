#include "syscall_filter.hpp"

#include <fcntl.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <memory>
#include <span>
#include <xenhsa/xen/public_headers.hpp>

#if __has_include(<xen/sys/gntdev.h>)
extern "C" {
#include <xen/sys/evtchn.h>
#include <xen/sys/gntalloc.h>
#include <xen/sys/gntdev.h>
}
#define XENHSA_FILTER_KNOWS_XEN 1
#else
#define XENHSA_FILTER_KNOWS_XEN 0
#endif

namespace xenhsa::backend::service {

namespace {

// What a worker does once confined: its loop (epoll, timerfd, eventfd, sockets already
// connected: the xenstore and control channels, the simulator's), the guest's shared
// pages (mmap of gntdev, gntalloc and memfds received over the simulator's sockets),
// device ioctls on fds it already holds (gntdev, gntalloc, evtchn, xenbus, KFD), threads
// (the software agent starts one per queue; clone is allowed for threads only), futexes
// and clocks, logging to the fds it has (stderr, the journal's socket).
constexpr const char* kAllowed[] = {
    // I/O on fds already open
    "read",
    "write",
    "readv",
    "writev",
    "pread64",
    "pwrite64",
    "close",
    "dup",
    "fcntl",
    "fstat",
    "newfstatat",
    "lseek",
    "ioctl",
    "ftruncate",
    // waiting
    "poll",
    "ppoll",
    "pselect6",
    "epoll_wait",
    "epoll_pwait",
    "epoll_pwait2",
    "epoll_ctl",
    "epoll_create1",
    "eventfd2",
    "timerfd_create",
    "timerfd_settime",
    "timerfd_gettime",
    "pipe2",
    // sockets already connected
    "recvmsg",
    "sendmsg",
    "recvfrom",
    "sendto",
    "shutdown",
    "getsockopt",
    // memory
    "mmap",
    "munmap",
    "mprotect",
    "mremap",
    "madvise",
    "brk",
    "mlock",
    "munlock",
    "memfd_create",
    "msync",
    "mincore",
    // the KFD thunk binds the host memory it allocates to the GPU's NUMA node (libnuma)
    "mbind",
    "get_mempolicy",
    // time
    "clock_gettime",
    "clock_getres",
    "gettimeofday",
    "nanosleep",
    "clock_nanosleep",
    // threads, signals, process
    "futex",
    "set_robust_list",
    "rseq",
    "sched_yield",
    "sched_getaffinity",
    "gettid",
    "getpid",
    "tgkill",
    "rt_sigaction",
    "rt_sigprocmask",
    "rt_sigreturn",
    "sigaltstack",
    "restart_syscall",
    "exit",
    "exit_group",
    "getrandom",
    "membarrier",
#ifdef XENHSA_SANITIZED
    // The sanitizer runtime, in sanitized builds only (docs/threat-model.md lists why):
    // open, openat, readlink(at), getdents(64): /proc/self/maps, exe and task for reports,
    // symbolization and LeakSanitizer's thread list; prctl, ptrace, wait4 and a clone
    // without CLONE_THREAD: LeakSanitizer's stop-the-world at exit (a tracer task that the
    // worker lets attach, PR_SET_PTRACER, and waits for); getppid and sched_setaffinity:
    // that tracer; getrlimit, prlimit64, setrlimit: stack and core limits; statfs, fstatfs:
    // its report path; kill (to itself only, the argument filter): its abort.
    "open",
    "openat",
    "readlink",
    "readlinkat",
    "getdents",
    "getdents64",
    "prctl",
    "prlimit64",
    "getrlimit",
    "ptrace",
    "wait4",
    "sched_setaffinity",
    "statfs",
    "fstatfs",
    "kill",
    "getppid",
    "setrlimit",
#endif
};

struct FilterRelease {
    void operator()(void* ctx) const noexcept { seccomp_release(ctx); }
};

std::string failed(const char* what, int rc) {
    return std::string(what) + ": " + std::strerror(-rc);
}

// The ioctl request types of the devices a worker holds (the type byte, bits 8-15 of the
// request): KFD ('K'), the render node's DRM and amdgpu ('d'). Nothing else: no
// terminal's (TIOCSTI, TIOCSCTTY), no socket's (SIOC*).
constexpr unsigned kIoctlTypes[] = {'K', 'd'};
// Of gntdev, gntalloc and evtchn, what acts on the worker's own entries and ports only:
// the rest (mapping grants, granting pages, binding ports, unmap notifications, grant
// copy, dma-bufs) names a domain or a port, and the worker's grant broker does it
// (grant_broker.hpp). And of the generic ones, what the event loop and the logger ask.
constexpr unsigned long kIoctlRequests[] = {
#if XENHSA_FILTER_KNOWS_XEN
    IOCTL_GNTDEV_UNMAP_GRANT_REF,
    IOCTL_GNTDEV_GET_OFFSET_FOR_VADDR,
    IOCTL_GNTALLOC_DEALLOC_GREF,
    IOCTL_EVTCHN_NOTIFY,
#endif
    FIONBIO,
    FIONREAD,
    FIOCLEX,
    FIONCLEX,
    TCGETS};
#if XENHSA_FILTER_KNOWS_XEN
// The grant broker's: those the worker may not make (the store proxy makes none).
constexpr unsigned long kBrokerIoctls[] = {IOCTL_GNTDEV_MAP_GRANT_REF,
                                           IOCTL_GNTDEV_SET_UNMAP_NOTIFY, IOCTL_GNTALLOC_ALLOC_GREF,
                                           IOCTL_EVTCHN_BIND_INTERDOMAIN, IOCTL_EVTCHN_UNBIND};
// And the rest of what a helper does: read a request, write a reply, wait, allocate, log,
// end.
constexpr const char* kHelperAllowed[] = {
    "poll",
    "ppoll",
    "read",
    "write",
    "recvfrom",
    "recvmsg",
    "sendto",
    "sendmsg",
    "close",
    "brk",
    "mmap",
    "munmap",
    "mremap",
    "madvise",
    "futex",
    "getpid",
    "gettid",
    "exit",
    "exit_group",
    "rt_sigreturn",
    "rt_sigprocmask",
    "restart_syscall",
    "clock_gettime",
#ifdef XENHSA_SANITIZED
    // The sanitizer runtime's, as a worker's (kAllowed), and pipe2: it probes whether
    // memory is readable by writing it to a pipe (IsAccessibleMemoryRange).
    "pipe2",
    "open",
    "openat",
    "readlink",
    "readlinkat",
    "getdents64",
    "prctl",
    "sched_yield",
    "sigaltstack",
    "prlimit64",
    "getrlimit",
    "fstat",
    "newfstatat",
    "rt_sigaction",
    "sched_getaffinity",
    "getppid",
    "statfs",
    "fstatfs",
    "setrlimit",
#endif
};
#endif
// fcntl: descriptor flags, status flags, dup, a memfd's seals. Not F_SETOWN/F_SETSIG
// (signals to another process), leases, notifications or pipe sizes.
constexpr unsigned long kFcntlCommands[] = {F_GETFD, F_SETFD,         F_GETFL,     F_SETFL,
                                            F_DUPFD, F_DUPFD_CLOEXEC, F_ADD_SEALS, F_GET_SEALS};

constexpr scmp_datum_t kLow32 = 0xffffffffU;

// Allows `nr` with its second argument's low 32 bits one of `values`.
std::optional<std::string> allow_second_argument(void* ctx, int nr,
                                                 std::span<const unsigned long> values,
                                                 const char* what) {
    for (const unsigned long value : values) {
        if (const int rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 1,
                                            SCMP_A1(SCMP_CMP_MASKED_EQ, kLow32, value));
            rc != 0) {
            return failed(what, rc);
        }
    }
    return std::nullopt;
}

// Signals to itself only (abort, a sanitizer's report): never to another process.
std::optional<std::string> allow_signals_to_self(void* ctx) {
    const auto self = static_cast<scmp_datum_t>(::getpid());
    for (const int nr : {SCMP_SYS(tgkill), SCMP_SYS(kill)}) {
        if (const int rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 1, SCMP_A0(SCMP_CMP_EQ, self));
            rc != 0) {
            return failed("kill", rc);
        }
    }
    return std::nullopt;
}

// The argument filter, loaded before the allowlist (which does not allow seccomp): every
// system call passes it but those whose arguments it checks, which pass only with the
// arguments listed and otherwise fail with EPERM (of several filters the kernel takes the
// strictest answer, so a call the allowlist kills stays killed). libseccomp cannot give
// one call both argument rules and a fallback action within one filter: hence a second
// filter, whose default is EPERM.
std::optional<std::string> install_argument_filter(SeccompMode mode) {
    const uint32_t refuse = mode == SeccompMode::log ? SCMP_ACT_LOG : SCMP_ACT_ERRNO(EPERM);
    std::unique_ptr<void, FilterRelease> ctx(seccomp_init(refuse));
    if (!ctx) {
        return std::string("seccomp_init failed");
    }
    // A binary tree over ~350 rules rather than a list each call walks.
    (void)seccomp_attr_set(ctx.get(), SCMP_FLTATR_CTL_OPTIMIZE, 2);
    const int checked[] = {SCMP_SYS(ioctl), SCMP_SYS(fcntl), SCMP_SYS(tgkill), SCMP_SYS(kill)};
    for (int nr = 0; nr < 1024; ++nr) {
        char* name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);
        if (name == nullptr) {
            continue;
        }
        std::free(name);  // NOLINT(cppcoreguidelines-no-malloc): libseccomp's allocation
        if (std::find(std::begin(checked), std::end(checked), nr) != std::end(checked)) {
            continue;
        }
        if (const int rc = seccomp_rule_add(ctx.get(), SCMP_ACT_ALLOW, nr, 0); rc != 0) {
            return failed("argument filter", rc);
        }
    }
    for (const unsigned type : kIoctlTypes) {
        if (const int rc =
                seccomp_rule_add(ctx.get(), SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 1,
                                 SCMP_A1(SCMP_CMP_MASKED_EQ, scmp_datum_t{0xff00}, type << 8));
            rc != 0) {
            return failed("ioctl", rc);
        }
    }
    if (auto refused = allow_second_argument(ctx.get(), SCMP_SYS(ioctl), kIoctlRequests, "ioctl")) {
        return refused;
    }
    if (auto refused = allow_second_argument(ctx.get(), SCMP_SYS(fcntl), kFcntlCommands, "fcntl")) {
        return refused;
    }
    // Never to another worker or the supervisor. (kill is not in a release build's
    // allowlist at all.)
    if (auto refused = allow_signals_to_self(ctx.get())) {
        return refused;
    }
    if (const int rc = seccomp_attr_set(ctx.get(), SCMP_FLTATR_CTL_TSYNC, 1); rc != 0) {
        return failed("SCMP_FLTATR_CTL_TSYNC", rc);
    }
    if (const int rc = seccomp_load(ctx.get()); rc != 0) {
        return failed("seccomp_load (argument filter)", rc);
    }
    return std::nullopt;
}

}  // namespace

std::optional<std::string> install_syscall_filter(SeccompMode mode, std::size_t& allowed) {
    allowed = 0;
    const uint32_t deny = mode == SeccompMode::log ? SCMP_ACT_LOG : SCMP_ACT_KILL_PROCESS;
    std::unique_ptr<void, FilterRelease> ctx(seccomp_init(deny));
    if (!ctx) {
        return std::string("seccomp_init failed");
    }
    for (const char* name : kAllowed) {
        const int nr = seccomp_syscall_resolve_name(name);
        if (nr == __NR_SCMP_ERROR) {
            continue;  // not a system call of this architecture
        }
        if (const int rc = seccomp_rule_add(ctx.get(), SCMP_ACT_ALLOW, nr, 0); rc != 0) {
            return failed(name, rc);
        }
        ++allowed;
    }
#ifdef XENHSA_SANITIZED
    if (const int rc = seccomp_rule_add(ctx.get(), SCMP_ACT_ALLOW, SCMP_SYS(clone), 0); rc != 0) {
        return failed("clone", rc);
    }
#else
    // Threads only: a new process could run outside this filter's intent.
    if (const int rc = seccomp_rule_add(ctx.get(), SCMP_ACT_ALLOW, SCMP_SYS(clone), 1,
                                        SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, CLONE_THREAD));
        rc != 0) {
        return failed("clone", rc);
    }
#endif
    ++allowed;
    // clone3's flags are behind a pointer the filter cannot read: ENOSYS makes glibc's
    // pthread_create fall back to clone, whose flags it can.
    if (const int rc = seccomp_rule_add(ctx.get(), SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
        rc != 0 && rc != -EDOM) {
        return failed("clone3", rc);
    }
#ifndef XENHSA_SANITIZED
    // A worker opens nothing once confined, but the C library may try behind a call
    // (get_nprocs reads /sys/devices/system/cpu/online, malloc's heap trimming
    // /proc/sys/vm/overcommit_memory): each has a fallback for a refused open, and a
    // refusal reaches nothing, so these get EACCES rather than the kill.
    for (const int nr : {SCMP_SYS(open), SCMP_SYS(openat), SCMP_SYS(openat2)}) {
        if (const int rc = seccomp_rule_add(ctx.get(), SCMP_ACT_ERRNO(EACCES), nr, 0);
            rc != 0 && rc != -EDOM) {
            return failed("open", rc);
        }
    }
#endif
    // The KFD thunk removes its counters' shared memory and semaphore when it closes
    // (shm_unlink, sem_unlink) and goes on when it cannot: a worker removes no file.
    for (const int nr : {SCMP_SYS(unlink), SCMP_SYS(unlinkat)}) {
        if (const int rc = seccomp_rule_add(ctx.get(), SCMP_ACT_ERRNO(EACCES), nr, 0);
            rc != 0 && rc != -EDOM) {
            return failed("unlink", rc);
        }
    }
    // Every thread of the worker under this filter, should one exist already (confinement
    // refuses to start with more than one, as the rest of it is per thread).
    if (const int rc = seccomp_attr_set(ctx.get(), SCMP_FLTATR_CTL_TSYNC, 1); rc != 0) {
        return failed("SCMP_FLTATR_CTL_TSYNC", rc);
    }
    if (auto refused = install_argument_filter(mode)) {
        return refused;
    }
    if (const int rc = seccomp_load(ctx.get()); rc != 0) {
        return failed("seccomp_load", rc);
    }
    return std::nullopt;
}

std::optional<std::string> install_helper_filter(HelperKind kind) {
#if XENHSA_FILTER_KNOWS_XEN
    std::unique_ptr<void, FilterRelease> ctx(seccomp_init(SCMP_ACT_KILL_PROCESS));
    if (!ctx) {
        return std::string("seccomp_init failed");
    }
    for (const char* name : kHelperAllowed) {
        const int nr = seccomp_syscall_resolve_name(name);
        if (nr == __NR_SCMP_ERROR) {
            continue;
        }
        if (const int rc = seccomp_rule_add(ctx.get(), SCMP_ACT_ALLOW, nr, 0); rc != 0) {
            return failed(name, rc);
        }
    }
    if (kind == HelperKind::grant_broker) {
        if (auto refused =
                allow_second_argument(ctx.get(), SCMP_SYS(ioctl), kBrokerIoctls, "ioctl")) {
            return refused;
        }
    }
    if (auto refused = allow_signals_to_self(ctx.get())) {
        return refused;
    }
    if (const int rc = seccomp_load(ctx.get()); rc != 0) {
        return failed("seccomp_load (helper)", rc);
    }
    return std::nullopt;
#else
    (void)kind;
    return std::string("this build knows no Xen device");
#endif
}

}  // namespace xenhsa::backend::service
