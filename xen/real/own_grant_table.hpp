// This domain's own grant table, read through privcmd (not installed, not part of the
// seam): GNTTABOP_query_size and GNTTABOP_setup_table(DOMID_SELF) (privcmd hypercall,
// arguments in a /dev/xen/hypercall buffer) give the table's frames, which are mapped
// read-only with libxenforeignmemory (DOMID_SELF: Xen refuses a domain naming itself by
// id as a foreign domain). XENMEM_acquire_resource would be simpler but Xen only grants
// it on another domain. Grant table v1 only.
//
// It cannot be read without privcmd (not root, no xen-privcmd module), in an
// unprivileged domU, including a driver domain (Linux restricts privcmd there to the
// domain it is a device model for, so the hypercall fails with EPERM; seen on Debian's
// 6.1 kernel), in an auto-translated domain (HVM/PVH, and every domain on Arm: the frames
// setup_table names are not this domain's guest frames, and mapping them would read some
// other page; seen on arm64 Xen 4.17), or with grant table v2: open() then returns nullptr.
#ifndef XENHSA_XEN_REAL_OWN_GRANT_TABLE_HPP
#define XENHSA_XEN_REAL_OWN_GRANT_TABLE_HPP

#include <memory>
#include <span>
#include <xenhsa/xen/types.hpp>

namespace xenhsa::xen::real {

class OwnGrantTable {
public:
    // nullptr when the table cannot be read here. One instance is used by one thread at
    // a time.
    static std::unique_ptr<OwnGrantTable> open() noexcept;

    OwnGrantTable(const OwnGrantTable&) = delete;
    OwnGrantTable& operator=(const OwnGrantTable&) = delete;
    ~OwnGrantTable();

    // true when a peer maps any of `refs` (GTF_reading / GTF_writing, which Xen sets
    // while a peer maps an entry); an error when the table could not be read.
    Result<bool> any_mapped(std::span<const GrantRef> refs) noexcept;
    // Entries naming `peer` that it may still use: access permitted, or still mapped
    // (gntalloc defers ending a grant the peer maps, and Xen keeps the entry's
    // GTF_reading / GTF_writing until it unmaps).
    Result<uint32_t> held_by(DomId peer) noexcept;

private:
    struct Impl;
    explicit OwnGrantTable(std::unique_ptr<Impl> impl) noexcept;
    std::unique_ptr<Impl> impl_;
};

}  // namespace xenhsa::xen::real

#endif
