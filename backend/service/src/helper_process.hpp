// What a real-Xen worker's helpers (the grant broker, the store proxy) do once forked:
// keep only their own fds, and confine themselves. They stay root, for the worker (another
// uid) can then neither signal nor trace them, but without a capability: every one
// leaves the bounding, effective, permitted, inheritable and ambient sets; then
// non-dumpable, no-new-privs and their filter (syscall_filter.hpp).
#ifndef XENHSA_BACKEND_SERVICE_SRC_HELPER_PROCESS_HPP
#define XENHSA_BACKEND_SERVICE_SRC_HELPER_PROCESS_HPP

#include <initializer_list>

#include "syscall_filter.hpp"

namespace xenhsa::backend::service {

// Every fd but 0-2 and `keep` closes.
void keep_only_fds(std::initializer_list<int> keep) noexcept;
// False when a step failed (said on stderr): the helper must end.
bool confine_helper(HelperKind kind) noexcept;
// One line on stderr, in one write (stdio would stat the fd first, which the filter
// refuses).
void helper_says(const char* who, const char* text) noexcept;

}  // namespace xenhsa::backend::service

#endif
