#include <grp.h>
#include <linux/capability.h>
#include <malloc.h>
#include <pwd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <xenhsa/backend/service/confinement.hpp>

#if XENHSA_HAVE_SECCOMP
#include "syscall_filter.hpp"
#endif

namespace xenhsa::backend::service {

namespace {

// Device nodes a worker must never hold: hypercalls and raw memory or ports.
constexpr const char* kForbidden[] = {"/dev/xen/privcmd", "/dev/xen/hypercall", "/dev/mem",
                                      "/dev/kmem", "/dev/port"};

std::string errno_text(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

// The threads of this process, from /proc/self/status (0 when it cannot be read).
int thread_count() {
    std::ifstream in("/proc/self/status");
    std::string line;
    while (std::getline(in, line)) {
        if (line.starts_with("Threads:")) {
            return std::atoi(line.c_str() + 8);
        }
    }
    return 0;
}

// What the C library would otherwise do on first use, once confined, with a system call
// or a file the filter refuses: the time zone (every log line formats a local time), and
// malloc's arena limit, which glibc computes from get_nprocs() (an openat of
// /sys/devices/system/cpu/online) when a thread beyond the eighth first allocates.
void load_what_libc_loads_late() {
    ::tzset();
    const time_t now = ::time(nullptr);
    struct tm local {};
    (void)::localtime_r(&now, &local);
#ifndef XENHSA_SANITIZED  // the sanitizers' allocators have no arenas
    // glibc's own default (8 arenas a core on 64-bit, 2 on 32-bit), fixed now.
    const int per_core = sizeof(long) == 4 ? 2 : 8;
    (void)::mallopt(M_ARENA_MAX, per_core * std::max(1, ::get_nprocs()));
#endif
}

int last_cap() {
    std::ifstream in("/proc/sys/kernel/cap_last_cap");
    int last = CAP_LAST_CAP;
    in >> last;
    return last;
}

struct Identity {
    uid_t uid = 0;
    gid_t gid = 0;
    std::string name;
};

std::optional<Identity> lookup(const std::string& name) {
    const passwd* pw = ::getpwnam(name.c_str());
    if (pw == nullptr) {
        return std::nullopt;
    }
    return Identity{pw->pw_uid, pw->pw_gid, name};
}

// Root: the bounding set emptied, then the user for good (which clears the permitted and
// effective sets, as no SECBIT_KEEP_CAPS is set). Anyone: ambient capabilities cleared.
std::optional<std::string> drop_identity(const ConfinementOptions& options, Identity& became) {
    became = {::geteuid(), ::getegid(), ""};
    if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL) {
        return errno_text("clearing ambient capabilities");
    }
    if (::geteuid() != 0) {
        return std::nullopt;  // already unprivileged: nothing to give up
    }
    std::optional<Identity> who;
    if (options.uid) {
        who = Identity{*options.uid, static_cast<gid_t>(*options.uid),
                       "uid " + std::to_string(*options.uid)};
    } else {
        who = options.user.empty() ? lookup("xenhsa") : lookup(options.user);
    }
    if (!who && options.user.empty()) {
        who = lookup("nobody");
    }
    if (!who) {
        return "no such user \"" + (options.user.empty() ? std::string("nobody") : options.user) +
               "\" for the worker";
    }
    if (who->uid == 0) {
        return "the worker user \"" + who->name + "\" is root";
    }
    const int last = last_cap();
    for (int cap = 0; cap <= last; ++cap) {
        if (::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL) {
            return errno_text("emptying the capability bounding set");
        }
    }
    if (::setgroups(0, nullptr) != 0) {
        return errno_text("setgroups");
    }
    if (::setresgid(who->gid, who->gid, who->gid) != 0) {
        return errno_text("setresgid");
    }
    if (::setresuid(who->uid, who->uid, who->uid) != 0) {
        return errno_text("setresuid");
    }
    uid_t r = 0, e = 0, s = 0;
    if (::getresuid(&r, &e, &s) != 0 || r != who->uid || e != who->uid || s != who->uid ||
        ::setuid(0) == 0) {
        return "could not give up root for good";
    }
    became = *who;
    return std::nullopt;
}

}  // namespace

std::optional<SeccompMode> parse_seccomp_mode(std::string_view text) {
    if (text == "kill") {
        return SeccompMode::kill;
    }
    if (text == "log") {
        return SeccompMode::log;
    }
    if (text == "off") {
        return SeccompMode::off;
    }
    return std::nullopt;
}

std::string_view seccomp_mode_name(SeccompMode mode) {
    switch (mode) {
        case SeccompMode::kill:
            return "kill";
        case SeccompMode::log:
            return "log";
        case SeccompMode::off:
            return "off";
    }
    return "?";
}

std::vector<std::string> open_fds() {
    std::vector<std::string> fds;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
        std::error_code link_ec;
        const auto target = std::filesystem::read_symlink(entry.path(), link_ec);
        fds.push_back(entry.path().filename().string() + " -> " +
                      (link_ec ? std::string("?") : target.string()));
    }
    return fds;
}

