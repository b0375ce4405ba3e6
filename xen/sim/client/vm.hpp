// Address-space helpers of the client library: placing the memfd runs the daemon hands back for a
// grant or foreign map.
#ifndef XENHSA_XEN_SIM_CLIENT_VM_HPP
#define XENHSA_XEN_SIM_CLIENT_VM_HPP

#include <cstddef>
#include <span>
#include <xenhsa/xen/reservation.hpp>
#include <xenhsa/xen/sim/wire_io.hpp>

namespace xenhsa::xen::sim::client {

inline constexpr std::size_t kPageSize = wire::kPageSize;

// PROT_NONE reservations and fatal(): xen/reservation.hpp, as the real adapters.

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
