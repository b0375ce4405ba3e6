// A failure on a path that must not fail (revoke, re-reserving a VA range) is a backend
// bug: log it and abort the worker, which ends only this guest's session.
#ifndef XENHSA_BACKEND_CORE_FATAL_HPP
#define XENHSA_BACKEND_CORE_FATAL_HPP

namespace xenhsa::backend::core {

// Writes "xenhsa-backend: fatal: <what>[: <strerror(err)>]" to stderr without allocating,
// then aborts.
[[noreturn]] void fatal(const char* what, int err = 0) noexcept;

}  // namespace xenhsa::backend::core

#endif
