#include <xenhsa/backend/core/memory_commands.hpp>

namespace xenhsa::backend::core {

Reply MemoryCommands::map(const xenhsa_map_req& req, uint32_t seqno) {
    const auto fail = [&](uint32_t status) { return make_reply(XENHSA_CMD_MAP, seqno, status); };
    if ((req.flags & XENHSA_MAP_INDIRECT) != 0 && !terms_.granted(XENHSA_FEATURE_INDIRECT)) {
        return fail(XENHSA_STATUS_UNSUPPORTED);
    }
    const uint64_t size = uint64_t{req.npages} * XENHSA_PAGE_SIZE;
    if (const uint32_t placed = window_.placement_status(req.va, size);
        placed != XENHSA_STATUS_OK) {
        return fail(placed);
    }
    if (map_revoke_.mapped_pages() + req.npages > terms_.quotas.max_map_pages || handles_.full()) {
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

Reply MemoryCommands::unmap(const xenhsa_handle_req& req, uint32_t seqno) {
    const auto done = [&](uint32_t status) { return make_reply(XENHSA_CMD_UNMAP, seqno, status); };
    if (const auto lent = map_revoke_.lend_range(req.handle)) {
        // Lent pages a PIN or a live queue still uses stay lent: the guest unpins and
        // destroys the queue first (it keeps its mapping until then).
        const auto [va, size] = *lent;
        if (gpu_ != nullptr && (gpu_->range_held(va, size) || gpu_->pinned(va, size))) {
            return done(XENHSA_STATUS_BAD_STATE);
        }
        map_revoke_.unlend(req.handle);
        return done(XENHSA_STATUS_OK);
    }
    const auto range = map_revoke_.map_range(req.handle);
    if (!range) {
        return done(XENHSA_STATUS_BAD_HANDLE);
    }
    const auto [va, size] = *range;
    if (gpu_ != nullptr && gpu_->range_held(va, size)) {
        // A live queue uses this memory: OK now, unmapped after QUEUE_DESTROY (§5.20).
        map_revoke_.defer_unmap(req.handle);
        return done(XENHSA_STATUS_OK);
    }
    if (gpu_ != nullptr && gpu_->pinned(va, size)) {
        return done(XENHSA_STATUS_BAD_STATE);
    }
    map_revoke_.unmap(req.handle);
    return done(XENHSA_STATUS_OK);
}

Reply MemoryCommands::lend(const xenhsa_lend_req& req, uint32_t seqno) {
    const auto fail = [&](uint32_t status) { return make_reply(XENHSA_CMD_LEND, seqno, status); };
    if (req.npages > XENHSA_MAP_INLINE_GREFS && !terms_.granted(XENHSA_FEATURE_INDIRECT)) {
        return fail(XENHSA_STATUS_UNSUPPORTED);
    }
    const uint64_t size = uint64_t{req.npages} * XENHSA_PAGE_SIZE;
    if (const uint32_t placed = window_.placement_status(req.va, size);
        placed != XENHSA_STATUS_OK) {
        return fail(placed);
    }
    if (map_revoke_.lent_pages() + req.npages > terms_.quotas.max_lend_pages || handles_.full()) {
        return fail(XENHSA_STATUS_QUOTA);
    }
    const MapRevoke::Lent lent = map_revoke_.lend(req);
    if (lent.status != XENHSA_STATUS_OK) {
        return fail(lent.status);
    }
    return make_reply(XENHSA_CMD_LEND, seqno, XENHSA_STATUS_OK, lent.rsp);
}

}  // namespace xenhsa::backend::core
