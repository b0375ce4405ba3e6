// The hypervisor seam over Debian's libxen* libraries (real Xen).
//
// Every factory fails with the errno the library reported: ENOENT when this kernel has no
// /dev/xen/* (not running on Xen, or the xen-gntdev / xen-gntalloc / xen-evtchn modules
// are not loaded), EACCES without permission on the device nodes.
//
// Lifetimes: a GrantMapping, SharedPages or BoundPort refers to the component that made
// it, which must outlive it (as with the simulated hypervisor). ForeignMappings keep
// their library handle alive themselves.
#ifndef XENHSA_XEN_REAL_PLATFORM_HPP
#define XENHSA_XEN_REAL_PLATFORM_HPP

#include <memory>
#include <optional>
#include <string>
#include <xenhsa/xen/platform.hpp>

namespace xenhsa::xen::real {

struct RealOptions {
    // libxenforeignmemory (dom0 tooling only). When requested, failing to open it fails
    // open_real_platform(); when not, Platform::foreign stays null.
    bool want_foreign_memory = false;
    // Try libxenctrl for Domains::alive(). It needs privcmd and domctl privilege; when
    // xc_interface_open() fails (a driver domain), Domains falls back to xenstore.
    bool want_domctl = true;
    // Silence the libraries' own error logging to stderr (errors are still returned).
    bool quiet = false;
    // The grant sharer reads this domain's own grant table so that end_access() can
    // report EBUSY while a peer still maps a page; that needs privcmd, the hypercall
    // device and a foreign-memory handle for the sharer's whole life. Without it (false),
    // end_access() always succeeds and the kernel ends the grants when the peer unmaps
    // (memory-safe: the pages are never reused meanwhile), and none of those is opened.
    bool read_own_grant_table = true;
    // Restrict the handles that can be restricted to this one peer domain: the event
    // channel handle (xenevtchn_restrict: interdomain and unbound ports with that domain
    // only). libxengnttab has no such call, and xenstore is not restricted (the backend
    // writes its own directory); a process that wants fewer rights opens fewer components.
    std::optional<DomId> restrict_to;
    // Connect the stores to this socket (libxenstore's XENSTORED_PATH) and nowhere else
    // (no fallback to /dev/xen/xenbus): a xenstored, or a proxy in front of it. Empty:
    // libxenstore's choice.
    std::string store_socket;
};

// Opens every component. self() is read from xenstore ("domid") here.
Result<Platform> open_real_platform(const RealOptions& options = {});

// The components one by one (each opens its own library handle).
Result<std::unique_ptr<GrantMapper>> open_grant_mapper(const RealOptions& options = {});
Result<std::unique_ptr<GrantSharer>> open_grant_sharer(const RealOptions& options = {});
Result<std::unique_ptr<EventChannel>> open_event_channel(const RealOptions& options = {});
// xs_open(XS_UNWATCH_FILTER): xenstored's socket, else /dev/xen/xenbus.
Result<std::unique_ptr<Store>> open_store(const RealOptions& options = {});
Result<std::unique_ptr<ForeignMemory>> open_foreign_memory(const RealOptions& options = {});
// Not opened by open_real_platform(): a backend's supervisor asks for it. It holds privcmd
// and the hypercall device for its whole life, when they open; where this domain's grant
// table cannot be read (no privcmd, a driver domain, HVM/PVH, grant table v2), held_by()
// fails with ENOTSUP. share_pool_pages() is gntalloc's page limit
// (/sys/module/xen_gntalloc/parameters/limit); ENOTSUP when it cannot be read.
Result<std::unique_ptr<GrantUsage>> open_grant_usage();
// gntalloc's page limit for this whole domain, without privcmd (a guest reads its own);
// ENOTSUP when the module is not loaded or the value cannot be read.
Result<uint32_t> gntalloc_limit() noexcept;

// Domains over `store` (which it owns and uses only for itself: give it its own
// connection, not the Platform's, since a Store is not shared between threads) plus, if
// options.want_domctl and privilege allows, libxenctrl.
//   self(): the "domid" key, read relative to this domain's home, parsed strictly; a
//           missing or malformed value fails the open.
//   alive(id): libxenctrl: present and not XEN_DOMINF_dying. xenstore: /local/domain/<id>
//           readable → true, ENOENT → false. An unprivileged driver domain usually has no
//           read permission there (libxl makes it "n0 r<id>"), and xenstored then answers
//           EACCES whether or not the domain exists: alive() returns that EACCES.
Result<std::unique_ptr<Domains>> make_domains(std::unique_ptr<Store> store,
                                              const RealOptions& options = {});

}  // namespace xenhsa::xen::real

#endif
