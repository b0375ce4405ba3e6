// GrantSharer over libxengntshr and the gntalloc ioctls (Linux).
//
// Sharing: what libxengntshr does (IOCTL_GNTALLOC_ALLOC_GREF, by the authority:
// authority.hpp; mmap() at the returned index, then IOCTL_GNTALLOC_DEALLOC_GREF so that
// the unmap frees the grants), anywhere or, at a fixed address (ShareSpec::at), with the
// mmap() placed MAP_FIXED inside the caller's PROT_NONE reservation; release puts
// PROT_NONE back there.
//
// end_access() and EBUSY. gntalloc cannot tell whether the peer still maps a page, and
// ending access is done by the kernel when the pages are unmapped (deferred while the
// peer maps them: the memory is never reused meanwhile). So the in-use state is read from
// this domain's own grant table (own_grant_table.hpp): each entry's GTF_reading /
// GTF_writing, which Xen sets while a peer maps it, decides EBUSY.
//
// Limits, where the platform cannot do better:
// * The check and the unmap that ends the grants are not atomic: a peer that maps a page
//   between the two keeps it (the kernel defers ending access until it unmaps). That is
//   memory-safe, and end_access() is used after the peer was asked to unmap.
// * Where the table is not read, end_access() always succeeds, as gntalloc alone would:
//   when the caller opts out (RealOptions::read_own_grant_table: xenhsa-backend's
//   workers, which must hold no privcmd), or where it cannot be read
//   (own_grant_table.hpp: no privcmd, a driver domain, HVM/PVH, grant table v2).
// * revoke() is cooperative on Xen 4.17 (no forced revoke of a grant): the pages are
//   scrubbed, the grants end when the peer unmaps.
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <new>
#include <set>
#include <vector>
#include <xenhsa/xen/public_headers.hpp>
#include <xenhsa/xen/real/platform.hpp>
#include <xenhsa/xen/real/testing.hpp>
#include <xenhsa/xen/reservation.hpp>

#include "authority_user.hpp"
#include "detail.hpp"
#include "own_grant_table.hpp"

extern "C" {
#include <xen/sys/gntalloc.h>
#include <xengnttab.h>
}

namespace xenhsa::xen::real {

namespace {

using detail::kPageSize;

struct GntshrClose {
    void operator()(xengntshr_handle* h) const noexcept { xengntshr_close(h); }
};
using GntshrHandle = std::unique_ptr<xengntshr_handle, GntshrClose>;

class RealGrantSharer final : public GrantSharer, public detail::AuthorityUser {
public:
    RealGrantSharer(GntshrHandle h, std::unique_ptr<OwnGrantTable> table)
        : h_(std::move(h)), table_(std::move(table)) {
        if (h_) {
            authority_ = direct_authority({.gntalloc = device_fd()});
        }
    }

    [[nodiscard]] int device_fd() const noexcept override {
        return h_ ? xengntshr_fd(h_.get()) : -1;
    }

    [[nodiscard]] bool sees_peer_mappings() const noexcept override { return table_ != nullptr; }

    Result<SharedPages> share(const ShareSpec& spec) override {
        const std::size_t pages = spec.pages;
        // The C API counts pages in an int (and unshares with a uint32_t).
        if (pages == 0 ||
            pages > static_cast<std::size_t>(std::numeric_limits<int>::max()) / kPageSize ||
            spec.peer == kDomIdInvalid) {
            return errno_code(EINVAL);
        }
        if (spec.at != nullptr) {
            const auto at = reinterpret_cast<uintptr_t>(spec.at);
            if (at % kPageSize != 0 ||
                at > std::numeric_limits<uintptr_t>::max() - pages * kPageSize) {
                return errno_code(EINVAL);
            }
        }
        if (!h_) {
            return errno_code(EBADF);
        }
        std::vector<GrantRef> refs;
        try {
            refs.resize(pages);
        } catch (const std::bad_alloc&) {
            return errno_code(ENOMEM);
        }
        return share_at(spec, std::move(refs));
    }

protected:
    Result<void> end_access(std::byte* /*addr*/, std::span<const GrantRef> refs) noexcept override {
        if (!table_) {
            return boost::outcome_v2::success();  // cannot tell: see the top of this file
        }
        auto mapped = table_->any_mapped(refs);
        if (mapped && mapped.value()) {
            return errno_code(EBUSY);
        }
        return boost::outcome_v2::success();  // not mapped, or cannot tell
    }

    void release(std::byte* addr, std::span<const GrantRef> refs) noexcept override {
        const std::size_t len = refs.size() * kPageSize;
        if (auto it = fixed_.find(addr); it != fixed_.end()) {
            fixed_.erase(it);
            // Replacing the gntalloc mapping unmaps it; the grants were already handed to
            // the kernel (DEALLOC at share time), which ends them now or, while the peer
            // maps a page, when it unmaps.
            rereserve(addr, len);
            return;
        }
        if (xengntshr_unshare(h_.get(), addr, static_cast<uint32_t>(refs.size())) != 0) {
            fatal("xengntshr_unshare", errno);
        }
    }

    // The caller replaced the view: gntalloc ended (or will end) the grants as it went.
    void release_replaced(std::byte* addr, std::span<const GrantRef> refs) noexcept override {
        if (auto it = fixed_.find(addr); it != fixed_.end()) {
            fixed_.erase(it);
            return;
        }
        release(addr, refs);  // not a fixed view: nothing of the caller's replaced it
    }

