// A worker's confinement, applied once its guest's objects are open and before it reads
// anything the guest wrote (docs/threat-model.md, "A compromised worker"), while the worker
// is one thread: it refuses to start otherwise, since 2-4 hold per thread, and every
// thread started afterwards inherits them (the GPU device starts its threads with the
// first work, not when it opens):
//
//   1. an fd audit: no privcmd, hypercall, memory or port device may be open, no terminal
//      at fds 0-2 (the supervisor relays a worker's output to its own); the open fds
//      are logged (the worker was started with fds 0-3 only, so the rest are its guest's:
//      gntdev, gntalloc, evtchn, xenstore, the KFD's);
//   2. when started as root: every capability leaves the bounding set, supplementary
//      groups go, and the worker becomes its own uid (and gid), or `user` (and its
//      group), for good, which empties its permitted and effective capabilities; ambient
//      capabilities are cleared;
//   3. non-dumpable (none may ptrace it or read its memory through /proc, should another
//      worker share its user; sanitized builds stay dumpable for LeakSanitizer) and
//      PR_SET_NO_NEW_PRIVS;
//   4. a seccomp filter (libseccomp, TSYNC) that allows the system calls a worker's steady
//      state makes (syscall_filter.hpp) and kills the process on any other
//      (SCMP_ACT_KILL_PROCESS: the supervisor sees SIGSYS and reports a confinement
//      violation); an open fails with EACCES instead (the C library tries some behind
//      calls a worker makes, each with a fallback). What glibc would otherwise load late
//      (the time zone, malloc's arena limit) is fixed before the filter.
// Open devices stay usable: the kernel checks their permissions at open time.
#ifndef XENHSA_BACKEND_SERVICE_CONFINEMENT_HPP
#define XENHSA_BACKEND_SERVICE_CONFINEMENT_HPP

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace xenhsa::backend::service {

enum class SeccompMode : uint8_t {
    kill,  // any system call outside the allowlist kills the worker (the default)
    log,   // it is allowed and logged by the kernel (audit): for finding what one needs
    off,
};

struct ConfinementOptions {
    // The user a worker started as root becomes: empty means "xenhsa" if that user
    // exists, else "nobody". A worker given `uid` becomes that instead.
    std::string user;
    // A uid of its own (and the gid of the same number) the supervisor handed this worker
    // (worker_uids.hpp).
    std::optional<uid_t> uid;
    // The supervisor's directory of CPU groups (cpu_groups.hpp), empty when it has none: a
    // worker moves itself into a group of its own there before it starts any thread or
    // process, so that its helpers share its CPU share.
    std::filesystem::path cpu_groups;
    SeccompMode seccomp = SeccompMode::kill;
    bool enabled = true;  // false: no confinement at all (debugging by hand only)
};

std::optional<SeccompMode> parse_seccomp_mode(std::string_view text);
std::string_view seccomp_mode_name(SeccompMode mode);

struct ConfinementReport {
    uid_t uid = 0;
    gid_t gid = 0;
    std::vector<std::string> fds;  // "N -> target" of each fd open at the audit
    std::size_t allowed_syscalls = 0;
};

// Applies 1-4. On failure the text says what failed and the worker must not serve.
struct ConfinementResult {
    std::optional<ConfinementReport> report;
    std::string error;
};
ConfinementResult confine_worker(const ConfinementOptions& options);

// The audit alone: the fds open in this process, and an error naming a forbidden one.
std::vector<std::string> open_fds();
std::optional<std::string> forbidden_fd(const std::vector<std::string>& fds);

// A test build's trigger (control op "test-forbidden-syscall"): makes a system call the
// filter does not allow. Returns only when nothing stopped it.
void make_forbidden_syscall() noexcept;

}  // namespace xenhsa::backend::service

#endif
