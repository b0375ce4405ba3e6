// Page lists as MAP requests and LEND responses carry them (protocol 5.4, 5.6): up to 52
// grant references inline, or indirect pages of 1024 references each.
#ifndef XENHSA_FRONTEND_GRANT_LIST_HPP
#define XENHSA_FRONTEND_GRANT_LIST_HPP

#include <xenhsa/proto.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>
#include <xenhsa/frontend/result.hpp>
#include <xenhsa/xen/types.hpp>

namespace xenhsa::frontend {

using xen::GrantRef;

// Whether `npages` pages need indirect pages (more than fit inline).
[[nodiscard]] constexpr bool needs_indirect(std::size_t npages) noexcept {
    return npages > XENHSA_MAP_INLINE_GREFS;
}

// Indirect pages needed for `npages` pages.
[[nodiscard]] constexpr uint32_t indirect_pages_for(std::size_t npages) noexcept {
    return static_cast<uint32_t>((npages + XENHSA_GREFS_PER_INDIRECT_PAGE - 1) /
                                 XENHSA_GREFS_PER_INDIRECT_PAGE);
}

// Writes `refs` in order into consecutive 4 KiB indirect pages and zeroes the rest, the
// tail of the last page included. `pages` must be exactly indirect_pages_for(refs.size())
// pages (EINVAL otherwise, and for more than XENHSA_MAP_MAX_PAGES refs).
Result<void> pack_indirect(std::span<const GrantRef> refs, std::span<std::byte> pages);

// A MAP request for `page_refs` at `va`: inline when they fit, else naming
// `indirect_refs` (which must be indirect_pages_for(page_refs.size()) refs; ignored
// and may be empty when inline). EINVAL for an empty or too long list, or a wrong number
// of indirect refs. The request passes xenhsa_check_map_req when va is in range.
Result<xenhsa_map_req> make_map_req(uint64_t va, std::span<const GrantRef> page_refs, bool writable,
                                    std::span<const GrantRef> indirect_refs);

// The page refs of a checked LEND response (xenhsa_check_lend_rsp passed) without
// XENHSA_MAP_INDIRECT.
std::vector<GrantRef> inline_refs(const xenhsa_lend_rsp& rsp);

// The page refs listed in private copies of indirect pages (`copy`: nrefs whole pages,
// read once from the backend's pages). Fails with Errc::backend_broken when the copy is
// not exactly indirect_pages_for(npages) pages or the tail of the last page is not zero.
Result<std::vector<GrantRef>> unpack_indirect(std::span<const std::byte> copy, uint32_t npages);

}  // namespace xenhsa::frontend

#endif
