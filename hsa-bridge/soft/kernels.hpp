// The built-in kernels (layouts in <xenhsa/hsa/builtin_kernels.h>) and what they see of
// memory: a GpuMemory checks every access against the GPU address space.
#ifndef XENHSA_HSA_SOFT_KERNELS_HPP
#define XENHSA_HSA_SOFT_KERNELS_HPP

#include <xenhsa/proto/query.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "address_space.hpp"

namespace xenhsa::hsa::soft {

// One workgroup's access to memory. The first access the GPU may not make is recorded
// as the fault; the kernel then stops.
class GpuMemory {
public:
    explicit GpuMemory(const AddressSpace& space) : view_(space) {}

    // Elements [index, index + count) of `elem` bytes at `base`, or nullopt (and a
    // recorded fault) when the GPU may not access all of them this way. Valid until
    // let_writer_in.
    template <Access A>
    std::optional<GuestSlice<A>> reach(Va base, uint64_t index, uint64_t count, uint64_t elem) {
        uint64_t offset = 0;
        uint64_t va = 0;
        uint64_t len = 0;
        if (__builtin_mul_overflow(index, elem, &offset) ||
            __builtin_add_overflow(base, offset, &va) ||
            __builtin_mul_overflow(count, elem, &len)) {
            fault_ = base + index * elem;  // wraps like the GPU's address arithmetic
            return std::nullopt;
        }
        return reached(view_.slice<A>(va, len));
    }
    // One naturally aligned object of `size` bytes at `va`, for atomics: misaligned is a
    // fault at va.
    template <Access A>
    std::optional<GuestSlice<A>> reach_aligned(Va va, uint64_t size) {
        return reached(view_.aligned_slice<A>(va, size, size));
    }
    [[nodiscard]] std::optional<Va> fault() const noexcept { return fault_; }
    // Between workgroups: a writer that waits for the space gets it first.
    void let_writer_in() { view_.let_writer_in(); }

private:
    template <Access A>
    std::optional<GuestSlice<A>> reached(const SliceOrFault<A>& slice) {
        if (!slice) {
            fault_ = slice.fault();
            return std::nullopt;
        }
        return *slice;
    }

    AddressSpace::View view_;
    std::optional<Va> fault_;
};

// Runs work-items [begin, end) (linear ids, all in one row of the workgroup).
using KernelFn = void (*)(std::span<const std::byte> kernarg, uint64_t begin, uint64_t end,
                          GpuMemory& memory);

// Whether a dispatch of the kernel with these arguments and this grid and workgroup can
// run (nullptr: any can).
using ShapeCheck = bool (*)(std::span<const std::byte> kernarg, const std::array<uint32_t, 3>& grid,
                            const std::array<uint32_t, 3>& workgroup);

struct BuiltinKernel {
    const char* name;
    uint32_t kernarg_size;
    KernelFn run;
    ShapeCheck accepts = nullptr;
};

inline constexpr uint32_t kMaxKernargSize = 96;  // ROCr's CopyAligned takes 84 bytes

// In QUERY KERNEL order (enum xenhsa_builtin_kernel).
std::span<const BuiltinKernel> builtin_kernels() noexcept;
// nullptr for a kernel_object that names no built-in.
const BuiltinKernel* find_kernel(uint64_t kernel_object) noexcept;
xenhsa_kernel_info kernel_info(uint32_t index) noexcept;  // index < builtin_kernels().size()

}  // namespace xenhsa::hsa::soft

#endif
