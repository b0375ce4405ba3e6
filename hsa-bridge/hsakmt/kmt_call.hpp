// One thunk call, its status turned into an error (hsakmt_error), with errno cleared
// before the call so that a stale errno never refines a plain HSAKMT_STATUS_ERROR.
#ifndef XENHSA_HSA_KMT_CALL_HPP
#define XENHSA_HSA_KMT_CALL_HPP

#include <xenhsa/hsa/hsakmt_include.h>

#include <cerrno>
#include <system_error>
#include <xenhsa/hsa/hsakmt_device.hpp>

namespace xenhsa::hsa::kmt {

template <class F>
std::error_code call(F&& f) noexcept {
    errno = 0;
    const HSAKMT_STATUS status = f();
    const int saved = errno;
    return hsakmt_error(static_cast<int>(status), saved);
}

}  // namespace xenhsa::hsa::kmt

#endif
