#include "own_grant_table.hpp"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <new>
#include <type_traits>
#include <xenhsa/xen/public_headers.hpp>
#include <xenhsa/xen/reservation.hpp>

#include "detail.hpp"

extern "C" {
#include <xen/features.h>
#include <xen/sys/privcmd.h>
#include <xenforeignmemory.h>
}

namespace xenhsa::xen::real {

namespace {

using detail::kPageSize;

using detail::FmemClose;
using UniqueFmem = std::unique_ptr<xenforeignmemory_handle, FmemClose>;

class Fd {
public:
    explicit Fd(int fd = -1) noexcept : fd_(fd) {}
    Fd(Fd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
    Fd& operator=(Fd&&) = delete;
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    ~Fd() {
        if (fd_ >= 0) {
            ::close(fd_);
        }
    }
    [[nodiscard]] int get() const noexcept { return fd_; }

private:
    int fd_;
};

// Xen's public headers hide GNTTABOP_get_version from the legacy interface version that
// public_headers.hpp uses; the ABI is fixed (xen/include/public/grant_table.h).
constexpr unsigned int kGnttabOpGetVersion = 10;
struct GnttabGetVersion {
    domid_t dom;
    uint16_t pad;
    uint32_t version;
};

constexpr std::size_t kEntriesPerFrame = kPageSize / sizeof(grant_entry_v1_t);

// A guest handle is a plain pointer in x86's legacy interface and a struct on Arm.
template <typename Handle, typename T>
void set_handle(Handle& handle, T* value) {
    if constexpr (std::is_pointer_v<Handle>) {
        handle = value;
    } else {
        set_xen_guest_handle(handle, value);
    }
}

}  // namespace

struct OwnGrantTable::Impl {
    static constexpr std::size_t kFrameListOffset = 256;  // after the largest op struct
    static constexpr std::size_t kMaxFrames = (kPageSize - kFrameListOffset) / sizeof(xen_pfn_t);

    Impl(Fd privcmd_fd, Fd hypercall_fd, std::byte* buffer, UniqueFmem fmem_handle) noexcept
        : privcmd(std::move(privcmd_fd)),
          hypercall(std::move(hypercall_fd)),
          buf(buffer),
          fmem(std::move(fmem_handle)) {}
    Impl(const Impl&) = delete;
    Impl& operator=(const Impl&) = delete;
    ~Impl() { ::munmap(buf, kPageSize); }

    bool version_is_1() noexcept {
        GnttabGetVersion v{};
        v.dom = DOMID_SELF;
        return grant_table_op(kGnttabOpGetVersion, v) && v.version == 1;
    }

    // One grant-table op with `op` copied through the hypercall buffer and back.
    template <class Op>
    Result<void> grant_table_op(unsigned int cmd, Op& op) noexcept {
        static_assert(sizeof(Op) <= kFrameListOffset);
        std::memcpy(buf, &op, sizeof op);
        privcmd_hypercall_t call{};
        call.op = __HYPERVISOR_grant_table_op;
        call.arg[0] = cmd;
        call.arg[1] = reinterpret_cast<uintptr_t>(buf);
        call.arg[2] = 1;
        int rc = 0;
        do {
            rc = ::ioctl(privcmd.get(), IOCTL_PRIVCMD_HYPERCALL, &call);
        } while (rc < 0 && errno == EINTR);
        if (rc < 0) {
            return detail::last_error();
        }
        std::memcpy(&op, buf, sizeof op);
        return boost::outcome_v2::success();
    }

    // Maps the first `want` frames of the table (every frame when `want` is 0) read-only
    // and calls `use` with its entries and their count. ERANGE when the table has fewer frames.
    template <class Use>
    Result<void> with_entries(std::size_t want, Use&& use) noexcept {
        gnttab_query_size query{};
        query.dom = DOMID_SELF;
        if (auto r = grant_table_op(GNTTABOP_query_size, query); !r) {
            return r.error();
        }
        if (query.status != GNTST_okay) {
            return errno_code(EIO);
        }
        if (want == 0) {
            want = std::min<std::size_t>(query.nr_frames, kMaxFrames);
        }
        if (want == 0) {
            use(nullptr, 0);
            return boost::outcome_v2::success();
        }
        if (want > query.nr_frames || want > kMaxFrames) {
            return errno_code(ERANGE);
        }

        // The frame list lives in the hypercall buffer too, after the op.
        auto* frames = reinterpret_cast<xen_pfn_t*>(buf + kFrameListOffset);
        gnttab_setup_table setup{};
        setup.dom = DOMID_SELF;
        setup.nr_frames = static_cast<uint32_t>(want);
        set_handle(setup.frame_list, frames);
        if (auto r = grant_table_op(GNTTABOP_setup_table, setup); !r) {
            return r.error();
        }
        if (setup.status != GNTST_okay) {
            return errno_code(EIO);
        }
        std::array<xen_pfn_t, kMaxFrames> pfns{};
        std::memcpy(pfns.data(), frames, want * sizeof(xen_pfn_t));
        std::array<int, kMaxFrames> errs{};
        void* table =
            xenforeignmemory_map(fmem.get(), DOMID_SELF, PROT_READ, want, pfns.data(), errs.data());
        if (table == nullptr) {
            return detail::last_error();
        }
        bool readable = true;
        for (std::size_t i = 0; i < want; ++i) {
            readable = readable && errs[i] == 0;
        }
        if (readable) {
            use(static_cast<const volatile grant_entry_v1_t*>(table), want * kEntriesPerFrame);
        }
        if (xenforeignmemory_unmap(fmem.get(), table, want) != 0) {
            fatal("xenforeignmemory_unmap of the own grant table", errno);
        }
        if (!readable) {
            return errno_code(EFAULT);
        }
        return boost::outcome_v2::success();
    }

