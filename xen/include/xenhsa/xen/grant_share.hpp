// Grant sharing, the producer side (libxengntshr / gntalloc on Xen): pages this domain
// owns, granted to one peer domain.
#ifndef XENHSA_XEN_GRANT_SHARE_HPP
#define XENHSA_XEN_GRANT_SHARE_HPP

#include <cstddef>
#include <span>
#include <vector>
#include <xenhsa/xen/types.hpp>

namespace xenhsa::xen {

class GrantSharer;

// How a revoke() took effect.
enum class RevokeEffect : uint8_t {
    // The hypervisor withdrew the peer's access: its next access faults (xenhsa-sim).
    enforced,
    // The grants are ended, the pages were scrubbed and stay out of use until the peer
    // unmaps; the peer must be asked to unmap (Xen 4.17: no forced revoke of a grant).
    cooperative,
};

// Pages granted to a peer. end_access() withdraws the grants; as in Xen it fails with
// EBUSY while the peer still has a page mapped, and may be retried. Destroying a
// SharedPages that could not end access leaves the pages to the hypervisor, which frees
// them when the peer unmaps (gntalloc's rule); the memory is never reused meanwhile.
class SharedPages {
public:
    SharedPages() noexcept = default;
    SharedPages(GrantSharer* owner, std::byte* addr, std::vector<GrantRef> refs) noexcept
        : owner_(owner), addr_(addr), refs_(std::move(refs)) {}
    SharedPages(SharedPages&& other) noexcept { swap(other); }
    SharedPages& operator=(SharedPages&& other) noexcept {
        SharedPages(std::move(other)).swap(*this);
        return *this;
    }
    SharedPages(const SharedPages&) = delete;
    SharedPages& operator=(const SharedPages&) = delete;
    ~SharedPages() { release(); }

    [[nodiscard]] std::byte* data() const noexcept { return addr_; }
    [[nodiscard]] std::span<const GrantRef> refs() const noexcept { return refs_; }
    [[nodiscard]] std::size_t pages() const noexcept { return refs_.size(); }

    // Withdraws every grant, or none (EBUSY while the peer maps any page).
    Result<void> end_access() noexcept;
    // Gives up pages shared at a fixed address (ShareSpec::at) whose view the caller has
    // replaced already (an mremap over it, the bytes back in private memory): the range is
    // not touched; the grants end now, or when the peer unmaps. Afterwards empty.
    void release_replaced() noexcept;
    // Takes the pages back whether or not the peer maps them (Map/Revoke's revoke of a
    // lent buffer). Never fails; afterwards this object is empty.
    RevokeEffect revoke() noexcept;

private:
    void release() noexcept;
    void swap(SharedPages& o) noexcept {
        std::swap(owner_, o.owner_);
        std::swap(addr_, o.addr_);
        refs_.swap(o.refs_);
    }

    GrantSharer* owner_ = nullptr;
    std::byte* addr_ = nullptr;
    std::vector<GrantRef> refs_;
};

struct ShareSpec {
    DomId peer = kDomIdInvalid;
    std::size_t pages = 0;
    bool writable = false;
    // nullptr: anywhere. Else a page-aligned address inside a PROT_NONE reservation the
    // caller owns (VA mirroring), or private memory of the caller's whose bytes it has
    // copied; the pages replace exactly [at, at + pages), and the range is left reserved
    // PROT_NONE when they go.
    std::byte* at = nullptr;
    // With `at`, non-null: the pages start with the bytes at [at, at + pages) as they are
    // at the moment the pages replace them, copied with this function (the view is made
    // elsewhere, then the bytes copied and the view moved over the range with nothing in
    // between), so that what the caller's own writes to the range leave while this runs
    // (its heap may lie there) is kept.
    void (*copy_bytes)(void* to, const void* from, std::size_t len) = nullptr;
    // gntalloc's unmap notification: `clear_byte_at` is an offset into the first page,
    // `port` a port of this domain. It runs when this process's mapping of the pages goes:
    // release, revoke, or the process dying (how a peer learns that its frontend died).
    UnmapNotify notify{};
};

class GrantSharer {
public:
    virtual ~GrantSharer() = default;

    // Allocates `spec.pages` zeroed pages and grants them to `spec.peer`.
    virtual Result<SharedPages> share(const ShareSpec& spec) = 0;
    // Whether end_access() sees that a peer still maps a page (and fails with EBUSY).
    // Where it cannot, it succeeds and the pages stay out of use until the peer unmaps.
    [[nodiscard]] virtual bool sees_peer_mappings() const noexcept { return true; }

protected:
    friend class SharedPages;
    virtual Result<void> end_access(std::byte* addr, std::span<const GrantRef> refs) noexcept = 0;
    // Gives up the pages whatever their state (see SharedPages).
    virtual void release(std::byte* addr, std::span<const GrantRef> refs) noexcept = 0;
    // As release(), the view at `addr` replaced by the caller already (release_replaced).
    // Sharers whose views are real mappings override it; the default suits those whose are
    // not.
    virtual void release_replaced(std::byte* addr, std::span<const GrantRef> refs) noexcept {
        release(addr, refs);
    }
    // Withdraws access by force where the platform can, then gives up the pages.
    virtual RevokeEffect revoke(std::byte* addr, std::span<const GrantRef> refs) noexcept = 0;
};

inline Result<void> SharedPages::end_access() noexcept {
    if (owner_ == nullptr) {
        return boost::outcome_v2::success();
    }
    auto ended = owner_->end_access(addr_, refs_);
    if (ended) {
        owner_->release(addr_, refs_);
        owner_ = nullptr;
        addr_ = nullptr;
        refs_.clear();
    }
    return ended;
}

inline void SharedPages::release_replaced() noexcept {
    if (owner_ != nullptr) {
        (void)owner_->end_access(addr_, refs_);  // else the grants end when the peer unmaps
        owner_->release_replaced(addr_, refs_);
    }
    owner_ = nullptr;
    addr_ = nullptr;
    refs_.clear();
}

inline RevokeEffect SharedPages::revoke() noexcept {
    RevokeEffect effect = RevokeEffect::enforced;
    if (owner_ != nullptr) {
        effect = owner_->revoke(addr_, refs_);
    }
    owner_ = nullptr;
    addr_ = nullptr;
    refs_.clear();
    return effect;
}

inline void SharedPages::release() noexcept {
    if (owner_ != nullptr) {
        owner_->release(addr_, refs_);
    }
    owner_ = nullptr;
    addr_ = nullptr;
    refs_.clear();
}

}  // namespace xenhsa::xen

#endif
