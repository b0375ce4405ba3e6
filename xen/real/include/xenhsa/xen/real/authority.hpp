// The steps of gntdev, gntalloc and evtchn that name another domain or spend what every
// backend in this domain shares: mapping grants (IOCTL_GNTDEV_MAP_GRANT_REF), having gntdev
// clear a byte and signal a port when a mapping goes (IOCTL_GNTDEV_SET_UNMAP_NOTIFY),
// granting pages (IOCTL_GNTALLOC_ALLOC_GREF), and binding and unbinding event channels
// (IOCTL_EVTCHN_BIND_INTERDOMAIN, IOCTL_EVTCHN_UNBIND). The real components do everything
// else on their own fds: mmap and munmap, dropping their own gntdev and gntalloc entries,
// reading pending ports, unmasking and notifying.
//
// By default each component does these steps itself (direct_authority over its own fd).
// A process that must not be able to do them, xenhsa-backend's worker, gives its
// components an Authority that asks a broker (backend/service/src/grant_broker.hpp): the
// broker holds the same open files, checks each request and does the ioctl.
#ifndef XENHSA_XEN_REAL_AUTHORITY_HPP
#define XENHSA_XEN_REAL_AUTHORITY_HPP

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <xenhsa/xen/platform.hpp>

namespace xenhsa::xen::real {

// The device files a platform's components opened (-1: not open, or not a real one).
struct DeviceFds {
    int gntdev = -1;
    int gntalloc = -1;
    int evtchn = -1;
};

class Authority {
public:
    virtual ~Authority() = default;
    // The offset in gntdev's file at which mmap() maps `refs` of `domid`, in order.
    virtual Result<uint64_t> map_grants(DomId domid, std::span<const GrantRef> refs) = 0;
    // When the gntdev mapping holding the byte at file offset `byte` goes: clear that
    // byte (when `clear_byte`) and signal `port` (when set), a port bound through this
    // authority.
    virtual Result<void> notify_on_unmap(uint64_t byte, bool clear_byte,
                                         std::optional<Port> port) = 0;
    // Grants refs.size() zeroed pages to `domid` (read-only unless `writable`); fills
    // `refs` and returns the offset in gntalloc's file at which mmap() maps the pages.
    virtual Result<uint64_t> grant_pages(DomId domid, bool writable, std::span<GrantRef> refs) = 0;
    virtual Result<Port> bind_interdomain(DomId remote, Port remote_port) = 0;
    virtual Result<void> unbind(Port local) = 0;
};

// The ioctls on `fds` themselves (EBADF for a device that is not open).
std::unique_ptr<Authority> direct_authority(const DeviceFds& fds);

// The devices of `platform`'s real grant mapper, grant sharer and event channel.
DeviceFds device_fds(const Platform& platform);
// From now on those components have `authority` do the steps above.
void use_authority(Platform& platform, const std::shared_ptr<Authority>& authority);

}  // namespace xenhsa::xen::real

#endif
