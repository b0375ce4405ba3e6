#include <algorithm>
#include <cerrno>
#include <cstring>
#include <xenhsa/frontend/errors.hpp>
#include <xenhsa/frontend/grant_list.hpp>

namespace xenhsa::frontend {

namespace {

std::error_code einval() { return {EINVAL, std::generic_category()}; }

}  // namespace

Result<void> pack_indirect(std::span<const GrantRef> refs, std::span<std::byte> pages) {
    if (refs.empty() || refs.size() > XENHSA_MAP_MAX_PAGES ||
        pages.size() != std::size_t{indirect_pages_for(refs.size())} * XENHSA_PAGE_SIZE) {
        return einval();
    }
    std::memcpy(pages.data(), refs.data(), refs.size_bytes());
    std::memset(pages.data() + refs.size_bytes(), 0, pages.size() - refs.size_bytes());
    return boost::outcome_v2::success();
}

Result<xenhsa_map_req> make_map_req(uint64_t va, std::span<const GrantRef> page_refs, bool writable,
                                    std::span<const GrantRef> indirect_refs) {
    if (page_refs.empty() || page_refs.size() > XENHSA_MAP_MAX_PAGES) {
        return einval();
    }
    xenhsa_map_req req{};
    req.va = va;
    req.npages = static_cast<uint32_t>(page_refs.size());
    req.flags = writable ? XENHSA_MAP_RW : 0u;
    std::span<const GrantRef> listed = page_refs;
    if (needs_indirect(page_refs.size())) {
        if (indirect_refs.size() != indirect_pages_for(page_refs.size())) {
            return einval();
        }
        req.flags |= XENHSA_MAP_INDIRECT;
        listed = indirect_refs;
    }
    req.nrefs = static_cast<uint32_t>(listed.size());
    std::copy(listed.begin(), listed.end(), req.gref);
    return req;
}

std::vector<GrantRef> inline_refs(const xenhsa_lend_rsp& rsp) {
    const uint32_t n = std::min(rsp.nrefs, uint32_t{XENHSA_MAP_INLINE_GREFS});
    return {rsp.gref, rsp.gref + n};
}

Result<std::vector<GrantRef>> unpack_indirect(std::span<const std::byte> copy, uint32_t npages) {
    if (npages == 0 || npages > XENHSA_MAP_MAX_PAGES ||
        copy.size() != std::size_t{indirect_pages_for(npages)} * XENHSA_PAGE_SIZE) {
        return Errc::backend_broken;
    }
    const std::size_t used = std::size_t{npages} * sizeof(GrantRef);
    if (!xenhsa_all_zero(copy.data() + used, copy.size() - used)) {
        return Errc::backend_broken;
    }
    std::vector<GrantRef> refs(npages);
    std::memcpy(refs.data(), copy.data(), used);
    return refs;
}

}  // namespace xenhsa::frontend
