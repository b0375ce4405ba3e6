// The PROT_NONE reservations grant mappings are placed in (GrantMapSpec::at,
// ShareSpec::at), for every adapter of the seam, and the one way an adapter gives up when
// an invariant of its own mappings breaks.
#ifndef XENHSA_XEN_RESERVATION_HPP
#define XENHSA_XEN_RESERVATION_HPP

#include <cstddef>
#include <xenhsa/xen/types.hpp>

namespace xenhsa::xen {

// A failure that must not happen (an unmap of a mapping we made): writes "xenhsa: fatal:
// <what>[: <strerror(err)>]" to stderr without allocating and aborts. Used on noexcept
// teardown paths, where returning an error is impossible and continuing could leave a
// peer's memory mapped or a caller's VA reservation with a hole.
[[noreturn]] void fatal(const char* what, int err = 0) noexcept;

// A fresh PROT_NONE reservation of `len` bytes anywhere.
Result<std::byte*> reserve(std::size_t len) noexcept;

// Puts a PROT_NONE reservation back over [at, at + len), replacing whatever is there in
// one step, so the range never becomes a hole another thread's mmap() could land in.
// MAP_FIXED is correct only because the range lies inside a reservation the caller owns.
// Fatal on failure.
void rereserve(std::byte* at, std::size_t len) noexcept;

// ShareSpec::copy_bytes: copies [at, at + len) into the view at `view`, then moves the view
// over the range in one step (mremap), with nothing in between. false (errno set) and the
// range untouched when the move fails; the view stays at `view` then.
bool move_view_over(void* view, std::byte* at, std::size_t len,
                    void (*copy_bytes)(void*, const void*, std::size_t)) noexcept;

}  // namespace xenhsa::xen

#endif