    Fd privcmd;
    Fd hypercall;
    std::byte* buf;
    UniqueFmem fmem;
};

// XENFEAT_auto_translated_physmap, as Xen's sysfs node shows this domain's features (a
// hexadecimal bitmap); unknown counts as translated.
static bool auto_translated() noexcept {
    std::FILE* f = std::fopen("/sys/hypervisor/properties/features", "re");
    if (f == nullptr) {
        return true;
    }
    unsigned long features = 0;
    const bool read = std::fscanf(f, "%lx", &features) == 1;
    std::fclose(f);
    return !read || (features & (1UL << XENFEAT_auto_translated_physmap)) != 0;
}

std::unique_ptr<OwnGrantTable> OwnGrantTable::open() noexcept {
    if (auto_translated()) {
        return nullptr;
    }
    Fd privcmd(::open("/dev/xen/privcmd", O_RDWR | O_CLOEXEC));
    Fd hypercall(::open("/dev/xen/hypercall", O_RDWR | O_CLOEXEC));
    if (privcmd.get() < 0 || hypercall.get() < 0) {
        return nullptr;
    }
    // Hypercall argument memory Xen can always access (what libxencall uses).
    void* buf = ::mmap(nullptr, kPageSize, PROT_READ | PROT_WRITE, MAP_SHARED, hypercall.get(), 0);
    if (buf == MAP_FAILED) {
        return nullptr;
    }
    UniqueFmem fmem(xenforeignmemory_open(detail::silent_logger(), 0));
    std::unique_ptr<Impl> impl;
    if (fmem) {
        impl.reset(new (std::nothrow) Impl(std::move(privcmd), std::move(hypercall),
                                           static_cast<std::byte*>(buf), std::move(fmem)));
    }
    if (!impl) {
        ::munmap(buf, kPageSize);
        return nullptr;
    }
    if (!impl->version_is_1()) {
        return nullptr;
    }
    return std::unique_ptr<OwnGrantTable>(new (std::nothrow) OwnGrantTable(std::move(impl)));
}

OwnGrantTable::OwnGrantTable(std::unique_ptr<Impl> impl) noexcept : impl_(std::move(impl)) {}

OwnGrantTable::~OwnGrantTable() = default;

Result<bool> OwnGrantTable::any_mapped(std::span<const GrantRef> refs) noexcept {
    GrantRef max_ref = 0;
    for (const GrantRef r : refs) {
        max_ref = std::max(max_ref, r);
    }
    bool mapped = false;
    auto read = impl_->with_entries(
        max_ref / kEntriesPerFrame + 1, [&](const volatile grant_entry_v1_t* entries, std::size_t) {
            for (const GrantRef r : refs) {
                const uint16_t flags = entries[r].flags;  // written by Xen: one read each
                mapped = mapped || (flags & (GTF_reading | GTF_writing)) != 0;
            }
        });
    if (!read) {
        return read.error();
    }
    return mapped;
}

Result<uint32_t> OwnGrantTable::held_by(DomId peer) noexcept {
    uint32_t held = 0;
    auto read =
        impl_->with_entries(0, [&](const volatile grant_entry_v1_t* entries, std::size_t count) {
            for (std::size_t i = 0; i < count; ++i) {
                const uint16_t flags = entries[i].flags;  // Xen writes the flags; read each once
                const bool in_use = (flags & GTF_type_mask) == GTF_permit_access ||
                                    (flags & (GTF_reading | GTF_writing)) != 0;
                held += in_use && entries[i].domid == peer ? 1 : 0;
            }
        });
    if (!read) {
        return read.error();
    }
    return held;
}

}  // namespace xenhsa::xen::real
