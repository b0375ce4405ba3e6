// In-process fakes of the grant seams. A guest's RAM is a memfd; a grant names one of its
// pages (read-only or writable). FakeGrantMapper maps granted pages from the memfd,
// honouring GrantMapSpec::at (MAP_FIXED inside the caller's reservation, PROT_NONE again on
// unmap) and read-only grants (PROT_READ); failures can be injected per grant ref.
// FakeGrantSharer backs each share with its own memfd, at ShareSpec::at or anywhere.
#ifndef XENHSA_TESTS_BACKEND_CORE_FAKE_GRANTS_HPP
#define XENHSA_TESTS_BACKEND_CORE_FAKE_GRANTS_HPP

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <vector>
#include <xenhsa/xen/grant_map.hpp>
#include <xenhsa/xen/grant_share.hpp>

#include "event_log.hpp"

namespace xenhsa::backend::core::testing {

inline constexpr xen::DomId kGuestDomId = 7;
inline constexpr std::size_t kPage = 4096;

// The guest's RAM and grant table.
class GuestMemory {
public:
    explicit GuestMemory(std::size_t pages);
    ~GuestMemory();
    GuestMemory(const GuestMemory&) = delete;
    GuestMemory& operator=(const GuestMemory&) = delete;

    [[nodiscard]] int fd() const noexcept { return fd_; }
    [[nodiscard]] std::size_t pages() const noexcept { return pages_; }
    // The guest's own view of page `index`.
    [[nodiscard]] std::byte* page(std::size_t index) const noexcept;

    xen::GrantRef grant(std::size_t page, bool writable);
    struct Grant {
        std::size_t page = 0;
        bool writable = false;
    };
    [[nodiscard]] const Grant* find(xen::GrantRef ref) const noexcept;

private:
    int fd_ = -1;
    std::size_t pages_ = 0;
    std::byte* view_ = nullptr;
    xen::GrantRef next_ = 8;  // Xen reserves the first few refs
    std::map<xen::GrantRef, Grant> grants_;
};

class FakeGrantMapper final : public xen::GrantMapper {
public:
    FakeGrantMapper(GuestMemory& guest, EventLog* log) : guest_(guest), log_(log) {}

    xen::Result<xen::GrantMapping> map(const xen::GrantMapSpec& spec,
                                       std::span<int> status = {}) override;
    xen::Result<xen::GrantMapping> map_notify(xen::DomId domid, xen::GrantRef ref, bool writable,
                                              const xen::UnmapNotify& notify) override;

    // Each of these refs fails to map with `fail_errno`.
    std::set<xen::GrantRef> fail_refs;
    int fail_errno = EINVAL;

    [[nodiscard]] std::size_t live_mappings() const noexcept { return live_.size(); }
    [[nodiscard]] std::size_t live_pages() const noexcept;
    [[nodiscard]] std::size_t maps_attempted() const noexcept { return attempts_; }

protected:
    void unmap(std::byte* addr, std::size_t pages, bool fixed) noexcept override;

private:
    GuestMemory& guest_;
    EventLog* log_;
    std::map<std::byte*, std::size_t> live_;
    std::size_t attempts_ = 0;
};

class FakeGrantSharer final : public xen::GrantSharer {
public:
    explicit FakeGrantSharer(EventLog* log) : log_(log) {}
    ~FakeGrantSharer() override;

    xen::Result<xen::SharedPages> share(const xen::ShareSpec& spec) override;

    // The next `n` shares fail with ENOMEM.
    int fail_shares = 0;
    // The n-th share from now (1: the next) fails with ENOMEM; 0: off.
    int fail_nth_share = 0;
    // end_access() fails EBUSY while the guest "maps" a page of a share.
    std::set<xen::GrantRef> guest_maps;
    xen::RevokeEffect effect = xen::RevokeEffect::cooperative;

    // Reads page `index` of the share holding `ref` (what the guest would see).
    [[nodiscard]] std::vector<std::byte> read_page(xen::GrantRef ref) const;
    [[nodiscard]] std::size_t live_shares() const noexcept { return shares_.size(); }
    [[nodiscard]] std::size_t live_pages() const noexcept;
    [[nodiscard]] xen::DomId last_peer() const noexcept { return last_peer_; }

protected:
    xen::Result<void> end_access(std::byte* addr,
                                 std::span<const xen::GrantRef> refs) noexcept override;
    void release(std::byte* addr, std::span<const xen::GrantRef> refs) noexcept override;
    xen::RevokeEffect revoke(std::byte* addr,
                             std::span<const xen::GrantRef> refs) noexcept override;

private:
    struct Share {
        int fd = -1;
        std::size_t pages = 0;
        bool fixed = false;
        std::vector<xen::GrantRef> refs;
    };
    void drop(std::byte* addr) noexcept;

    EventLog* log_;
    std::map<std::byte*, Share> shares_;
    xen::GrantRef next_ = 100000;
    xen::DomId last_peer_ = xen::kDomIdInvalid;
};

// A page's protection as /proc/self/maps reports it ("---p", "r--s", "rw-s", ...), or ""
// when nothing is mapped at `addr`.
std::string protection_at(const void* addr);

}  // namespace xenhsa::backend::core::testing

#endif
