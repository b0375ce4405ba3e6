// One domain's grant state in the daemon: its grant table (a memfd of Xen v1 entries the
// domain's processes may rewrite, driven by sim::GrantTable), its gfn space of shared
// segments, and which refs the daemon handed out. Mappers' pins share ownership, so the
// table outlives its domain until the last pin goes.
#ifndef XENHSA_XEN_SIM_DAEMON_GRANTER_TABLE_HPP
#define XENHSA_XEN_SIM_DAEMON_GRANTER_TABLE_HPP

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <vector>
#include <xenhsa/xen/sim/grant_table.hpp>
#include <xenhsa/xen/sim/unique_fd.hpp>
#include <xenhsa/xen/sim/wire.hpp>

namespace xenhsa::xen::sim::daemon {

inline constexpr std::size_t kPageSize = 4096;

// The pages of one share(): its own memfd, so that revoke can take them away by truncation
// and a later share never reuses them.
struct Segment {
    DomId owner = 0;
    uint64_t gfn = 0;  // first gfn in the owner's gfn space
    uint64_t pages = 0;
    UniqueFd rw;
    bool revoked = false;
    uint64_t granting_refs = 0;  // refs whose grant names this segment

    static Result<std::shared_ptr<Segment>> create(DomId owner, uint64_t gfn, uint64_t pages);
    // The memfd reopened O_RDONLY, for read-only maps (made on first use: fds are the
    // daemon's scarcest resource).
    Result<int> read_only_fd();
    // Xen's unmap notification: clears one byte of a page, unless revoked.
    void clear_byte(uint64_t page, uint32_t offset) const noexcept;
    // Takes the pages away: every mapping's next access faults (SIGBUS).
    void truncate() noexcept;

private:
    UniqueFd ro_;
};

struct Resolved {
    std::shared_ptr<Segment> segment;
    uint64_t page = 0;
};

class GranterTable {
public:
    // Refs below this are reserved, as Xen reserves them for the toolstack.
    static constexpr GrantRef kFirstRef = wire::kReservedGrantRefs;

    static Result<std::shared_ptr<GranterTable>> create(DomId owner, uint32_t entries);
    GranterTable(const GranterTable&) = delete;
    GranterTable& operator=(const GranterTable&) = delete;
    ~GranterTable();

    [[nodiscard]] DomId owner() const noexcept { return owner_; }
    [[nodiscard]] int memfd() const noexcept { return memfd_.get(); }
    [[nodiscard]] uint32_t size() const noexcept { return static_cast<uint32_t>(refs_.size()); }
    GrantTable& hypervisor() noexcept { return *table_; }

    // --- the granter's side -------------------------------------------------------------
    [[nodiscard]] std::size_t free_refs() const noexcept { return free_.size(); }
    // Refs that can be granted at all (every ref but the reserved ones).
    [[nodiscard]] uint32_t capacity() const noexcept { return size() - kFirstRef; }
    // Refs granted to `peer` that are not free again: shared, or ended but still pinned.
    [[nodiscard]] uint32_t held_by(DomId peer) const noexcept;
    // A gfn range for a new segment (gfns are never reused). ENOMEM when exhausted.
    Result<uint64_t> take_gfns(uint64_t pages) noexcept;
    // Allocates one ref per page of `segment` and grants each to `peer` (frame = gfn).
    // ENOSPC when the table is full.
    Result<std::vector<GrantRef>> grant(const std::shared_ptr<Segment>& segment, DomId peer,
                                        bool readonly);
    // Ends every grant of `refs`, or none: EBUSY while any is pinned.
    Result<void> end_access(std::span<const GrantRef> refs) noexcept;
    // Ends the grants now, or each when its last pin goes (gntalloc's deferred release).
    void release(std::span<const GrantRef> refs) noexcept;
    // Ends the grants by force now; refs still pinned are reused only once unpinned.
    void revoke(std::span<const GrantRef> refs) noexcept;
    // The domain is gone: drop every segment (mappings keep their pages alive).
    void retire() noexcept;

    // --- the mapper's side ------------------------------------------------------------------
    // The segment page behind a frame, or nothing (a hole: EFAULT for the mapper).
    [[nodiscard]] Resolved resolve(uint64_t gfn) const;
    // Drops one pin taken through hypervisor(); finishes a deferred release.
    void unpin(GrantRef ref, bool writable) noexcept;

private:
    enum class RefState : uint8_t { free, shared, draining_end, draining_revoked };
    struct Ref {
        RefState state = RefState::free;
        std::shared_ptr<Segment> segment;
        DomId peer = 0;
    };

    GranterTable() = default;
    void force_end(GrantRef ref) noexcept;
    void free_ref(GrantRef ref) noexcept;

    DomId owner_ = 0;
    UniqueFd memfd_;
    void* mem_ = nullptr;
    std::size_t len_ = 0;
    std::optional<GrantTable> table_;
    std::vector<Ref> refs_;
    std::set<GrantRef> free_;
    std::map<uint64_t, std::shared_ptr<Segment>> segments_;  // by first gfn
    uint64_t next_gfn_ = 0x1000;
};

}  // namespace xenhsa::xen::sim::daemon

#endif
