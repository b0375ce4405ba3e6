#include <xenhsa/proto/validate.h>

#include <cstring>
#include <vector>
#include <xenhsa/backend/core/map_revoke.hpp>
#include <xenhsa/backend/core/seam_status.hpp>

namespace xenhsa::backend::core {
namespace {

// Grows the table to its capacity once and empties it again, so that later erases (on
// revoke paths) push onto a free list that never reallocates.
void prewarm(hsa::HandleTable<uint64_t>& table) {
    std::vector<Handle> handles;
    handles.reserve(table.capacity());
    for (uint32_t i = 0; i < table.capacity(); ++i) {
        handles.push_back(*table.insert(0));
    }
    for (Handle h : handles) {
        table.erase(h);
    }
}

std::byte* va_ptr(uint64_t va) noexcept { return reinterpret_cast<std::byte*>(va); }

}  // namespace

MapRevoke::MapRevoke(const MapRevokeSeams& seams, VaWindow& window, NotifyProducer& notify,
                     uint32_t max_handles)
    : seams_(seams),
      window_(window),
      notify_(notify),
      map_handles_(kMapHandleKind, max_handles),
      lend_handles_(kLendHandleKind, max_handles) {
    prewarm(map_handles_);
    prewarm(lend_handles_);
}

MapRevoke::~MapRevoke() { revoke_all(true); }

MapRevoke::Mapped MapRevoke::map(const xenhsa_map_req& req) {
    const uint64_t va = req.va;
    const uint64_t size = uint64_t{req.npages} * XENHSA_PAGE_SIZE;
    std::vector<xen::GrantRef> refs;
    if ((req.flags & XENHSA_MAP_INDIRECT) != 0) {
        const std::size_t listed = std::size_t{req.nrefs} * XENHSA_GREFS_PER_INDIRECT_PAGE;
        refs.resize(listed);
        {
            auto indirect = seams_.mapper.map(xen::GrantMapSpec{
                seams_.guest, std::span<const xen::GrantRef>(req.gref, req.nrefs), false, nullptr});
            if (!indirect) {
                return {seam_status(Seam::grant_map, indirect.error()), 0};
            }
            // The one read of the guest's indirect pages; they are unmapped right after
            // and only the private copy is used.
            std::memcpy(refs.data(), indirect.value().data(), listed * sizeof(xen::GrantRef));
            __atomic_signal_fence(__ATOMIC_SEQ_CST);
        }
        if (!xenhsa_all_zero(refs.data() + req.npages,
                             (listed - req.npages) * sizeof(xen::GrantRef))) {
            return {XENHSA_STATUS_BAD_PAD, 0};
        }
        refs.resize(req.npages);
    } else {
        refs.assign(req.gref, req.gref + req.npages);
    }

    if (!window_.claim(va, size, RangeKind::map)) {
        return {XENHSA_STATUS_BAD_ADDRESS, 0};
    }
    auto handle = map_handles_.insert(va);
    if (!handle) {
        window_.release(va, size);
        return {XENHSA_STATUS_QUOTA, 0};
    }
    auto mapped = seams_.mapper.map(
        xen::GrantMapSpec{seams_.guest, refs, (req.flags & XENHSA_MAP_RW) != 0, va_ptr(va)});
    if (!mapped) {
        // The mapper mapped every page or none; put the reservation back regardless.
        map_handles_.erase(*handle);
        window_.release(va, size);
        return {seam_status(Seam::grant_map, mapped.error()), 0};
    }
    MapEntry entry;
    entry.va = va;
    entry.npages = req.npages;
    entry.writable = (req.flags & XENHSA_MAP_RW) != 0;
    entry.handle = *handle;
    entry.seq = ++seq_;
    entry.mapping = std::move(mapped).value();
    maps_.emplace(va, std::move(entry));
    mapped_pages_ += req.npages;
    return {XENHSA_STATUS_OK, *handle};
}

MapRevoke::Lent MapRevoke::lend(const xenhsa_lend_req& req) {
    Lent out;
    if (seams_.sharer == nullptr) {
        out.status = XENHSA_STATUS_UNSUPPORTED;
        return out;
    }
    const uint64_t va = req.va;
    const uint64_t size = uint64_t{req.npages} * XENHSA_PAGE_SIZE;
    const bool writable = (req.flags & XENHSA_MAP_RW) != 0;
    if (!window_.claim(va, size, RangeKind::lend)) {
        out.status = XENHSA_STATUS_BAD_ADDRESS;
        return out;
    }
    auto handle = lend_handles_.insert(va);
    if (!handle) {
        window_.release(va, size);
        out.status = XENHSA_STATUS_QUOTA;
        return out;
    }
    auto fail = [&](uint32_t status) {
        lend_handles_.erase(*handle);
        window_.release(va, size);
        out.status = status;
        return out;
    };
    auto pages =
        seams_.sharer->share(xen::ShareSpec{seams_.guest, req.npages, writable, va_ptr(va)});
    if (!pages) {
        return fail(seam_status(Seam::grant_share, pages.error()));
    }
    xen::SharedPages indirect;
    uint32_t flags = req.flags & XENHSA_MAP_RW;
    if (req.npages > XENHSA_MAP_INLINE_GREFS) {
        flags |= XENHSA_MAP_INDIRECT;
        auto listing = seams_.sharer->share(
            xen::ShareSpec{seams_.guest, xenhsa_map_nrefs(req.npages, flags), false, nullptr});
        if (!listing) {
            pages.value().revoke();  // never seen by the guest; give the pages up
            return fail(seam_status(Seam::grant_share, listing.error()));
        }
        // Freshly shared pages are zeroed, so the tail past npages is zero.
        std::memcpy(listing.value().data(), pages.value().refs().data(),
                    std::size_t{req.npages} * sizeof(xen::GrantRef));
        indirect = std::move(listing).value();
    }

    out.rsp.handle = *handle;
    out.rsp.npages = req.npages;
    out.rsp.flags = flags;
    out.rsp.nrefs = xenhsa_map_nrefs(req.npages, flags);
    const auto listed = (flags & XENHSA_MAP_INDIRECT) != 0 ? indirect.refs() : pages.value().refs();
    for (uint32_t i = 0; i < out.rsp.nrefs; ++i) {
        out.rsp.gref[i] = listed[i];
    }

    LendEntry entry;
    entry.va = va;
    entry.npages = req.npages;
    entry.writable = writable;
    entry.handle = *handle;
    entry.seq = ++seq_;
    entry.pages = std::move(pages).value();
    entry.indirect = std::move(indirect);
    lends_.emplace(va, std::move(entry));
    lent_pages_ += req.npages;
    return out;
}

std::optional<std::pair<uint64_t, uint64_t>> MapRevoke::map_range(Handle h) const noexcept {
    const uint64_t* va = map_handles_.find(h);
    if (va == nullptr) {
        return std::nullopt;
    }
    const MapEntry& e = maps_.at(*va);
    return std::make_pair(e.va, e.size());
}

std::optional<std::pair<uint64_t, uint64_t>> MapRevoke::lend_range(Handle h) const noexcept {
    const uint64_t* va = lend_handles_.find(h);
    if (va == nullptr) {
        return std::nullopt;
    }
    const LendEntry& e = lends_.at(*va);
    return std::make_pair(e.va, e.size());
}

namespace {

// The entry of `entries` (by VA) containing `va`, or null.
template <class Entries>
const typename Entries::mapped_type* containing(const Entries& entries, uint64_t va) noexcept {
    auto it = entries.upper_bound(va);
    if (it == entries.begin()) {
        return nullptr;
    }
    --it;
    return va - it->second.va < it->second.size() ? &it->second : nullptr;
}

}  // namespace

uint32_t MapRevoke::coverage_status(uint64_t va, uint64_t size, bool need_writable) const noexcept {
    if (window_.ranges().overlap(va, size) == RangeMap::Overlap::revoked_lend) {
        return XENHSA_STATUS_REVOKED;
    }
    const uint64_t end = va + size;
    uint64_t cursor = va;
    while (cursor < end) {
        if (const MapEntry* m = containing(maps_, cursor)) {
            if (m->deferred || (need_writable && !m->writable)) {
                return XENHSA_STATUS_BAD_ADDRESS;
            }
            cursor = m->va + m->size();
        } else if (const LendEntry* l = containing(lends_, cursor)) {
            if (l->revoked || (need_writable && !l->writable)) {
                return XENHSA_STATUS_BAD_ADDRESS;
            }
            cursor = l->va + l->size();
        } else {
            return XENHSA_STATUS_BAD_ADDRESS;
        }
    }
    return XENHSA_STATUS_OK;
}

void MapRevoke::unmap(Handle map) noexcept {
    const uint64_t* va = map_handles_.find(map);
    if (va != nullptr) {
        revoke_map_entry(maps_.find(*va));
    }
}

void MapRevoke::defer_unmap(Handle map) noexcept {
    const uint64_t* va = map_handles_.find(map);
    if (va == nullptr) {
        return;
    }
    MapEntry& e = maps_.find(*va)->second;
    e.deferred = true;
    e.handle = 0;
    map_handles_.erase(map);
}

std::size_t MapRevoke::deferred_maps() const noexcept {
    std::size_t n = 0;
    for (const auto& [va, e] : maps_) {
        n += e.deferred ? 1 : 0;
    }
    return n;
}

void MapRevoke::unlend(Handle lend) noexcept {
    const uint64_t* va = lend_handles_.find(lend);
    if (va == nullptr) {
        return;
    }
    auto it = lends_.find(*va);
    LendEntry& e = it->second;
    if (!e.revoked) {
        std::memset(e.pages.data(), 0, e.size());
        if (!e.pages.end_access()) {
            // The guest still maps a page although it said it had unmapped: take the
            // pages back (scrubbed and out of use until the mapping is gone).
            (void)e.pages.revoke();
        }
        if (!e.indirect.end_access()) {
            (void)e.indirect.revoke();
        }
    }
    drop_lend(it);
}

void MapRevoke::drop_lend(std::map<uint64_t, LendEntry>::iterator it) noexcept {
    LendEntry& e = it->second;
    lent_pages_ -= e.npages;
    if (e.revoked) {
        revoked_pages_ -= e.npages;
    }
    lend_handles_.erase(e.handle);
    const uint64_t va = e.va;
    const uint64_t size = e.size();
    lends_.erase(it);  // SharedPages already ended or revoked: nothing left to release
    window_.release(va, size);
}

void MapRevoke::revoke_map_entry(std::map<uint64_t, MapEntry>::iterator it) noexcept {
    MapEntry& e = it->second;
    const uint64_t va = e.va;
    const uint64_t size = e.size();
    // 1-3: the GPU half (queues using the range, GPU mapping, registration).
    if (seams_.gpu != nullptr) {
        seams_.gpu->revoke_range(va, size, window_);
    }
    // 4: the grants.
    e.mapping.reset();
    if (e.handle != 0) {
        map_handles_.erase(e.handle);
    }
    mapped_pages_ -= e.npages;
    maps_.erase(it);
    // 5: the VA range, PROT_NONE again.
    window_.release(va, size);
}

void MapRevoke::revoke_lend_entry(LendEntry& e, bool notify) noexcept {
    if (e.revoked) {
        return;
    }
    if (seams_.gpu != nullptr) {
        seams_.gpu->revoke_range(e.va, e.size(), window_);
    }
    (void)e.pages.revoke();
    (void)e.indirect.revoke();
    e.revoked = true;
    revoked_pages_ += e.npages;
    window_.set_kind(e.va, RangeKind::lend_revoked);
    if (notify) {
        // A full backlog marks the producer overflowed; the driver disconnects the guest.
        (void)notify_.post(NotifyProducer::revoked(e.handle, e.va, e.npages));
    }
}

bool MapRevoke::revoke_handle(Handle h) noexcept {
    if (const uint64_t* va = map_handles_.find(h)) {
        revoke_map_entry(maps_.find(*va));
        return true;
    }
    if (const uint64_t* va = lend_handles_.find(h)) {
        revoke_lend_entry(lends_.find(*va)->second, true);
        return true;
    }
    return false;
}

void MapRevoke::revoke_all(bool session_end) noexcept {
    while (!maps_.empty()) {
        revoke_map_entry(maps_.begin());
    }
    for (auto it = lends_.begin(); it != lends_.end();) {
        auto next = std::next(it);
        revoke_lend_entry(it->second, !session_end);
        if (session_end) {
            drop_lend(it);
        }
        it = next;
    }
}

uint32_t MapRevoke::revoke_over_quota(uint64_t max_map_pages, uint64_t max_lend_pages) noexcept {
    uint32_t revoked = 0;
    while (mapped_pages_ > max_map_pages && !maps_.empty()) {
        auto newest = maps_.begin();
        for (auto it = maps_.begin(); it != maps_.end(); ++it) {
            if (it->second.seq > newest->second.seq) {
                newest = it;
            }
        }
        revoke_map_entry(newest);
        ++revoked;
    }
    while (live_lent_pages() > max_lend_pages) {
        LendEntry* newest = nullptr;
        for (auto& [va, e] : lends_) {
            if (!e.revoked && (newest == nullptr || e.seq > newest->seq)) {
                newest = &e;
            }
        }
        if (newest == nullptr) {
            break;
        }
        revoke_lend_entry(*newest, true);
        ++revoked;
    }
    return revoked;
}

}  // namespace xenhsa::backend::core
