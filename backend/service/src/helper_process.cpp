#include "helper_process.hpp"

#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>
#include <vector>

#include "syscall_filter.hpp"

namespace xenhsa::backend::service {

void keep_only_fds(std::initializer_list<int> keep) noexcept {
    std::vector<unsigned> sorted;
    try {
        for (const int fd : keep) {
            if (fd > STDERR_FILENO) {
                sorted.push_back(static_cast<unsigned>(fd));
            }
        }
    } catch (const std::bad_alloc&) {
        ::_exit(1);
    }
    std::sort(sorted.begin(), sorted.end());
    unsigned first = STDERR_FILENO + 1;
    for (const unsigned fd : sorted) {
        if (fd > first) {
            (void)::syscall(SYS_close_range, first, fd - 1, 0U);
        }
        first = std::max(first, fd + 1);
    }
    (void)::syscall(SYS_close_range, first, ~0U, 0U);
}

void helper_says(const char* who, const char* text) noexcept {
    char line[256] = "xenhsa ";
    std::strncat(line, who, sizeof line - std::strlen(line) - 3);
    std::strncat(line, ": ", sizeof line - std::strlen(line) - 1);
    std::strncat(line, text, sizeof line - std::strlen(line) - 2);
    std::strncat(line, "\n", sizeof line - std::strlen(line) - 1);
    (void)!::write(STDERR_FILENO, line, std::strlen(line));
}

namespace {

bool drop_capabilities() noexcept {
    if (::geteuid() == 0) {
        for (int cap = 0; cap <= CAP_LAST_CAP + 8; ++cap) {
            if (::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL) {
                return false;
            }
        }
    }
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3]{};
    return ::syscall(SYS_capset, &header, data) == 0 &&
           ::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) == 0;
}

}  // namespace

bool confine_helper(HelperKind kind) noexcept {
    const char* who = kind == HelperKind::grant_broker ? "grant broker" : "store proxy";
    if (!drop_capabilities() || ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0 ||
        ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        helper_says(who, std::strerror(errno));
        return false;
    }
#if XENHSA_HAVE_SECCOMP
    if (auto failed = install_helper_filter(kind)) {
        helper_says(who, failed->c_str());
        return false;
    }
#endif
    return true;
}

}  // namespace xenhsa::backend::service
