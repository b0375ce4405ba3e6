// The memory half of SDMA packets: copies, fills and single stores in the GPU address
// space, every byte checked through a View first. Large ones go in chunks, each under its
// own View (so an unmap_from_gpu waits for one chunk, not for the whole copy) and each
// after a look at `halted`, so that stop() interrupts them.
#ifndef XENHSA_HSA_SOFT_SDMA_MEMORY_HPP
#define XENHSA_HSA_SOFT_SDMA_MEMORY_HPP

#include <atomic>
#include <cstdint>
#include <optional>

#include "address_space.hpp"
#include "sdma_packets.hpp"

namespace xenhsa::hsa::soft::sdma {

inline constexpr uint64_t kChunkBytes = uint64_t{256} * 1024;

// How an operation ended: done, a GPU page fault at `fault`, or interrupted by `halted`.
struct OpEnd {
    bool stopped = false;
    std::optional<Va> fault;

    [[nodiscard]] bool done() const noexcept { return !stopped && !fault; }
    static OpEnd at(Va address) noexcept { return OpEnd{false, address}; }
};

// memmove semantics within each chunk (overlapping copies are undefined on the engine).
OpEnd copy_linear(const AddressSpace& space, Va dst, Va src, uint64_t bytes,
                  const std::atomic<bool>& halted);
// Row by row; an address that does not fit 64 bits is a fault at the side's base.
OpEnd copy_rect(const AddressSpace& space, const CopyLinearRect& packet,
                const std::atomic<bool>& halted);
// `dwords` copies of `value` from the dword-aligned `dst`.
OpEnd fill_dwords(const AddressSpace& space, Va dst, uint32_t value, uint64_t dwords,
                  const std::atomic<bool>& halted);
// Single naturally aligned accesses (a misaligned address is a fault there), atomic.
OpEnd store32(const AddressSpace& space, Va address, uint32_t value);
OpEnd store64(const AddressSpace& space, Va address, uint64_t value);
OpEnd add64(const AddressSpace& space, Va address, uint64_t value);
// The value, or the fault address.
struct Load32 {
    uint32_t value = 0;
    std::optional<Va> fault;
};
Load32 load32(const AddressSpace& space, Va address);

}  // namespace xenhsa::hsa::soft::sdma

#endif
