// Internals shared by the libxen* adapters (not installed, not part of the seam).
#ifndef XENHSA_XEN_REAL_DETAIL_HPP
#define XENHSA_XEN_REAL_DETAIL_HPP

#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <string>
#include <string_view>
#include <xenhsa/xen/types.hpp>

struct xentoollog_logger;
struct xenforeignmemory_handle;

namespace xenhsa::xen::real::detail {

inline constexpr std::size_t kPageSize = 4096;  // XC_PAGE_SIZE; GrantMapping::kPageSize

// The errno a libxen* call left behind. A library that failed without setting errno
// still yields an error: EIO.
inline std::error_code last_error() noexcept {
    const int e = errno;
    return errno_code(e != 0 ? e : EIO);
}

// free() for what libxenstore (and other C libraries) hand back with malloc().
struct FreeDeleter {
    void operator()(void* p) const noexcept { std::free(p); }
};

// xenforeignmemory_close() as the deleter of a handle's owning pointer.
struct FmemClose {
    void operator()(xenforeignmemory_handle* h) const noexcept;
};

// A std::string_view as a C string: EINVAL when it has an embedded NUL, which the C
// libraries would silently truncate at.
Result<std::string> c_string(std::string_view s);

// fatal(): xen/reservation.hpp, shared with the simulator's client.

// Logs a teardown failure that is not a safety problem (e.g. unbinding an event channel).
void warn(const char* what, int err) noexcept;

// A xentoollog logger that drops everything (for opens that are expected to fail, e.g.
// libxenctrl in a driver domain), or nullptr for the library's default stderr logger.
xentoollog_logger* library_logger(bool quiet) noexcept;
xentoollog_logger* silent_logger() noexcept;

}  // namespace xenhsa::xen::real::detail

#endif
