// Errors as values for the guest library: Boost.Outcome results carrying std::error_code.
#ifndef XENHSA_FRONTEND_RESULT_HPP
#define XENHSA_FRONTEND_RESULT_HPP

#include <boost/outcome/result.hpp>
#include <system_error>

namespace xenhsa::frontend {

template <class T>
using Result = boost::outcome_v2::result<T, std::error_code>;

inline std::error_code errc(std::errc e) noexcept { return std::make_error_code(e); }
inline std::error_code errno_code(int e) noexcept { return {e, std::generic_category()}; }

}  // namespace xenhsa::frontend

#endif
