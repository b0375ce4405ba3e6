// Guest memory the GPU can reach: guest pages MAPped, PINned and MAPped to the GPU at one
// VA (the guest's own: VA mirroring), or the backend's pages LENT there where its kernel
// cannot pin grant mappings (PIN: UNSUPPORTED); and the first node with GPU cores.
#ifndef XENHSA_FRONTEND_GPU_MEMORY_HPP
#define XENHSA_FRONTEND_GPU_MEMORY_HPP

#include <cstddef>
#include <cstdint>
#include <optional>
#include <xenhsa/frontend/client.hpp>

namespace xenhsa::frontend::aql {

// Guest pages at one VA, MAPped, PINned and MAPped to the GPU of `node`, with a bump
// allocator for kernel arguments, signals and data. Give it back with release() before
// the Client goes.
class GpuMemory {
public:
    GpuMemory() = default;
    static Result<GpuMemory> create(Client& client, std::size_t pages, uint32_t node = 0);

    [[nodiscard]] uint64_t va() const noexcept {
        return lent_.handle != 0 ? lent_.va : buffer_.va();
    }
    [[nodiscard]] std::byte* data() const noexcept {
        return lent_.handle != 0 ? lent_.data() : buffer_.data();
    }
    [[nodiscard]] std::size_t size() const noexcept {
        return lent_.handle != 0 ? lent_.size() : buffer_.size();
    }
    [[nodiscard]] bool lent() const noexcept { return lent_.handle != 0; }
    [[nodiscard]] Handle map_handle() const noexcept { return map_; }
    [[nodiscard]] Handle pin_handle() const noexcept { return pin_; }

    // `bytes` zeroed bytes at a multiple of `align` (ENOMEM when it does not fit). The
    // pointer is also the GPU address (VA mirroring).
    Result<std::byte*> carve(std::size_t bytes, std::size_t align = 64);
    template <class T>
    Result<T*> carve_array(std::size_t count,
                           std::size_t align = alignof(T) < 64 ? 64 : alignof(T)) {
        auto p = carve(count * sizeof(T), align);
        if (!p) {
            return p.error();
        }
        return reinterpret_cast<T*>(p.value());
    }
    // UNMAP_FROM_GPU, UNPIN, UNMAP, then withdraws the grants (or unmaps the lent pages and
    // gives them back). Stops at the first failure.
    Result<void> release(Client& client);

private:
    Result<void> pin_and_map(Client& client, uint32_t node);

    GuestBuffer buffer_;
    LentBuffer lent_;
    Handle map_ = 0;
    Handle pin_ = 0;
    bool gpu_mapped_ = false;
    std::size_t used_ = 0;
};

// The first node with GPU compute cores (QUERY SYSTEM, then QUERY NODE per node);
// nullopt when the host has none. CPU nodes come first in HSA topologies.
Result<std::optional<uint32_t>> find_gpu_node(Client& client);

}  // namespace xenhsa::frontend::aql

#endif
