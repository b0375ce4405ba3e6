// GrantSharer over libxengntshr (gntalloc on Linux).
//
// Difference from the simulated hypervisor — end_access() cannot observe EBUSY here.
// gntalloc has no way to ask whether the peer still maps a page, and libxengntshr offers
// only share and unshare. On Linux, xengntshr_share_pages() already issues
// IOCTL_GNTALLOC_DEALLOC_GREF right after mmap(), so xengntshr_unshare() is a munmap()
// after which the kernel ends foreign access itself; while the peer still maps a page the
// kernel keeps the page and the grant alive (deferred until the peer unmaps) and never
// reuses the memory. So unsharing is always memory-safe, and end_access() always succeeds
// — but it does not *withdraw* access: a peer that keeps its mapping keeps seeing the
// pages (their last contents) until it unmaps. Revoking a buffer lent to a guest is
// therefore cooperative on Xen 4.17 through libxengntshr; only the simulated hypervisor
// can report EBUSY.
#include <xenhsa/xen/real/platform.hpp>
#include <xenhsa/xen/real/testing.hpp>

#include "detail.hpp"

#include <cstdint>
#include <cstring>
#include <limits>
#include <new>
#include <vector>

extern "C" {
#include <xengnttab.h>
}

namespace xenhsa::xen::real {

namespace {

struct GntshrClose {
    void operator()(xengntshr_handle *h) const noexcept { xengntshr_close(h); }
};
using GntshrHandle = std::unique_ptr<xengntshr_handle, GntshrClose>;

class RealGrantSharer final : public GrantSharer {
public:
    explicit RealGrantSharer(GntshrHandle h) noexcept : h_(std::move(h)) {}

    Result<SharedPages> share(const ShareSpec &spec) override
    {
        const DomId peer = spec.peer;
        const std::size_t pages = spec.pages;
        if (spec.at != nullptr) {
            return errno_code(EOPNOTSUPP); // fixed-address sharing: gntalloc mmap, to come
        }
        // The C API counts pages in an int (and unshares with a uint32_t).
        if (pages == 0 || pages > static_cast<std::size_t>(std::numeric_limits<int>::max()) /
                                      detail::kPageSize ||
            peer == kDomIdInvalid) {
            return errno_code(EINVAL);
        }
        if (!h_) {
            return errno_code(EBADF);
        }
        std::vector<GrantRef> refs;
        try {
            refs.resize(pages);
        } catch (const std::bad_alloc &) {
            return errno_code(ENOMEM);
        }
        // gntalloc hands out zeroed pages.
        void *p = xengntshr_share_pages(h_.get(), peer, static_cast<int>(pages), refs.data(),
                                        spec.writable ? 1 : 0);
        if (p == nullptr) {
            return detail::last_error();
        }
        return SharedPages(this, static_cast<std::byte *>(p), std::move(refs));
    }

protected:
    // See the top of this file: nothing to observe, the kernel defers freeing.
    Result<void> end_access(std::byte * /*addr*/,
                            std::span<const GrantRef> /*refs*/) noexcept override
    {
        return boost::outcome_v2::success();
    }

    void release(std::byte *addr, std::span<const GrantRef> refs) noexcept override
    {
        if (xengntshr_unshare(h_.get(), addr, static_cast<uint32_t>(refs.size())) != 0) {
            detail::fatal("xengntshr_unshare", errno);
        }
    }

    // Xen 4.17 cannot take a grant back from a peer that maps it: scrub the pages so the
    // peer sees zeros from now on, then unshare; gntalloc keeps the pages out of use
    // until the peer unmaps.
    RevokeEffect revoke(std::byte *addr, std::span<const GrantRef> refs) noexcept override
    {
        std::memset(addr, 0, refs.size() * detail::kPageSize);
        release(addr, refs);
        return RevokeEffect::cooperative;
    }

private:
    GntshrHandle h_;
};

}  // namespace

Result<std::unique_ptr<GrantSharer>> open_grant_sharer(const RealOptions &options)
{
    errno = 0;
    GntshrHandle h(xengntshr_open(detail::library_logger(options.quiet), 0));
    if (!h) {
        return detail::last_error();
    }
    return std::unique_ptr<GrantSharer>(std::make_unique<RealGrantSharer>(std::move(h)));
}

namespace testing {

std::unique_ptr<GrantSharer> detached_grant_sharer()
{
    return std::make_unique<RealGrantSharer>(GntshrHandle{});
}

}  // namespace testing

}  // namespace xenhsa::xen::real
