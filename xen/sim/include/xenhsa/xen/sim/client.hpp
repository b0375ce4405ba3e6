// The client side of xenhsa-sim, the embedded simulated hypervisor: toolstack calls, and
// attach(), which returns the hypervisor seam (xenhsa::xen interfaces) for one domain.
//
// The daemon (`xenhsa-sim --sim-dir DIR`) plays hypervisor, toolstack and xenstored for
// domains that are ordinary processes connected to DIR/xenhsa-sim.sock. What it provides
// behind the seam:
// * Grants: every GrantSharer::share() is its own memfd segment in the owner's gfn space,
//   granted through Xen v1 entries in the owner's grant table (a per-domain memfd, driven
//   by Xen's flag protocol; the guest may rewrite it at any time). GrantMapper::map pins
//   in the daemon, all or nothing with per-element errnos, then maps the granter's
//   segment pages (through a read-only fd for read-only maps: writing faults). When the
//   mapping process dies the daemon unpins and performs the unmap notification.
//   SharedPages::end_access fails EBUSY while mapped; revoke() truncates the segment, so
//   the peer's next access gets SIGBUS (RevokeEffect::enforced).
// * Event channels: ports per domain; notify() writes to the peer directly (no daemon
//   round trip); fd() is an epoll fd, readable while an event may be pending. A delivered
//   port stays masked until unmask().
// * Store: one sim::StoreTree (xenstored semantics, permissions, quotas, transactions,
//   watches, @releaseDomain). fd() is readable while watch events may be queued.
//   Relative paths are relative to /local/domain/<self>.
// * Domains::alive(); ForeignMemory for dom0 (maps a domain's gfns, i.e. its segments).
//
// Lifetimes: a GrantMapping, SharedPages or BoundPort refers to the component that made
// it, which must outlive it. A component is used by one thread at a time.
//
// Processes: any number of processes may attach to one domain. A guest domain (domid != 0)
// dies, and @releaseDomain fires, when its last attached connection closes (its last
// process exits or dies), or on destroy_domain(), which also SIGKILLs the processes
// attached to it, except processes that are also attached to dom0 (the simulated
// hypervisor cannot kill dom0) and the caller. So a test plays a guest in a forked child.
#ifndef XENHSA_XEN_SIM_CLIENT_HPP
#define XENHSA_XEN_SIM_CLIENT_HPP

#include <cstddef>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>
#include <xenhsa/xen/platform.hpp>
#include <xenhsa/xen/public_headers.hpp>
#include <xenhsa/xen/types.hpp>

namespace xenhsa::xen::sim {

inline constexpr std::string_view kSocketName = "xenhsa-sim.sock";  // in the sim dir

struct DomainInfo {
    DomId domid;
    std::string name;
    bool alive;
    // What the domain's processes hold in the hypervisor now (leak checks).
    uint32_t mapped_pages = 0;  // grant pages they map
    uint32_t shared_pages = 0;  // pages of their live shares
    uint32_t bound_ports = 0;   // event channels they have bound
};

// --- toolstack calls (any process) ---------------------------------------------------------
// Domain 0 always exists (created by the daemon at start, privileged, never dies).
// create_domain: `name` is 1..64 of [A-Za-z0-9_.-] and unique (EEXIST); `ram_pages` (>= 1)
// bounds the pages of the domain's shared segments (share() fails ENOMEM beyond it). Like
// xl, it introduces the domain to the store: /local/domain/<id> owned by the domain, with
// "name" and "domid" readable by it.
Result<DomId> create_domain(const std::filesystem::path& dir, std::string_view name,
                            std::size_t ram_pages);
// SIGKILLs the domain's processes (see above). ESRCH: no such domain; EINVAL: dom0.
Result<void> destroy_domain(const std::filesystem::path& dir, DomId domid);
Result<std::vector<DomainInfo>> list_domains(const std::filesystem::path& dir);

// Attaches the calling process to an existing domain (ESRCH otherwise) and returns the
// seam bundle: grants, sharer, events, store, domains; foreign for dom0 only. Each
// component has its own connection to the daemon.
Result<Platform> attach(const std::filesystem::path& dir, DomId domid);
// attach(dir, 0) for a backend's worker: every connection may act for guest `acting_for`
// only, as Xen's xenevtchn_restrict does for event channels, for good. The daemon refuses
// with EPERM a grant map of another domain's refs, a share or an event channel with
// another domain, foreign memory (the bundle has none) and the domain list, a liveness
// query of another guest, and with EACCES any store path outside the guest's frontend
// directories (/local/domain/<guest>/device/xenhsa) and dom0's backend directories for
// it (/local/domain/0/backend/xenhsa/<guest>); watches on @-paths stay allowed.
Result<Platform> attach_acting_for(const std::filesystem::path& dir, DomId domid, DomId acting_for);

// The grant usage of `domid`'s own table (Platform::usage, which attach() leaves null:
// a backend's supervisor asks for it). held_by(peer): refs the domain granted to `peer`
// that are not free again, shares still live and refs ended or revoked but still mapped
// by the peer alike; share_pool_pages(): the refs the domain can grant at all. Another
// connection attached to `domid`.
Result<std::unique_ptr<GrantUsage>> open_grant_usage(const std::filesystem::path& dir, DomId domid);

// --- for tests that play a hostile guest -------------------------------------------------
// A domain's own grant table, mapped read-write as the guest sees it: Xen v1 entries the
// daemon wrote for its shares, which the test may rewrite at any moment. Asked through a
// toolstack connection: it does not attach the caller to the domain.
class GrantTableView {
public:
    GrantTableView() noexcept = default;
    GrantTableView(grant_entry_v1_t* entries, std::size_t count) noexcept
        : entries_(entries), count_(count) {}
    GrantTableView(GrantTableView&& o) noexcept { swap(o); }
    GrantTableView& operator=(GrantTableView&& o) noexcept {
        GrantTableView(std::move(o)).swap(*this);
        return *this;
    }
    GrantTableView(const GrantTableView&) = delete;
    GrantTableView& operator=(const GrantTableView&) = delete;
    ~GrantTableView();

    [[nodiscard]] std::span<grant_entry_v1_t> entries() const noexcept {
        return {entries_, count_};
    }

private:
    void swap(GrantTableView& o) noexcept {
        std::swap(entries_, o.entries_);
        std::swap(count_, o.count_);
    }
    grant_entry_v1_t* entries_ = nullptr;
    std::size_t count_ = 0;
};

Result<GrantTableView> map_grant_table(const std::filesystem::path& dir, DomId domid);

}  // namespace xenhsa::xen::sim

#endif
