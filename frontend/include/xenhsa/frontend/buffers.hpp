// Guest memory in the VA window: buffers the guest grants to the backend (for MAP), and
// buffers the backend lends to the guest (LEND). Both sit at the same VA on both sides.
#ifndef XENHSA_FRONTEND_BUFFERS_HPP
#define XENHSA_FRONTEND_BUFFERS_HPP

#include <cstddef>
#include <cstdint>
#include <span>
#include <xenhsa/frontend/result.hpp>
#include <xenhsa/frontend/va_window.hpp>
#include <xenhsa/xen/grant_map.hpp>
#include <xenhsa/xen/grant_share.hpp>

namespace xenhsa::frontend {

using Handle = uint64_t;

// Zeroed pages at `va()` inside the window, granted to the backend. Destroying it
// withdraws the grants; while the backend still maps a page (before UNMAP's OK) the pages
// are left to the hypervisor and their VA stays out of use. Must not outlive the Client
// (its window) that allocated it.
class GuestBuffer {
public:
    GuestBuffer() noexcept = default;
    GuestBuffer(VaAllocator* window, uint64_t va, xen::SharedPages pages) noexcept
        : window_(window), va_(va), pages_(std::move(pages)) {}
    GuestBuffer(GuestBuffer&& other) noexcept;
    GuestBuffer& operator=(GuestBuffer&& other) noexcept;
    GuestBuffer(const GuestBuffer&) = delete;
    GuestBuffer& operator=(const GuestBuffer&) = delete;
    ~GuestBuffer() { reset(); }

    [[nodiscard]] uint64_t va() const noexcept { return va_; }
    [[nodiscard]] std::size_t pages() const noexcept { return pages_.pages(); }
    [[nodiscard]] std::size_t size() const noexcept { return pages_.pages() * 4096; }
    [[nodiscard]] std::byte* data() const noexcept { return pages_.data(); }
    [[nodiscard]] std::span<std::byte> bytes() const noexcept { return {data(), size()}; }
    [[nodiscard]] std::span<const xen::GrantRef> refs() const noexcept { return pages_.refs(); }
    explicit operator bool() const noexcept { return pages_.data() != nullptr; }

    // Withdraws the grants and gives the VA back: EBUSY (and nothing changes) while the
    // backend maps a page.
    Result<void> release() noexcept;
    // Gives up pages placed over the caller's own memory (share_at's `at`) whose view the
    // caller has replaced already (xen::SharedPages::release_replaced): never fails.
    void release_replaced() noexcept;
    void reset() noexcept;

private:
    VaAllocator* window_ = nullptr;
    uint64_t va_ = 0;
    xen::SharedPages pages_;
};

// Backend pages lent to the guest and mapped at `va` (LEND). The Client's unmap(LentBuffer&)
// gives it back (and acknowledges a REVOKED). Destroying it only unmaps the pages
// locally; the VA then stays out of use until the LEND handle is unmapped.
struct LentBuffer {
    Handle handle = 0;
    uint64_t va = 0;
    uint32_t npages = 0;
    bool writable = false;
    xen::GrantMapping mapping;

    [[nodiscard]] std::byte* data() const noexcept { return mapping.data(); }
    [[nodiscard]] std::size_t size() const noexcept { return std::size_t{npages} * 4096; }
};

}  // namespace xenhsa::frontend

#endif
