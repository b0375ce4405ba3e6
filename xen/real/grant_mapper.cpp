// GrantMapper over gntdev: its authority maps the grants (IOCTL_GNTDEV_MAP_GRANT_REF,
// authority.hpp), this mmap()s them where asked (anywhere, or at a fixed address, which
// libxengnttab cannot place) and unmaps them as libxengnttab does.
//
// Per-element status: libxengnttab and gntdev report one errno for the whole batch (the
// hypervisor's per-grant GNTST_* codes do not reach user space), so on failure every
// status slot gets that errno and on success every slot gets 0. Per-element codes exist
// only on the simulated hypervisor.
#include <sys/ioctl.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <new>
#include <vector>
#include <xenhsa/xen/real/platform.hpp>
#include <xenhsa/xen/real/testing.hpp>
#include <xenhsa/xen/reservation.hpp>

#include "authority_user.hpp"
#include "detail.hpp"

extern "C" {
#include <xen/sys/gntdev.h>
#include <xengnttab.h>
}

namespace xenhsa::xen::real {

namespace {

using detail::kPageSize;

struct GnttabClose {
    void operator()(xengnttab_handle* h) const noexcept { xengnttab_close(h); }
};
using GnttabHandle = std::unique_ptr<xengnttab_handle, GnttabClose>;

void fill(std::span<int> status, int value) noexcept {
    std::fill(status.begin(), status.end(), value);
}

class RealGrantMapper final : public GrantMapper, public detail::AuthorityUser {
public:
    explicit RealGrantMapper(GnttabHandle h) : h_(std::move(h)) {
        if (h_) {
            authority_ = direct_authority({.gntdev = device_fd()});
        }
    }

    [[nodiscard]] int device_fd() const noexcept override {
        return h_ ? xengnttab_fd(h_.get()) : -1;
    }

    Result<GrantMapping> map(const GrantMapSpec& spec, std::span<int> status) override {
        // Checked before the library: xengnttab_map_domain_grant_refs() underflows on a
        // count of 0 (Linux osdep), and the C API takes 32-bit counts.
        const std::size_t n = spec.refs.size();
        if (n == 0 || (!status.empty() && status.size() != n)) {
            return errno_code(EINVAL);
        }
        if (auto valid = check(spec); !valid) {
            fill(status, valid.error().value());
            return valid.error();
        }
        if (!h_) {
            fill(status, EBADF);
            return errno_code(EBADF);
        }
        const int prot = PROT_READ | (spec.writable ? PROT_WRITE : 0);
        auto mapped = spec.at != nullptr ? map_fixed(spec, prot) : map_anywhere(spec, prot);
        fill(status, mapped ? 0 : mapped.error().value());
        return mapped;
    }

    Result<GrantMapping> map_notify(DomId domid, GrantRef ref, bool writable,
                                    const UnmapNotify& notify) override {
        // gntdev refuses to clear a byte in a read-only mapping; say so before mapping
        // anything. Port -1 is the C API's "none".
        if (notify.clear_byte_at && (*notify.clear_byte_at >= kPageSize || !writable)) {
            return errno_code(EINVAL);
        }
        if (notify.port && *notify.port == static_cast<Port>(-1)) {
            return errno_code(EINVAL);
        }
        if (domid == kDomIdInvalid) {
            return errno_code(EINVAL);
        }
        if (!h_) {
            return errno_code(EBADF);
        }
        // As libxengnttab: map, mmap, then ask for the notification.
        const int prot = PROT_READ | (writable ? PROT_WRITE : 0);
        auto mapped = map_at(nullptr, domid, std::span(&ref, 1), prot);
        if (!mapped) {
            return mapped.error();
        }
        if (notify.clear_byte_at || notify.port) {
            auto asked = authority_->notify_on_unmap(
                mapped.value().offset + notify.clear_byte_at.value_or(0),
                notify.clear_byte_at.has_value(), notify.port);
            if (!asked) {
                unmap(mapped.value().addr, 1, false);
                return asked.error();
            }
        }
        return GrantMapping(this, mapped.value().addr, 1, false);
    }

protected:
    void unmap(std::byte* addr, std::size_t pages, bool fixed) noexcept override {
        if (fixed) {
            unmap_fixed(addr, pages);
            return;
        }
        if (xengnttab_unmap(h_.get(), addr, static_cast<uint32_t>(pages)) != 0) {
            fatal("xengnttab_unmap", errno);
        }
    }

private:
    static Result<void> check(const GrantMapSpec& spec) noexcept {
        const std::size_t n = spec.refs.size();
        if (n > std::numeric_limits<uint32_t>::max() / kPageSize || spec.domid == kDomIdInvalid) {
            return errno_code(EINVAL);
        }
        if (spec.at != nullptr) {
            const auto at = reinterpret_cast<uintptr_t>(spec.at);
            if (at % kPageSize != 0 || at > std::numeric_limits<uintptr_t>::max() - n * kPageSize) {
                return errno_code(EINVAL);
            }
        }
        return boost::outcome_v2::success();
    }

