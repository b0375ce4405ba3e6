// Error codes of the guest library: protocol statuses the backend answered, and what the
// guest itself concludes about the backend and its memory.
#ifndef XENHSA_FRONTEND_ERRORS_HPP
#define XENHSA_FRONTEND_ERRORS_HPP

#include <cstdint>
#include <system_error>

namespace xenhsa::frontend {

// Conditions the guest library reports itself (category "xenhsa-frontend").
enum class Errc : int {
    backend_broken = 1,  // the backend broke the protocol (3.7): the device is closing
    backend_gone,        // be_alive reads 0, or the backend state went to Closing/Closed
    revoked_access,      // probe(): the page is gone (SIGBUS), e.g. a revoked LEND
    access_fault,        // probe(): no access (SIGSEGV), e.g. PROT_NONE or read-only
    not_connected,       // no HELLO has reached CONNECTED yet, or the device is down
    closing,             // the session is being closed by another thread (a wait ends)
    session_timed_out,   // a request that changes objects went unanswered: session ended
};

const std::error_category& frontend_category() noexcept;
inline std::error_code make_error_code(Errc e) noexcept {
    return {static_cast<int>(e), frontend_category()};
}

// A request answered with a status other than OK (category "xenhsa-status"); the value
// is the enum xenhsa_status number, the message its name.
const std::error_category& status_category() noexcept;
inline std::error_code status_error(uint32_t status) noexcept {
    return {static_cast<int>(status), status_category()};
}
// The status an error code carries, or -1 when it is not a status error.
inline int64_t status_of(const std::error_code& ec) noexcept {
    return ec.category() == status_category() ? ec.value() : -1;
}

}  // namespace xenhsa::frontend

template <>
struct std::is_error_code_enum<xenhsa::frontend::Errc> : std::true_type {};

#endif
