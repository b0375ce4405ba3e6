// GrantMapper over libxengnttab, plus the gntdev ioctls for mappings at a fixed address
// (which libxengnttab cannot place).
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

constexpr std::size_t kRefsOffset = offsetof(ioctl_gntdev_map_grant_ref, refs);

void fill(std::span<int> status, int value) noexcept {
    std::fill(status.begin(), status.end(), value);
}

class RealGrantMapper final : public GrantMapper {
public:
    explicit RealGrantMapper(GnttabHandle h) noexcept : h_(std::move(h)) {}

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
        // The library takes -1 for "no notification" in both fields. gntdev refuses to
        // clear a byte in a read-only mapping; say so before mapping anything.
        uint32_t offset = static_cast<uint32_t>(-1);
        evtchn_port_t port = static_cast<evtchn_port_t>(-1);
        if (notify.clear_byte_at) {
            if (*notify.clear_byte_at >= kPageSize || !writable) {
                return errno_code(EINVAL);
            }
            offset = *notify.clear_byte_at;
        }
        if (notify.port) {
            if (*notify.port == static_cast<Port>(-1)) {
                return errno_code(EINVAL);
            }
            port = *notify.port;
        }
        if (domid == kDomIdInvalid) {
            return errno_code(EINVAL);
        }
        if (!h_) {
            return errno_code(EBADF);
        }
        const int prot = PROT_READ | (writable ? PROT_WRITE : 0);
        void* p = xengnttab_map_grant_ref_notify(h_.get(), domid, ref, prot, offset, port);
        if (p == nullptr) {
            return detail::last_error();
        }
        return GrantMapping(this, static_cast<std::byte*>(p), 1, false);
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
        std::vector<uint32_t> refs;  // the library takes a non-const array
        try {
            refs.assign(spec.refs.begin(), spec.refs.end());
        } catch (const std::bad_alloc&) {
            return errno_code(ENOMEM);
        }
        const auto n = static_cast<uint32_t>(refs.size());
        void* p = xengnttab_map_domain_grant_refs(h_.get(), n, spec.domid, refs.data(), prot);
        if (p == nullptr) {
            return detail::last_error();
        }
        return GrantMapping(this, static_cast<std::byte*>(p), n, false);
    }

    // What libxengnttab does (IOCTL_GNTDEV_MAP_GRANT_REF, then mmap() at the returned
    // index), but placed at spec.at.
    Result<GrantMapping> map_fixed(const GrantMapSpec& spec, int prot) {
        const int fd = xengnttab_fd(h_.get());
        const std::size_t n = spec.refs.size();
        const std::size_t len = n * kPageSize;

        // struct ioctl_gntdev_map_grant_ref ends in a variable-size refs[] array. Built
        // and read back with memcpy: no misaligned or type-punned access.
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
            const ioctl_gntdev_grant_ref r{spec.domid, spec.refs[i]};
            std::memcpy(buf.data() + kRefsOffset + i * sizeof r, &r, sizeof r);
        }
        if (::ioctl(fd, IOCTL_GNTDEV_MAP_GRANT_REF, buf.data()) != 0) {
            return detail::last_error();  // nothing happened to the reservation
        }
        std::memcpy(&head, buf.data(), kRefsOffset);

        // MAP_FIXED is correct here ONLY because spec.at lies in a PROT_NONE reservation
        // the caller owns (GrantMapSpec's contract): it replaces part of that reservation
        // and nothing else. Without that guarantee MAP_FIXED would silently clobber
        // whatever else is mapped there.
        void* p =
            ::mmap(spec.at, len, prot, MAP_SHARED | MAP_FIXED, fd, static_cast<off_t>(head.index));
        if (p == MAP_FAILED) {
            const std::error_code err = detail::last_error();
            // A failed MAP_FIXED mmap may already have unmapped the old range (Linux
            // unmaps before calling gntdev's mmap, which is where the grants get mapped):
            // put the reservation back, then drop the entry from gntdev's table.
            rereserve(spec.at, len);
            ioctl_gntdev_unmap_grant_ref undo{};
            undo.index = head.index;
            undo.count = static_cast<uint32_t>(n);
            if (::ioctl(fd, IOCTL_GNTDEV_UNMAP_GRANT_REF, &undo) != 0) {
                fatal("gntdev: undoing IOCTL_GNTDEV_MAP_GRANT_REF", errno);
            }
            return err;
        }
        return GrantMapping(this, spec.at, n, true);
    }

    void unmap_fixed(std::byte* addr, std::size_t pages) noexcept {
        const int fd = xengnttab_fd(h_.get());
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