std::optional<std::string> forbidden_fd(const std::vector<std::string>& fds) {
    for (const std::string& fd : fds) {
        for (const char* device : kForbidden) {
            const std::string arrow = std::string(" -> ") + device;
            if (fd.size() >= arrow.size() &&
                fd.compare(fd.size() - arrow.size(), arrow.size(), arrow) == 0) {
                return "fd " + fd + " must not be open in a worker";
            }
        }
    }
    return std::nullopt;
}

ConfinementResult confine_worker(const ConfinementOptions& options) {
    ConfinementResult result;
    ConfinementReport report;
    // Identity, capabilities and no_new_privs are per thread, so is a filter loaded without
    // TSYNC: a thread started before this point would run unconfined.
    if (const int threads = thread_count(); threads == 0) {
        result.error = "cannot count the worker's threads (/proc/self/status)";
        return result;
    } else if (threads != 1) {
        result.error = std::to_string(threads) +
                       " threads before confinement (a thread started too early would "
                       "run unconfined): the worker must confine itself while it has one";
        return result;
    }
    report.fds = open_fds();
    if (auto bad = forbidden_fd(report.fds)) {
        result.error = *bad;
        return result;
    }
    for (const int fd : {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO}) {
        if (::isatty(fd) == 1) {  // its input could be pushed to (TIOCSTI)
            result.error = "fd " + std::to_string(fd) + " is a terminal";
            return result;
        }
    }
    Identity became;
    if (auto failed = drop_identity(options, became)) {
        result.error = *failed;
        return result;
    }
    report.uid = became.uid;
    report.gid = became.gid;
#ifdef XENHSA_SANITIZED
    // LeakSanitizer stops the worker's threads from a tracer task at exit (ptrace).
    const int dumpable = 1;
#else
    // Workers share one user: non-dumpable, no worker may ptrace another or read its
    // memory through /proc (ptrace is not in the filter either).
    const int dumpable = 0;
#endif
    if (::prctl(PR_SET_DUMPABLE, dumpable, 0, 0, 0) != 0) {
        result.error = errno_text("PR_SET_DUMPABLE");
        return result;
    }
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        result.error = errno_text("PR_SET_NO_NEW_PRIVS");
        return result;
    }
    load_what_libc_loads_late();
    if (options.seccomp != SeccompMode::off) {
#if XENHSA_HAVE_SECCOMP
        if (auto failed = install_syscall_filter(options.seccomp, report.allowed_syscalls)) {
            result.error = "seccomp: " + *failed;
            return result;
        }
#else
        result.error =
            "this build has no seccomp filter (XENHSA_WITH_SECCOMP=OFF): "
            "start the backend with --worker-seccomp off";
        return result;
#endif
    }
    result.report = std::move(report);
    return result;
}

void make_forbidden_syscall() noexcept {
    // personality(0xffffffff) only reads the current persona: harmless when allowed.
    (void)::syscall(SYS_personality, 0xffffffffUL);
}

}  // namespace xenhsa::backend::service
