// ROCr's own kernels: the blit kernels ROCr 5.2.3 and 6.1.2 dispatch for hsa_amd_memory_fill and
// for the copies it does not give to SDMA (device to device, and every copy with
// HSA_ENABLE_SDMA=0). ROCr builds each kernel object itself (GpuAgent::AssembleShader):
// an amd_kernel_code_t whose code starts right after it (kernel_code_entry_byte_offset
// 256), followed by the ISA of the shader for the GPU's generation. A kernel object is
// recognised by its header and by the length and CRC-32 of that code, read from guest
// memory at every dispatch (never by its address): the code ROCr 5.2.3 ships for gfx8 and
// gfx9 (its kCodeCopyAligned8, kCodeCopyMisaligned8 and kCodeFill8, which Debian 12's
// libhsa-runtime64 5.2.3 carries byte for byte), and ROCr 6.1.2's for gfx9 (the same
// shaders, kernargs and loops in gfx9's encoding, as Debian 13's carries them). It then runs as a
// built-in with the kernel's real kernarg layout and semantics (each phase's strided loop, as the
// shader runs it); the elements are shared out among the dispatch's work-items in contiguous runs
// instead of the shader's stride, which leaves memory as the shader does for copies whose source
// and destination do not overlap (overlapping copies race on a GPU too). The kernels run in the
// shape ROCr dispatches them: a 1-D grid of 64-wide workgroups with as many work-items as the
// kernarg's count; any other dispatch of them is an invalid-dimensions queue error.
#ifndef XENHSA_HSA_SOFT_ROCR_BLIT_KERNELS_HPP
#define XENHSA_HSA_SOFT_ROCR_BLIT_KERNELS_HPP

#include <cstdint>
#include <span>

#include "address_space.hpp"
#include "kernels.hpp"

namespace xenhsa::hsa::soft {

// The ROCr kernel whose kernel object (an amd_kernel_code_t and its code) lies at
// `kernel_object` in GPU-readable guest memory; nullptr for none.
const BuiltinKernel* find_rocr_kernel(const AddressSpace& space, uint64_t kernel_object);

// The kernels themselves, for tests: CopyAligned, CopyMisaligned, Fill.
std::span<const BuiltinKernel> rocr_kernels() noexcept;

}  // namespace xenhsa::hsa::soft

#endif
