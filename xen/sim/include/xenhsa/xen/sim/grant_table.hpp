// One simulated domain's grant table: Xen v1 entries (grant_entry_v1_t) in memory the
// granting domain shares with the hypervisor, driven by Xen's flag protocol.
//
// The granting guest writes its entries directly and may rewrite them at any moment.
// This class is the hypervisor's side: it pins an entry for a mapper by compare-and-swap
// on the (flags, domid) word exactly as Xen's _set_status_v1 does, reads the frame once
// after the pin, keeps the pin counts privately, and clears GTF_reading / GTF_writing
// atomically when the last mapper of that kind goes. end_access (what the guest does to
// withdraw a grant) fails while an entry is pinned.
#ifndef XENHSA_XEN_SIM_GRANT_TABLE_HPP
#define XENHSA_XEN_SIM_GRANT_TABLE_HPP

#include <cstddef>
#include <span>
#include <vector>
#include <xenhsa/xen/public_headers.hpp>
#include <xenhsa/xen/types.hpp>

namespace xenhsa::xen::sim {

struct GrantPin {
    GrantRef ref;
    bool writable;
};

class GrantTable {
public:
    // `entries` is the shared table; `ram_pages` bounds the frames a grant may name.
    GrantTable(DomId owner, std::span<grant_entry_v1_t> entries, uint64_t ram_pages);

    [[nodiscard]] DomId owner() const noexcept { return owner_; }
    [[nodiscard]] std::size_t size() const noexcept { return entries_.size(); }

    // --- the hypervisor, on behalf of `mapper` ---------------------------------------
    // Pins one entry; returns the granted frame. EINVAL: ref out of range; EPERM: not a
    // permit-access grant to `mapper`, or a write pin of a read-only grant; EFAULT: the
    // frame lies outside the granter's RAM; EAGAIN: the guest kept rewriting the entry.
    Result<uint64_t> pin(GrantRef ref, DomId mapper, bool writable) noexcept;
    // Pins every ref or none. `frames` receives one frame per ref; `status`, when it has
    // one slot per ref, receives 0 or each element's errno (elements after the first
    // failure are not attempted and get ECANCELED).
    Result<void> pin_batch(std::span<const GrantRef> refs, DomId mapper, bool writable,
                           std::span<uint64_t> frames, std::span<int> status) noexcept;
    // Drops one pin taken by pin(). Unpinning something not pinned is a bug: abort.
    void unpin(GrantRef ref, bool writable) noexcept;
    [[nodiscard]] uint32_t pins(GrantRef ref) const noexcept;

    // --- the granting guest, on its own table -----------------------------------------
    static void grant(grant_entry_v1_t& entry, DomId peer, uint32_t frame, bool readonly) noexcept;
    // EBUSY while the entry is pinned (GTF_reading/GTF_writing set).
    static Result<void> end_access(grant_entry_v1_t& entry) noexcept;

private:
    struct PinCount {
        uint32_t readers = 0;  // pins of any kind
        uint32_t writers = 0;
    };

    DomId owner_;
    std::span<grant_entry_v1_t> entries_;
    uint64_t ram_pages_;
    std::vector<PinCount> pins_;
};

}  // namespace xenhsa::xen::sim

#endif
