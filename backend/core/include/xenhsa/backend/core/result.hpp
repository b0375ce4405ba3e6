// Errors as values in the backend core: std::error_code with errno values in
// std::generic_category(), as both seams report them.
#ifndef XENHSA_BACKEND_CORE_RESULT_HPP
#define XENHSA_BACKEND_CORE_RESULT_HPP

#include <boost/outcome/result.hpp>
#include <system_error>

namespace xenhsa::backend::core {

template <class T>
using Result = boost::outcome_v2::result<T, std::error_code>;

inline std::error_code errc(std::errc e) noexcept { return std::make_error_code(e); }
inline std::error_code errno_code(int e) noexcept { return {e, std::generic_category()}; }

}  // namespace xenhsa::backend::core

#endif