    Result<GrantMapping> map_anywhere(const GrantMapSpec& spec, int prot) {
        auto mapped = map_at(nullptr, spec.domid, spec.refs, prot);
        if (!mapped) {
            return mapped.error();
        }
        return GrantMapping(this, mapped.value().addr, spec.refs.size(), false);
    }

    Result<GrantMapping> map_fixed(const GrantMapSpec& spec, int prot) {
        auto mapped = map_at(spec.at, spec.domid, spec.refs, prot);
        if (!mapped) {
            return mapped.error();
        }
        return GrantMapping(this, spec.at, spec.refs.size(), true);
    }

    struct Mapped {
        std::byte* addr;
        uint64_t offset;  // in gntdev's file
    };

    // What libxengnttab does (IOCTL_GNTDEV_MAP_GRANT_REF, then mmap() at the returned
    // offset), with the first step by the authority and the mapping placed at `at` when
    // given.
    Result<Mapped> map_at(std::byte* at, DomId domid, std::span<const GrantRef> refs, int prot) {
        const int fd = device_fd();
        const std::size_t n = refs.size();
        const std::size_t len = n * kPageSize;
        auto offset = authority_->map_grants(domid, refs);
        if (!offset) {
            return offset.error();  // nothing happened to the reservation
        }
        // MAP_FIXED is correct here ONLY because `at` lies in a PROT_NONE reservation the
        // caller owns (GrantMapSpec's contract): it replaces part of that reservation and
        // nothing else. Without that guarantee MAP_FIXED would silently clobber whatever
        // else is mapped there.
        void* p = ::mmap(at, len, prot, MAP_SHARED | (at != nullptr ? MAP_FIXED : 0), fd,
                         static_cast<off_t>(offset.value()));
        if (p == MAP_FAILED) {
            const std::error_code err = detail::last_error();
            // A failed MAP_FIXED mmap may already have unmapped the old range (Linux
            // unmaps before calling gntdev's mmap, which is where the grants get mapped):
            // put the reservation back, then drop the entry from gntdev's table.
            if (at != nullptr) {
                rereserve(at, len);
            }
            ioctl_gntdev_unmap_grant_ref undo{};
            undo.index = offset.value();
            undo.count = static_cast<uint32_t>(n);
            if (::ioctl(fd, IOCTL_GNTDEV_UNMAP_GRANT_REF, &undo) != 0) {
                fatal("gntdev: undoing IOCTL_GNTDEV_MAP_GRANT_REF", errno);
            }
            return err;
        }
        return Mapped{static_cast<std::byte*>(p), offset.value()};
    }

    void unmap_fixed(std::byte* addr, std::size_t pages) noexcept {
        const int fd = device_fd();
        // gntdev tells us the index of the mapping at addr, so map_fixed keeps no state
        // (and unmap needs no allocation or lock).
        ioctl_gntdev_get_offset_for_vaddr where{};
        where.vaddr = reinterpret_cast<uintptr_t>(addr);
        if (::ioctl(fd, IOCTL_GNTDEV_GET_OFFSET_FOR_VADDR, &where) != 0) {
            fatal("gntdev: IOCTL_GNTDEV_GET_OFFSET_FOR_VADDR", errno);
        }
        if (where.count != pages) {
            fatal("gntdev: fixed grant mapping has an unexpected page count", EINVAL);
        }
        // Replacing the gntdev mapping with PROT_NONE unmaps the grants (gntdev's
        // vma close) and leaves the caller's reservation without a hole.
        rereserve(addr, pages * kPageSize);
        ioctl_gntdev_unmap_grant_ref op{};
        op.index = where.offset;
        op.count = where.count;
        if (::ioctl(fd, IOCTL_GNTDEV_UNMAP_GRANT_REF, &op) != 0) {
            fatal("gntdev: IOCTL_GNTDEV_UNMAP_GRANT_REF", errno);
        }
    }

    GnttabHandle h_;
};

}  // namespace

Result<std::unique_ptr<GrantMapper>> open_grant_mapper(const RealOptions& options) {
    errno = 0;
    GnttabHandle h(xengnttab_open(detail::library_logger(options.quiet), 0));
    if (!h) {
        return detail::last_error();
    }
    return std::unique_ptr<GrantMapper>(std::make_unique<RealGrantMapper>(std::move(h)));
}

namespace testing {

std::unique_ptr<GrantMapper> detached_grant_mapper() {
    return std::make_unique<RealGrantMapper>(GnttabHandle{});
}

}  // namespace testing

}  // namespace xenhsa::xen::real
