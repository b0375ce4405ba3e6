#include "call_log.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "real_libc.hpp"

namespace xenhsa::kfd_shim {

void CallLog::open_from_env() noexcept {
    const char* path = std::getenv("XENHSA_KFD_SHIM_LOG");
    if (path != nullptr && *path != '\0' && fd_ < 0) {
        fd_ = real::open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    }
}

void CallLog::line(std::string_view text) noexcept {
    if (fd_ < 0) {
        return;
    }
    try {
        // The pid first: every worker of a backend writes to the same file.
        std::string out =
            std::to_string(::getpid()) + ' ' + std::to_string(seq_.fetch_add(1) + 1) + ' ';
        out += text;
        out += '\n';
        (void)!::write(fd_, out.data(), out.size());
    } catch (...) {  // no memory for a log line: the call itself goes on
    }
}

CallLog& call_log() noexcept {
    static CallLog log;
    return log;
}

std::string hex(uint64_t value) {
    char buffer[24];
    std::snprintf(buffer, sizeof buffer, "0x%llx", static_cast<unsigned long long>(value));
    return buffer;
}

std::string result_text(int err) {
    if (err == 0) {
        return "ok";
    }
    const char* name = strerrorname_np(err);
    return name != nullptr ? name : std::to_string(err);
}

}  // namespace xenhsa::kfd_shim
