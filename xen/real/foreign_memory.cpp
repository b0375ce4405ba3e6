// ForeignMemory over libxenforeignmemory (privcmd): dom0 tooling only.
#include <sys/mman.h>

#include <climits>
#include <limits>
#include <new>
#include <vector>
#include <xenhsa/xen/real/platform.hpp>
#include <xenhsa/xen/real/testing.hpp>
#include <xenhsa/xen/reservation.hpp>

#include "detail.hpp"

extern "C" {
#include <xenforeignmemory.h>
}

namespace xenhsa::xen::real {

namespace {

using detail::FmemClose;
// Shared with every mapping, which must unmap through the handle it was made with.
using FmemHandle = std::shared_ptr<xenforeignmemory_handle>;

void unmap_or_die(xenforeignmemory_handle* h, std::byte* addr, std::size_t pages) noexcept {
    if (xenforeignmemory_unmap(h, addr, pages) != 0) {
        fatal("xenforeignmemory_unmap", errno);
    }
}

class RealForeignMapping final : public ForeignMapping {
public:
    RealForeignMapping(FmemHandle h, std::byte* addr, std::size_t pages) noexcept
        : h_(std::move(h)), addr_(addr), pages_(pages) {}
    RealForeignMapping(const RealForeignMapping&) = delete;
    RealForeignMapping& operator=(const RealForeignMapping&) = delete;
    ~RealForeignMapping() override { unmap_or_die(h_.get(), addr_, pages_); }

    [[nodiscard]] std::span<std::byte> bytes() const noexcept override {
        return {addr_, pages_ * detail::kPageSize};
    }

private:
    FmemHandle h_;
    std::byte* addr_;
    std::size_t pages_;
};

class RealForeignMemory final : public ForeignMemory {
public:
    explicit RealForeignMemory(FmemHandle h) noexcept : h_(std::move(h)) {}

    Result<std::unique_ptr<ForeignMapping>> map(DomId domid, std::span<const uint64_t> gfns,
                                                bool writable) override {
        if (gfns.empty() ||
            gfns.size() > std::numeric_limits<std::size_t>::max() / detail::kPageSize ||
            domid == kDomIdInvalid) {
            return errno_code(EINVAL);
        }
        if constexpr (sizeof(xen_pfn_t) < sizeof(uint64_t)) {  // 32-bit Arm
            for (const uint64_t gfn : gfns) {
                if (gfn > std::numeric_limits<xen_pfn_t>::max()) {
                    return errno_code(EINVAL);
                }
            }
        }
        if (!h_) {
            return errno_code(EBADF);
        }
        std::vector<xen_pfn_t> arr;
        std::vector<int> err;
        try {
            arr.assign(gfns.begin(), gfns.end());
            err.assign(gfns.size(), 0);
        } catch (const std::bad_alloc&) {
            return errno_code(ENOMEM);
        }
        const int prot = PROT_READ | (writable ? PROT_WRITE : 0);
        errno = 0;
        void* p = xenforeignmemory_map(h_.get(), domid, prot, arr.size(), arr.data(), err.data());
        if (p == nullptr) {
            return detail::last_error();
        }
        auto* addr = static_cast<std::byte*>(p);
        // With an err array the map may partly succeed: all or nothing for the seam.
        // err[] holds errno values (the Linux privcmd path passes -errno through; accept
        // both signs).
        for (const int e : err) {
            if (e != 0) {
                unmap_or_die(h_.get(), addr, arr.size());
                return errno_code(e == INT_MIN ? EIO : e < 0 ? -e : e);
            }
        }
        try {
            return std::unique_ptr<ForeignMapping>(
                std::make_unique<RealForeignMapping>(h_, addr, arr.size()));
        } catch (const std::bad_alloc&) {
            unmap_or_die(h_.get(), addr, arr.size());
            return errno_code(ENOMEM);
        }
    }

private:
    FmemHandle h_;
};

}  // namespace

Result<std::unique_ptr<ForeignMemory>> open_foreign_memory(const RealOptions& options) {
    errno = 0;
    xenforeignmemory_handle* raw = xenforeignmemory_open(detail::library_logger(options.quiet), 0);
    if (raw == nullptr) {
        return detail::last_error();
    }
    FmemHandle h;
    try {
        h = FmemHandle(raw, FmemClose{});  // closes raw itself if it throws
    } catch (const std::bad_alloc&) {
        return errno_code(ENOMEM);
    }
    return std::unique_ptr<ForeignMemory>(std::make_unique<RealForeignMemory>(std::move(h)));
}

namespace testing {

std::unique_ptr<ForeignMemory> detached_foreign_memory() {
    return std::make_unique<RealForeignMemory>(FmemHandle{});
}

}  // namespace testing

}  // namespace xenhsa::xen::real
