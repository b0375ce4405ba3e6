// The built-in kernels (layouts in <xenhsa/hsa/builtin_kernels.h>) and what they see of
// memory: a GpuMemory checks every access against the GPU address space.
#ifndef XENHSA_HSA_SOFT_KERNELS_HPP
#define XENHSA_HSA_SOFT_KERNELS_HPP

#include <xenhsa/proto/query.h>

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

    // Host pointer to elements [index, index + count) of `elem` bytes at `base`, or
    // nullptr (and a recorded fault) when the GPU may not access all of them.
    std::byte* reach(Va base, uint64_t index, uint64_t count, uint64_t elem, Access access);
    // One naturally aligned object of `size` bytes at `va`, for atomics: misaligned is a
    // fault at va.
    std::byte* reach_aligned(Va va, uint64_t size, Access access);
    [[nodiscard]] std::optional<Va> fault() const noexcept { return fault_; }
    // Between workgroups: a writer that waits for the space gets it first.
    void let_writer_in() { view_.let_writer_in(); }

private:
    AddressSpace::View view_;
    std::optional<Va> fault_;
};

// Runs work-items [begin, end) (linear ids, all in one row of the workgroup).
using KernelFn = void (*)(std::span<const std::byte> kernarg, uint64_t begin, uint64_t end,
                          GpuMemory& memory);

struct BuiltinKernel {
    const char* name;
    uint32_t kernarg_size;
    KernelFn run;
};

inline constexpr uint32_t kMaxKernargSize = 64;

// In QUERY KERNEL order (enum xenhsa_builtin_kernel).
std::span<const BuiltinKernel> builtin_kernels() noexcept;
// nullptr for a kernel_object that names no built-in.
const BuiltinKernel* find_kernel(uint64_t kernel_object) noexcept;
xenhsa_kernel_info kernel_info(uint32_t index) noexcept;  // index < builtin_kernels().size()

}  // namespace xenhsa::hsa::soft

#endif
