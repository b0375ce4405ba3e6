// Map/Revoke for one guest (docs/protocol.md §5.3-5.6): MAPs of the guest's grants at
// the guest's own VAs, LENDs of backend pages to the guest at the same VAs, and their
// revoke. MemoryCommands runs the checks (state, feature, address, quota) and calls in
// here to execute; everything in here leaves no partial state behind on failure.
//
// Revoke never fails, never allocates and takes bounded time. For a MAP:
//   1-3. the GPU half: GpuContext::revoke_range (quiesce the queues using the range,
//        unmap it from the GPU, deregister it; an ALLOC freed with those queues gives
//        its range back to the window);
//   4.   unmap the grants;
//   5.   re-reserve the VA range PROT_NONE.
// For a LEND: the GPU half as for a MAP (lent pages are pinned where the kernel cannot pin
// grant mappings), SharedPages::revoke(), then a REVOKED record on the notify page (queued,
// never dropped). The LEND handle stays until the guest acknowledges with UNMAP; until
// then its range answers REVOKED.
#ifndef XENHSA_BACKEND_CORE_MAP_REVOKE_HPP
#define XENHSA_BACKEND_CORE_MAP_REVOKE_HPP

#include <xenhsa/proto/memory.h>
#include <xenhsa/proto/status.h>

#include <cstdint>
#include <iterator>
#include <map>
#include <optional>
#include <utility>
#include <xenhsa/backend/core/notify_producer.hpp>
#include <xenhsa/backend/core/va_window.hpp>
#include <xenhsa/hsa/gpu_context.hpp>
#include <xenhsa/hsa/handle_table.hpp>
#include <xenhsa/xen/grant_map.hpp>
#include <xenhsa/xen/grant_share.hpp>

namespace xenhsa::backend::core {

using hsa::Handle;

// Handle kinds of the backend's own tables. GpuContext's kinds are distinct, so a
// handle of one kind is unknown to every other table of the guest.
inline constexpr uint8_t kMapHandleKind = 0xB1;
inline constexpr uint8_t kLendHandleKind = 0xB2;

struct MapRevokeSeams {
    xen::DomId guest = xen::kDomIdInvalid;
    xen::GrantMapper& mapper;
    xen::GrantSharer* sharer = nullptr;  // null: LEND unavailable
    hsa::GpuContext* gpu = nullptr;      // null: no GPU half to revoke
};

class MapRevoke {
public:
    // `window` is the guest's window (empty until HELLO connects; nothing is mapped
    // before). `max_handles` sizes the handle tables once, so that erasing a handle on a
    // revoke path never allocates.
    MapRevoke(const MapRevokeSeams& seams, VaWindow& window, NotifyProducer& notify,
              uint32_t max_handles);
    ~MapRevoke();  // revoke_all(false)
    MapRevoke(const MapRevoke&) = delete;
    MapRevoke& operator=(const MapRevoke&) = delete;

    // --- execution (MemoryCommands has run the checks up to and including quota)
    struct Mapped {
        uint32_t status = XENHSA_STATUS_OK;
        Handle handle = 0;
    };
    // MAP steps 9-11: indirect pages mapped read-only, copied once, tail checked
    // (BAD_PAD), unmapped; then the data pages at req.va. GRANT_FAILED / NO_MEMORY with
    // nothing left mapped.
    Mapped map(const xenhsa_map_req& req);
    struct Lent {
        uint32_t status = XENHSA_STATUS_OK;
        xenhsa_lend_rsp rsp{};
    };
    // LEND step 7: pages shared at req.va (backend VA == guest VA); more than 52 pages
    // are described by indirect pages the backend shares read-only.
    Lent lend(const xenhsa_lend_req& req);

    // --- lookups
    [[nodiscard]] bool is_map(Handle h) const noexcept { return map_handles_.find(h) != nullptr; }
    [[nodiscard]] bool is_lend(Handle h) const noexcept { return lend_handles_.find(h) != nullptr; }
    // [va, va + size) of a live MAP handle.
    [[nodiscard]] std::optional<std::pair<uint64_t, uint64_t>> map_range(Handle h) const noexcept;
    // [va, va + size) of a LEND handle (revoked or not).
    [[nodiscard]] std::optional<std::pair<uint64_t, uint64_t>> lend_range(Handle h) const noexcept;
    // PIN's coverage check: OK when [va, va + size) is covered by adjacent live MAPs and
    // LENDs (writable ones if `need_writable`), REVOKED when it overlaps a revoked LEND,
    // BAD_ADDRESS otherwise.
    [[nodiscard]] uint32_t coverage_status(uint64_t va, uint64_t size,
                                           bool need_writable) const noexcept;