    // Xen 4.17 cannot take a grant back from a peer that maps it: scrub the pages so the
    // peer sees zeros from now on, then unshare; gntalloc keeps the pages out of use
    // until the peer unmaps.
    RevokeEffect revoke(std::byte* addr, std::span<const GrantRef> refs) noexcept override {
        std::memset(addr, 0, refs.size() * kPageSize);
        release(addr, refs);
        return RevokeEffect::cooperative;
    }

private:
    Result<SharedPages> share_at(const ShareSpec& spec, std::vector<GrantRef> refs) {
        const int fd = device_fd();
        const std::size_t n = refs.size();
        const std::size_t len = n * kPageSize;
        try {
            if (spec.at != nullptr) {
                fixed_.insert(spec.at);  // before mapping: nothing can throw afterwards
            }
        } catch (const std::bad_alloc&) {
            return errno_code(ENOMEM);
        }
        // gntalloc hands out zeroed pages.
        auto index = authority_->grant_pages(spec.peer, spec.writable, refs);
        if (!index) {
            fixed_.erase(spec.at);
            return index.error();  // nothing happened to the reservation
        }
        // With copy_bytes the view is made elsewhere and moved over spec.at last.
        const bool moved = spec.at != nullptr && spec.copy_bytes != nullptr;
        std::byte* const first_at = moved ? nullptr : spec.at;
        // MAP_FIXED is correct ONLY because spec.at lies in a PROT_NONE reservation the
        // caller owns (ShareSpec's contract): it replaces part of it and nothing else.
        void* p = ::mmap(first_at, len, PROT_READ | PROT_WRITE,
                         MAP_SHARED | (first_at != nullptr ? MAP_FIXED : 0), fd,
                         static_cast<off_t>(index.value()));
        std::error_code map_err = p == MAP_FAILED ? detail::last_error() : std::error_code{};
        if (p == MAP_FAILED && first_at != nullptr) {
            rereserve(first_at, len);  // a failed MAP_FIXED may already have unmapped the range
        }
        // The notification belongs to the grefs, so it is set while they are still ours
        // (before the dealloc below); the kernel runs it when the mapping goes.
        if (!map_err && (spec.notify.clear_byte_at || spec.notify.port)) {
            ioctl_gntalloc_unmap_notify notify{};
            notify.index = index.value() + spec.notify.clear_byte_at.value_or(0);
            notify.action = (spec.notify.clear_byte_at ? UNMAP_NOTIFY_CLEAR_BYTE : 0) |
                            (spec.notify.port ? UNMAP_NOTIFY_SEND_EVENT : 0);
            notify.event_channel_port = spec.notify.port.value_or(0);
            if (spec.notify.clear_byte_at.value_or(0) >= kPageSize ||
                ::ioctl(fd, IOCTL_GNTALLOC_SET_UNMAP_NOTIFY, &notify) != 0) {
                map_err = spec.notify.clear_byte_at.value_or(0) >= kPageSize ? errno_code(EINVAL)
                                                                             : detail::last_error();
                ::munmap(p, len);
                if (first_at != nullptr) {
                    rereserve(first_at, len);
                }
            }
        }
        // As libxengntshr: hand the grants to the kernel now, so that unmapping frees them
        // (or, unmapped already, frees them here).
        ioctl_gntalloc_dealloc_gref dealloc{};
        dealloc.index = index.value();
        dealloc.count = static_cast<uint32_t>(n);
        if (::ioctl(fd, IOCTL_GNTALLOC_DEALLOC_GREF, &dealloc) != 0) {
            fatal("gntalloc: IOCTL_GNTALLOC_DEALLOC_GREF", errno);
        }
        if (!map_err && moved) {
            // gntalloc's vma moves as any (its open and close count its pages' users).
            if (!move_view_over(p, spec.at, len, spec.copy_bytes)) {
                map_err = detail::last_error();
                ::munmap(p, len);  // the grants go with it (deallocated above)
            } else {
                p = spec.at;
            }
        }
        if (map_err) {
            fixed_.erase(spec.at);
            return map_err;
        }
        return SharedPages(this, static_cast<std::byte*>(p), std::move(refs));
    }

    GntshrHandle h_;
    std::unique_ptr<OwnGrantTable> table_;  // null: end_access() cannot observe mappings
    std::set<std::byte*> fixed_;            // addresses of pages shared with ShareSpec::at
};

}  // namespace

Result<std::unique_ptr<GrantSharer>> open_grant_sharer(const RealOptions& options) {
    errno = 0;
    GntshrHandle h(xengntshr_open(detail::library_logger(options.quiet), 0));
    if (!h) {
        return detail::last_error();
    }
    return std::unique_ptr<GrantSharer>(std::make_unique<RealGrantSharer>(
        std::move(h), options.read_own_grant_table ? OwnGrantTable::open() : nullptr));
}

namespace testing {

std::unique_ptr<GrantSharer> detached_grant_sharer() {
    return std::make_unique<RealGrantSharer>(GntshrHandle{}, nullptr);
}

}  // namespace testing

}  // namespace xenhsa::xen::real
