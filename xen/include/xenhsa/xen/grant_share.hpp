// Grant sharing, the producer side (libxengntshr / gntalloc on Xen): pages this domain
// owns, granted to one peer domain.
#ifndef XENHSA_XEN_GRANT_SHARE_HPP
#define XENHSA_XEN_GRANT_SHARE_HPP

#include <xenhsa/xen/types.hpp>

#include <cstddef>
#include <span>
#include <vector>

namespace xenhsa::xen {

class GrantSharer;

// Pages granted to a peer. end_access() withdraws the grants; as in Xen it fails with
// EBUSY while the peer still has a page mapped, and may be retried. Destroying a
// SharedPages that could not end access leaves the pages to the hypervisor, which frees
// them when the peer unmaps (gntalloc's rule); the memory is never reused meanwhile.
class SharedPages {
public:
    SharedPages() noexcept = default;
    SharedPages(GrantSharer *owner, std::byte *addr, std::vector<GrantRef> refs) noexcept
        : owner_(owner), addr_(addr), refs_(std::move(refs)) {}
    SharedPages(SharedPages &&other) noexcept { swap(other); }
    SharedPages &operator=(SharedPages &&other) noexcept
    {
        SharedPages(std::move(other)).swap(*this);
        return *this;
    }
    SharedPages(const SharedPages &) = delete;
    SharedPages &operator=(const SharedPages &) = delete;
    ~SharedPages() { release(); }

    [[nodiscard]] std::byte *data() const noexcept { return addr_; }
    [[nodiscard]] std::span<const GrantRef> refs() const noexcept { return refs_; }
    [[nodiscard]] std::size_t pages() const noexcept { return refs_.size(); }

    // Withdraws every grant, or none (EBUSY while the peer maps any page).
    Result<void> end_access() noexcept;

private:
    void release() noexcept;
    void swap(SharedPages &o) noexcept
    {
        std::swap(owner_, o.owner_);
        std::swap(addr_, o.addr_);
        refs_.swap(o.refs_);
    }

    GrantSharer *owner_ = nullptr;
    std::byte *addr_ = nullptr;
    std::vector<GrantRef> refs_;
};

class GrantSharer {
public:
    virtual ~GrantSharer() = default;

    // Allocates `pages` zeroed pages and grants them to `peer`.
    virtual Result<SharedPages> share(DomId peer, std::size_t pages, bool writable) = 0;

protected:
    friend class SharedPages;
    virtual Result<void> end_access(std::byte *addr, std::span<const GrantRef> refs) noexcept = 0;
    // Gives up the pages whatever their state (see SharedPages).
    virtual void release(std::byte *addr, std::span<const GrantRef> refs) noexcept = 0;
};

inline Result<void> SharedPages::end_access() noexcept
{
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

inline void SharedPages::release() noexcept
{
    if (owner_ != nullptr) {
        owner_->release(addr_, refs_);
    }
    owner_ = nullptr;
    addr_ = nullptr;
    refs_.clear();
}

}  // namespace xenhsa::xen

#endif
