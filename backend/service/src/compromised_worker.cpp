#include "compromised_worker.hpp"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <string>
#include <xenhsa/backend/service/control_messages.hpp>
#include <xenhsa/xen/public_headers.hpp>

#if __has_include(<xen/sys/gntdev.h>)
extern "C" {
#include <xen/sys/evtchn.h>
#include <xen/sys/gntdev.h>
}
#define XENHSA_ATTACK_KNOWS_XEN 1
#else
#define XENHSA_ATTACK_KNOWS_XEN 0
#endif

namespace xenhsa::backend::service {

namespace {

// -1 with errno set, or what the call returned.
long attempt(std::string_view name, const std::string& path, pid_t pid) {
    errno = 0;
    if (name == "open") {
        const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            ::close(fd);
        }
        return fd;
    }
    if (name == "exec") {
        char* const argv[] = {const_cast<char*>(path.c_str()), nullptr};
        return ::execve(path.c_str(), argv, environ);
    }
    if (name == "socket") {
        const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd >= 0) {
            ::close(fd);
        }
        return fd;
    }
    if (name == "kill") {
        // Signal 0: the permission check alone, nothing delivered even when allowed.
        return ::kill(pid, 0);
    }
    if (name == "tgkill") {
        return ::syscall(SYS_tgkill, pid, pid, 0);
    }
    if (name == "ioctl-tiocsti") {
        // Would push a character into a terminal's input: errno ENOTTY on a non-terminal
        // means the filter let it through.
        char c = '\n';
        return ::ioctl(STDERR_FILENO, TIOCSTI, &c);
    }
    if (name == "fcntl-setown") {
        return ::fcntl(STDERR_FILENO, F_SETOWN, pid);
    }
#if XENHSA_ATTACK_KNOWS_XEN
    // What the grant broker does for a real-Xen worker, tried directly: on fd -1, so
    // errno EBADF means the filter let the request through.
    if (name == "ioctl-gntdev-map") {
        return ::ioctl(-1, IOCTL_GNTDEV_MAP_GRANT_REF, nullptr);
    }
    if (name == "ioctl-evtchn-bind") {
        return ::ioctl(-1, IOCTL_EVTCHN_BIND_INTERDOMAIN, nullptr);
    }
#endif
    errno = EINVAL;
    return -2;
}

// -1 with errno set, 0 when the hypervisor call succeeded, -2 for no such attempt.
long platform_attempt(std::string_view name, const nlohmann::json& request,
                      xen::Platform& platform) {
    const auto domid = [&](const char* key) {
        return static_cast<xen::DomId>(json_uint(request, key).value_or(xen::kDomIdInvalid));
    };
    const std::string path(json_string(request, "path").value_or(""));
    std::error_code failed;
    if (name == "store-read" && platform.store) {
        if (auto r = platform.store->read(xen::kNoTx, path); !r) failed = r.error();
    } else if (name == "store-write" && platform.store) {
        if (auto r = platform.store->write(xen::kNoTx, path, "x"); !r) failed = r.error();
    } else if (name == "grant-map" && platform.grants) {
        const xen::GrantRef refs[] = {
            static_cast<xen::GrantRef>(json_uint(request, "ref").value_or(0))};
        if (auto r = platform.grants->map({.domid = domid("granter"), .refs = refs}); !r) {
            failed = r.error();
        }
    } else if (name == "evtchn-bind" && platform.events) {
        if (auto r = platform.events->bind_unbound(domid("remote")); !r) failed = r.error();
    } else if (name == "evtchn-bind-interdomain" && platform.events) {
        // A port more than its guest's share (one, held by the ring).
        const auto port = static_cast<xen::Port>(json_uint(request, "port").value_or(0));
        if (auto r = platform.events->bind_interdomain(domid("remote"), port); !r) {
            failed = r.error();
        }
    } else {
        return -2;
    }
    errno = failed.value();
    return failed ? -1 : 0;
}

}  // namespace

nlohmann::json make_attack_attempt(const nlohmann::json& request, xen::Platform& platform) {
    const std::string name(json_string(request, "attempt").value_or(""));
    const std::string path(json_string(request, "path").value_or(""));
    const auto pid = static_cast<pid_t>(json_uint(request, "pid").value_or(0));
    long rc = attempt(name, path, pid);
    if (rc == -2) {
        rc = platform_attempt(name, request, platform);
    }
    const int error = errno;
    if (rc == -2) {
        return error_reply("unknown attempt");
    }
    return {{"ok", true},
            {"attempt", name},
            {"refused", rc < 0},
            {"errno", rc < 0 ? error : 0},
            {"error", rc < 0 ? std::strerror(error) : ""}};
}

}  // namespace xenhsa::backend::service
