// Two views of the same memfd pages: the guest's and the peer's, as a grant mapping gives.
#ifndef XENHSA_FRONTEND_CLI_SHARED_PAGES_HPP
#define XENHSA_FRONTEND_CLI_SHARED_PAGES_HPP

#include <cstddef>
#include <span>
#include <xenhsa/frontend/result.hpp>

namespace xenhsa::frontend::cli {

class SharedPages {
public:
    static Result<SharedPages> create(std::size_t bytes);

    SharedPages(SharedPages&& other) noexcept;
    SharedPages& operator=(SharedPages&&) = delete;
    SharedPages(const SharedPages&) = delete;
    SharedPages& operator=(const SharedPages&) = delete;
    ~SharedPages();

    [[nodiscard]] std::span<std::byte> guest_view() const noexcept { return {guest_, bytes_}; }
    [[nodiscard]] std::span<std::byte> peer_view() const noexcept { return {peer_, bytes_}; }

private:
    SharedPages(std::byte* guest, std::byte* peer, std::size_t bytes) noexcept
        : guest_(guest), peer_(peer), bytes_(bytes) {}

    std::byte* guest_;
    std::byte* peer_;
    std::size_t bytes_;
};

}  // namespace xenhsa::frontend::cli

#endif
