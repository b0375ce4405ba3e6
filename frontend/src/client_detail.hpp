// Helpers shared by the Client's source files (client*.cpp); not part of the API.
#ifndef XENHSA_FRONTEND_SRC_CLIENT_DETAIL_HPP
#define XENHSA_FRONTEND_SRC_CLIENT_DETAIL_HPP

#include <chrono>
#include <cstring>
#include <span>
#include <system_error>
#include <xenhsa/frontend/client.hpp>

namespace xenhsa::frontend::detail {

using Clock = std::chrono::steady_clock;
// A wait never sleeps longer than this between liveness checks (be_alive is memory, so
// a dead backend is noticed even when no event arrives).
inline constexpr std::chrono::milliseconds kPollSlice{100};

inline std::error_code sys_error(int e) { return {e, std::generic_category()}; }

template <class Wire>
std::span<const std::byte> bytes_of(const Wire& wire) {
    return std::as_bytes(std::span(&wire, 1));
}

}  // namespace xenhsa::frontend::detail

#endif
