// direct_authority(): the ioctls themselves, as libxengnttab, libxengntshr and
// libxenevtchn issue them on Linux.
#include <sys/ioctl.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <new>
#include <vector>
#include <xenhsa/xen/public_headers.hpp>
#include <xenhsa/xen/real/authority.hpp>

#include "authority_user.hpp"
#include "detail.hpp"

extern "C" {
#include <xen/sys/evtchn.h>
#include <xen/sys/gntalloc.h>
#include <xen/sys/gntdev.h>
}

namespace xenhsa::xen::real {

namespace {

constexpr std::size_t kRefsOffset = offsetof(ioctl_gntdev_map_grant_ref, refs);
constexpr std::size_t kGrefsOffset = offsetof(ioctl_gntalloc_alloc_gref, gref_ids);
constexpr std::size_t kMaxRefs = std::numeric_limits<uint32_t>::max() / detail::kPageSize;

class DirectAuthority final : public Authority {
public:
    explicit DirectAuthority(const DeviceFds& fds) noexcept : fds_(fds) {}

    Result<uint64_t> map_grants(DomId domid, std::span<const GrantRef> refs) override {
        const std::size_t n = refs.size();
        if (n == 0 || n > kMaxRefs || domid == kDomIdInvalid) {
            return errno_code(EINVAL);
        }
        if (fds_.gntdev < 0) {
            return errno_code(EBADF);
        }
        // The struct ends in a variable-size refs[] array: built and read back with
        // memcpy, no misaligned or type-punned access.
        std::vector<std::byte> buf;
        try {
            buf.resize(std::max(kRefsOffset + n * sizeof(ioctl_gntdev_grant_ref),
                                sizeof(ioctl_gntdev_map_grant_ref)));
        } catch (const std::bad_alloc&) {
            return errno_code(ENOMEM);
        }
        ioctl_gntdev_map_grant_ref head{};
        head.count = static_cast<uint32_t>(n);
        std::memcpy(buf.data(), &head, kRefsOffset);
        for (std::size_t i = 0; i < n; ++i) {
            const ioctl_gntdev_grant_ref r{domid, refs[i]};
            std::memcpy(buf.data() + kRefsOffset + i * sizeof r, &r, sizeof r);
        }
        if (::ioctl(fds_.gntdev, IOCTL_GNTDEV_MAP_GRANT_REF, buf.data()) != 0) {
            return detail::last_error();
        }
        std::memcpy(&head, buf.data(), kRefsOffset);
        return uint64_t{head.index};
    }

    Result<void> notify_on_unmap(uint64_t byte, bool clear_byte,
                                 std::optional<Port> port) override {
        if (fds_.gntdev < 0) {
            return errno_code(EBADF);
        }
        ioctl_gntdev_unmap_notify notify{};
        notify.index = byte;
        notify.action =
            (clear_byte ? UNMAP_NOTIFY_CLEAR_BYTE : 0U) | (port ? UNMAP_NOTIFY_SEND_EVENT : 0U);
        notify.event_channel_port = port.value_or(0);
        if (::ioctl(fds_.gntdev, IOCTL_GNTDEV_SET_UNMAP_NOTIFY, &notify) != 0) {
            return detail::last_error();
        }
        return boost::outcome_v2::success();
    }

    Result<uint64_t> grant_pages(DomId domid, bool writable, std::span<GrantRef> refs) override {
        const std::size_t n = refs.size();
        if (n == 0 || n > kMaxRefs || domid == kDomIdInvalid) {
            return errno_code(EINVAL);
        }
        if (fds_.gntalloc < 0) {
            return errno_code(EBADF);
        }
        std::vector<std::byte> buf;
        try {
            buf.resize(
                std::max(kGrefsOffset + n * sizeof(uint32_t), sizeof(ioctl_gntalloc_alloc_gref)));
        } catch (const std::bad_alloc&) {
            return errno_code(ENOMEM);
        }
        ioctl_gntalloc_alloc_gref head{};
        head.domid = domid;
        head.flags = writable ? GNTALLOC_FLAG_WRITABLE : 0;
        head.count = static_cast<uint32_t>(n);
        std::memcpy(buf.data(), &head, kGrefsOffset);
        if (::ioctl(fds_.gntalloc, IOCTL_GNTALLOC_ALLOC_GREF, buf.data()) != 0) {
            return detail::last_error();
        }
        std::memcpy(&head, buf.data(), kGrefsOffset);
        std::memcpy(refs.data(), buf.data() + kGrefsOffset, n * sizeof(uint32_t));
        return uint64_t{head.index};
    }

    Result<Port> bind_interdomain(DomId remote, Port remote_port) override {
        if (remote == kDomIdInvalid) {
            return errno_code(EINVAL);
        }
        if (fds_.evtchn < 0) {
            return errno_code(EBADF);
        }
        ioctl_evtchn_bind_interdomain bind{};
        bind.remote_domain = remote;
        bind.remote_port = remote_port;
        const int port = ::ioctl(fds_.evtchn, IOCTL_EVTCHN_BIND_INTERDOMAIN, &bind);
        if (port < 0) {
            return detail::last_error();
        }
        return static_cast<Port>(port);
    }

    Result<void> unbind(Port local) override {
        if (fds_.evtchn < 0) {
            return errno_code(EBADF);
        }
        ioctl_evtchn_unbind op{};
        op.port = local;
        if (::ioctl(fds_.evtchn, IOCTL_EVTCHN_UNBIND, &op) != 0) {
            return detail::last_error();
        }
        return boost::outcome_v2::success();
    }

private:
    DeviceFds fds_;
};

}  // namespace

std::unique_ptr<Authority> direct_authority(const DeviceFds& fds) {
    return std::make_unique<DirectAuthority>(fds);
}

DeviceFds device_fds(const Platform& platform) {
    DeviceFds fds;
    if (auto* u = dynamic_cast<const detail::AuthorityUser*>(platform.grants.get())) {
        fds.gntdev = u->device_fd();
    }
    if (auto* u = dynamic_cast<const detail::AuthorityUser*>(platform.sharer.get())) {
        fds.gntalloc = u->device_fd();
    }
    if (auto* u = dynamic_cast<const detail::AuthorityUser*>(platform.events.get())) {
        fds.evtchn = u->device_fd();
    }
    return fds;
}

void use_authority(Platform& platform, const std::shared_ptr<Authority>& authority) {
    for (auto* u : {dynamic_cast<detail::AuthorityUser*>(platform.grants.get()),
                    dynamic_cast<detail::AuthorityUser*>(platform.sharer.get()),
                    dynamic_cast<detail::AuthorityUser*>(platform.events.get())}) {
        if (u != nullptr) {
            u->use(authority);
        }
    }
}

}  // namespace xenhsa::xen::real
