#include "detail.hpp"

#include <cstdarg>
#include <cstdio>
#include <cstring>

extern "C" {
#include <xenforeignmemory.h>
#include <xentoollog.h>
}

namespace xenhsa::xen::real::detail {

namespace {

void silent_vmessage(xentoollog_logger* /*logger*/, xentoollog_level /*level*/, int /*errnoval*/,
                     const char* /*context*/, const char* /*format*/, va_list /*al*/) {}

void silent_destroy(xentoollog_logger* /*logger*/) {}

// Stateless, so one static instance serves every handle; the libraries never destroy a
// logger they were given.
xentoollog_logger g_silent = {&silent_vmessage, nullptr, &silent_destroy};

}  // namespace

Result<std::string> c_string(std::string_view s) {
    if (s.find('\0') != std::string_view::npos) {
        return errno_code(EINVAL);
    }
    try {
        return std::string(s);
    } catch (const std::bad_alloc&) {
        return errno_code(ENOMEM);
    }
}

void warn(const char* what, int err) noexcept {
    std::fprintf(stderr, "xenhsa: %s: %s\n", what, std::strerror(err));
}

void FmemClose::operator()(xenforeignmemory_handle* h) const noexcept { xenforeignmemory_close(h); }

xentoollog_logger* silent_logger() noexcept { return &g_silent; }

xentoollog_logger* library_logger(bool quiet) noexcept { return quiet ? &g_silent : nullptr; }

}  // namespace xenhsa::xen::real::detail
