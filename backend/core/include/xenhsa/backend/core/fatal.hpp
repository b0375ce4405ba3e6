// A failure on a path that must not fail (revoke, re-reserving a VA range) is a backend
// bug: log it and abort the worker, which ends only this guest's session. The one fatal()
// of the backend and the hypervisor adapters: xen/reservation.hpp.
#ifndef XENHSA_BACKEND_CORE_FATAL_HPP
#define XENHSA_BACKEND_CORE_FATAL_HPP

#include <xenhsa/xen/reservation.hpp>

namespace xenhsa::backend::core {

using xen::fatal;

}  // namespace xenhsa::backend::core

#endif
