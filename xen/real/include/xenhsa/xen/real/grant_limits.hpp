// The hypervisor's bounds on this domain's grants, as a backend domain's operator sizes
// them: its grant table (GNTTABOP_query_size: the pages it can grant, which LEND draws
// on) and its maptrack table (the grant pages it can map at once, all guests together,
// which MAP draws on). Xen does not report the maptrack size; a domain created at boot
// (dom0) gets Xen's `gnttab_max_maptrack_frames=` or its default, so that is read from
// Xen's command line.
#ifndef XENHSA_XEN_REAL_GRANT_LIMITS_HPP
#define XENHSA_XEN_REAL_GRANT_LIMITS_HPP

#include <cstdint>
#include <optional>
#include <string_view>
#include <xenhsa/xen/types.hpp>

namespace xenhsa::xen::real {

inline constexpr uint32_t kGrantEntriesPerFrame = 512;       // v1 entries of 8 bytes
inline constexpr uint32_t kMaptrackEntriesPerFrame = 256;    // struct grant_mapping, 16 bytes
inline constexpr uint32_t kXenDefaultMaptrackFrames = 1024;  // Xen 4.17's opt_max_maptrack_frames

struct GrantLimits {
    uint32_t grant_frames = 0;     // this domain's grant table, at most
    uint32_t maptrack_frames = 0;  // this domain's maptrack table, at most
    bool maptrack_default = true;  // not set on Xen's command line: Xen's default
};

// The value of `gnttab_max_maptrack_frames=` on Xen's command line (the last one, as Xen
// parses them); nullopt when it is absent or malformed.
std::optional<uint32_t> maptrack_frames_from_commandline(std::string_view commandline) noexcept;

// Through libxenctrl (privcmd: dom0); ENOTSUP where it cannot be opened, EPERM where Xen
// refuses.
Result<GrantLimits> read_grant_limits() noexcept;

}  // namespace xenhsa::xen::real

#endif