    // --- the guest's UNMAP
    // Of a MAP: the revoke sequence now; the handle is stale afterwards.
    void unmap(Handle map) noexcept;
    // Of a MAP whose memory a live queue holds: the handle is stale now, the mapping
    // stays until release_deferred() finds no queue holding it.
    void defer_unmap(Handle map) noexcept;
    // Runs the revoke sequence for every deferred MAP `held(va, size)` says no queue
    // holds any more.
    template <class Held>
    void release_deferred(Held&& held) noexcept {
        for (auto it = maps_.begin(); it != maps_.end();) {
            auto next = std::next(it);
            if (it->second.deferred && !held(it->second.va, it->second.size())) {
                revoke_map_entry(it);
            }
            it = next;
        }
    }
    // Of a LEND: scrub, end sharing (or revoke if the guest still maps it), free the
    // range; after a REVOKED this is the acknowledgement. The handle is stale afterwards.
    void unlend(Handle lend) noexcept;

    // --- revoke triggers
    // The operator's (or the service's) revoke of one MAP or LEND handle; false if the
    // handle names neither.
    bool revoke_handle(Handle h) noexcept;
    // Every MAP (revoke sequence) and every LEND (revoke, REVOKED unless `session_end`).
    // A MAP's handle goes stale; a LEND's stays until acknowledged unless `session_end`.
    void revoke_all(bool session_end) noexcept;
    // The quota-breach path: revokes the newest MAPs until the MAPped pages fit
    // `max_map_pages`, and the newest LENDs until the live lent pages fit
    // `max_lend_pages`. Returns how many objects were revoked.
    uint32_t revoke_over_quota(uint64_t max_map_pages, uint64_t max_lend_pages) noexcept;

    // --- accounting
    [[nodiscard]] uint64_t mapped_pages() const noexcept { return mapped_pages_; }
    // Lent pages the guest may still map, revoked ones not yet acknowledged included.
    [[nodiscard]] uint64_t lent_pages() const noexcept { return lent_pages_; }
    [[nodiscard]] uint64_t live_lent_pages() const noexcept { return lent_pages_ - revoked_pages_; }
    [[nodiscard]] uint32_t handles() const noexcept {
        return map_handles_.size() + lend_handles_.size();
    }
    [[nodiscard]] std::size_t deferred_maps() const noexcept;

private:
    struct MapEntry {
        uint64_t va = 0;
        uint32_t npages = 0;
        bool writable = false;
        bool deferred = false;
        Handle handle = 0;  // 0 once the guest's UNMAP was deferred
        uint64_t seq = 0;
        xen::GrantMapping mapping;
        [[nodiscard]] uint64_t size() const noexcept { return uint64_t{npages} * XENHSA_PAGE_SIZE; }
    };
    struct LendEntry {
        uint64_t va = 0;
        uint32_t npages = 0;
        bool writable = false;
        bool revoked = false;
        Handle handle = 0;
        uint64_t seq = 0;
        xen::SharedPages pages;
        xen::SharedPages indirect;  // the pages listing pages.refs(), for > 52 pages
        [[nodiscard]] uint64_t size() const noexcept { return uint64_t{npages} * XENHSA_PAGE_SIZE; }
    };

    void revoke_map_entry(std::map<uint64_t, MapEntry>::iterator it) noexcept;
    void revoke_lend_entry(LendEntry& entry, bool notify) noexcept;
    // Forgets a LEND (revoked or ended): handle, entry, window range.
    void drop_lend(std::map<uint64_t, LendEntry>::iterator it) noexcept;

    MapRevokeSeams seams_;
    VaWindow& window_;
    NotifyProducer& notify_;
    std::map<uint64_t, MapEntry> maps_;        // by va, deferred ones included
    std::map<uint64_t, LendEntry> lends_;      // by va, revoked ones included
    hsa::HandleTable<uint64_t> map_handles_;   // MAP handle -> va
    hsa::HandleTable<uint64_t> lend_handles_;  // LEND handle -> va
    uint64_t mapped_pages_ = 0;
    uint64_t lent_pages_ = 0;
    uint64_t revoked_pages_ = 0;
    uint64_t seq_ = 0;
};

}  // namespace xenhsa::backend::core

#endif
