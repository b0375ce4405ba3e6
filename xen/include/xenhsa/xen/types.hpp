// Vocabulary of the hypervisor seam: ids, and errors as values.
#ifndef XENHSA_XEN_TYPES_HPP
#define XENHSA_XEN_TYPES_HPP

#include <boost/outcome/result.hpp>
#include <cstdint>
#include <optional>
#include <system_error>

namespace xenhsa::xen {

using DomId = uint16_t;     // domid_t
using GrantRef = uint32_t;  // grant_ref_t
using Port = uint32_t;      // evtchn_port_t

inline constexpr DomId kDomIdSelf = 0x7FF0;           // DOMID_SELF
inline constexpr DomId kDomIdFirstReserved = 0x7FF0;  // DOMID_FIRST_RESERVED: no domain's id
inline constexpr DomId kDomIdInvalid = 0x7FF4;        // DOMID_INVALID

// Every fallible seam call returns Result<T>: a value or a std::error_code (errno values
// in std::generic_category(), as the libxen* libraries report them).
template <class T>
using Result = boost::outcome_v2::result<T, std::error_code>;

inline std::error_code errc(std::errc e) noexcept { return std::make_error_code(e); }
inline std::error_code errno_code(int e) noexcept { return {e, std::generic_category()}; }

// Xen's unmap notification for one page: when the mapping goes away (an unmap, or the
// process that holds it dying) the byte at `clear_byte_at` is cleared and/or `port` (a
// port of the domain that set it up) is notified. gntdev sets it on a mapping of a
// peer's grant (GrantMapper::map_notify), gntalloc on pages this domain grants
// (ShareSpec::notify: the sharer's own mapping).
struct UnmapNotify {
    std::optional<uint32_t> clear_byte_at;
    std::optional<Port> port;
};

}  // namespace xenhsa::xen

#endif
