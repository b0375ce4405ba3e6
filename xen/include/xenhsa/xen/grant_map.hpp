// Grant mapping, the consumer side (libxengnttab / gntdev on Xen).
#ifndef XENHSA_XEN_GRANT_MAP_HPP
#define XENHSA_XEN_GRANT_MAP_HPP

#include <cstddef>
#include <optional>
#include <span>
#include <xenhsa/xen/types.hpp>

namespace xenhsa::xen {

class GrantMapper;

// One contiguous mapping of a batch of grant refs. Unmaps itself when destroyed; unmap
// never fails (a failure to unmap is a bug: the implementation logs and aborts).
class GrantMapping {
public:
    GrantMapping() noexcept = default;
    GrantMapping(GrantMapper* owner, std::byte* addr, std::size_t pages, bool fixed) noexcept
        : owner_(owner), addr_(addr), pages_(pages), fixed_(fixed) {}
    GrantMapping(GrantMapping&& other) noexcept { swap(other); }
    GrantMapping& operator=(GrantMapping&& other) noexcept {
        GrantMapping(std::move(other)).swap(*this);
        return *this;
    }
    GrantMapping(const GrantMapping&) = delete;
    GrantMapping& operator=(const GrantMapping&) = delete;
    ~GrantMapping() { reset(); }

    [[nodiscard]] std::byte* data() const noexcept { return addr_; }
    [[nodiscard]] std::size_t pages() const noexcept { return pages_; }
    [[nodiscard]] std::size_t size() const noexcept { return pages_ * kPageSize; }
    [[nodiscard]] std::span<std::byte> bytes() const noexcept { return {addr_, size()}; }
    explicit operator bool() const noexcept { return addr_ != nullptr; }

    // Unmaps now. A mapping made at a fixed address leaves that range reserved
    // (PROT_NONE), so the caller's VA reservation stays intact.
    void reset() noexcept;

    static constexpr std::size_t kPageSize = 4096;

private:
    void swap(GrantMapping& o) noexcept {
        std::swap(owner_, o.owner_);
        std::swap(addr_, o.addr_);
        std::swap(pages_, o.pages_);
        std::swap(fixed_, o.fixed_);
    }

    GrantMapper* owner_ = nullptr;
    std::byte* addr_ = nullptr;
    std::size_t pages_ = 0;
    bool fixed_ = false;
};

struct GrantMapSpec {
    DomId domid = kDomIdInvalid;
    std::span<const GrantRef> refs;
    bool writable = false;
    // nullptr: anywhere. Else a page-aligned address inside a PROT_NONE reservation the
    // caller owns, or private memory of the caller's whose bytes it has copied; the
    // mapping replaces exactly [at, at + refs.size() pages).
    std::byte* at = nullptr;
};

class GrantMapper {
public:
    virtual ~GrantMapper() = default;

    // Maps every ref or none: on failure nothing stays mapped. When `status` has one entry
    // per ref, each gets 0 or the errno of that element (the first failure and every
    // element not attempted get their own code; elements undone get 0).
    virtual Result<GrantMapping> map(const GrantMapSpec& spec, std::span<int> status = {}) = 0;

    // One page with an unmap notification (for a ring page).
    virtual Result<GrantMapping> map_notify(DomId domid, GrantRef ref, bool writable,
                                            const UnmapNotify& notify) = 0;

protected:
    friend class GrantMapping;
    virtual void unmap(std::byte* addr, std::size_t pages, bool fixed) noexcept = 0;
};

inline void GrantMapping::reset() noexcept {
    if (owner_ != nullptr && addr_ != nullptr) {
        owner_->unmap(addr_, pages_, fixed_);
    }
    owner_ = nullptr;
    addr_ = nullptr;
    pages_ = 0;
    fixed_ = false;
}

}  // namespace xenhsa::xen

#endif
