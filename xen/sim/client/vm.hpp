// Address-space helpers of the client library: PROT_NONE reservations, and placing the
// memfd runs the daemon hands back for a grant or foreign map.
#ifndef XENHSA_XEN_SIM_CLIENT_VM_HPP
#define XENHSA_XEN_SIM_CLIENT_VM_HPP

#include <cstddef>
#include <span>
#include <xenhsa/xen/sim/wire_io.hpp>

namespace xenhsa::xen::sim::client {

inline constexpr std::size_t kPageSize = wire::kPageSize;

// A failure that must not happen on a teardown path (unmap of a mapping we made): log and
// abort, as the real adapters do.
[[noreturn]] void fatal(const char* what, int err) noexcept;

// A fresh PROT_NONE reservation of `len` bytes anywhere.
Result<std::byte*> reserve(std::size_t len) noexcept;
// Puts a PROT_NONE reservation back over [at, at + len), replacing whatever is there in one
// step. MAP_FIXED is correct only because the range lies inside a reservation the caller
// owns (GrantMapSpec::at / ShareSpec::at). Fatal on failure.
void rereserve(std::byte* at, std::size_t len) noexcept;
// munmap; fatal on failure.
void unmap(std::byte* at, std::size_t len) noexcept;

// Maps the runs of `replies` (a map reply and its continuations) one after the other from
// `base`, replacing the reservation there (MAP_SHARED | MAP_FIXED). They must cover exactly
// `pages` pages (EPROTO otherwise). On failure `failed_page` names the page whose run did
// not map; the caller puts the reservation back.
Result<void> map_runs(std::byte* base, std::size_t pages, std::span<const wire::Message> replies,
                      int prot, std::size_t& failed_page) noexcept;

}  // namespace xenhsa::xen::sim::client

#endif
