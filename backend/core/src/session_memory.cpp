// MAP, UNMAP and LEND (docs/protocol.md §5.4-5.6): the session's checks, then Map/Revoke.
#include <xenhsa/backend/core/session.hpp>

namespace xenhsa::backend::core {

Reply Session::map(const xenhsa_map_req& req, uint32_t seqno) {
    const auto fail = [&](uint32_t status) { return make_reply(XENHSA_CMD_MAP, seqno, status); };
    if ((req.flags & XENHSA_MAP_INDIRECT) != 0 && (features_ & XENHSA_FEATURE_INDIRECT) == 0) {
        return fail(XENHSA_STATUS_UNSUPPORTED);
    }
    const uint64_t size = uint64_t{req.npages} * XENHSA_PAGE_SIZE;
    if (const uint32_t placed = window_.placement_status(req.va, size);
        placed != XENHSA_STATUS_OK) {
        return fail(placed);
    }
    if (map_revoke_.mapped_pages() + req.npages > quotas_.max_map_pages || handles_full()) {
        return fail(XENHSA_STATUS_QUOTA);
    }
    const MapRevoke::Mapped mapped = map_revoke_.map(req);
    if (mapped.status != XENHSA_STATUS_OK) {
        return fail(mapped.status);
    }
    xenhsa_handle_rsp rsp{};
    rsp.handle = mapped.handle;
    return make_reply(XENHSA_CMD_MAP, seqno, XENHSA_STATUS_OK, rsp);
}

Reply Session::unmap(const xenhsa_handle_req& req, uint32_t seqno) {
    const auto done = [&](uint32_t status) { return make_reply(XENHSA_CMD_UNMAP, seqno, status); };
    if (map_revoke_.is_lend(req.handle)) {
        map_revoke_.unlend(req.handle);
        return done(XENHSA_STATUS_OK);
    }
    const auto range = map_revoke_.map_range(req.handle);
    if (!range) {
        return done(XENHSA_STATUS_BAD_HANDLE);
    }
    const auto [va, size] = *range;
    if (range_held(va, size)) {
        // A live queue uses this memory: OK now, unmapped after QUEUE_DESTROY (§5.20).
        map_revoke_.defer_unmap(req.handle);
        return done(XENHSA_STATUS_OK);
    }
    if (seams_.gpu != nullptr && seams_.gpu->pinned(va, size)) {
        return done(XENHSA_STATUS_BAD_STATE);
    }
    map_revoke_.unmap(req.handle);
    return done(XENHSA_STATUS_OK);
}

Reply Session::lend(const xenhsa_lend_req& req, uint32_t seqno) {
    const auto fail = [&](uint32_t status) { return make_reply(XENHSA_CMD_LEND, seqno, status); };
    if (req.npages > XENHSA_MAP_INLINE_GREFS && (features_ & XENHSA_FEATURE_INDIRECT) == 0) {
        return fail(XENHSA_STATUS_UNSUPPORTED);
    }
    const uint64_t size = uint64_t{req.npages} * XENHSA_PAGE_SIZE;
    if (const uint32_t placed = window_.placement_status(req.va, size);
        placed != XENHSA_STATUS_OK) {
        return fail(placed);
    }
    if (map_revoke_.lent_pages() + req.npages > quotas_.max_lend_pages || handles_full()) {
        return fail(XENHSA_STATUS_QUOTA);
    }
    const MapRevoke::Lent lent = map_revoke_.lend(req);
    if (lent.status != XENHSA_STATUS_OK) {
        return fail(lent.status);
    }
    return make_reply(XENHSA_CMD_LEND, seqno, XENHSA_STATUS_OK, lent.rsp);
}

}  // namespace xenhsa::backend::core
