// The memory half of SDMA packets: copies, fills and single stores in the GPU address
// space, every byte checked through a View first. Large ones go in chunks (a rectangle
// copy: rows), each under its own View (so an unmap_from_gpu waits for one chunk, not for
// the whole copy) and each after Pace::go(), so that stop() interrupts them and the queue
// takes turns on the engines (sdma_engines.hpp).
#ifndef XENHSA_HSA_SOFT_SDMA_MEMORY_HPP
#define XENHSA_HSA_SOFT_SDMA_MEMORY_HPP

#include <cstdint>
#include <optional>

#include "address_space.hpp"
#include "sdma_packets.hpp"

namespace xenhsa::hsa::soft::sdma {

inline constexpr uint64_t kChunkBytes = uint64_t{256} * 1024;

// Asked before each chunk or row of a copy or fill: false ends it (the queue halted).
class Pace {
public:
    virtual bool go() = 0;

protected:
    ~Pace() = default;
};

// How an operation ended: done, a GPU page fault at `fault`, or interrupted (Pace).
struct OpEnd {
    bool stopped = false;
    std::optional<Va> fault;

    [[nodiscard]] bool done() const noexcept { return !stopped && !fault; }
    static OpEnd at(Va address) noexcept { return OpEnd{false, address}; }
};

// memmove semantics within each chunk (overlapping copies are undefined on the engine).
OpEnd copy_linear(const AddressSpace& space, Va dst, Va src, uint64_t bytes, Pace& pace);
// Row by row; an address that does not fit 64 bits is a fault at the side's base.
OpEnd copy_rect(const AddressSpace& space, const CopyLinearRect& packet, Pace& pace);
// `dwords` copies of `value` from the dword-aligned `dst`.
OpEnd fill_dwords(const AddressSpace& space, Va dst, uint32_t value, uint64_t dwords, Pace& pace);
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
