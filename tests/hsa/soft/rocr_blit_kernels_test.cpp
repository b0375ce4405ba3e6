// ROCr's blit kernels on the software GPU (hsa-bridge/soft/rocr_blit_kernels.hpp): each
// leaves memory exactly as the shader's own loops do (written out here from ROCr 5.2.3's
// shader source, work-item by work-item), for the arguments ROCr computes and for phase
// ends that are not whole blocks; they run only in ROCr's dispatch shape; and a kernel
// object is never recognised by anything but its code.
#include "rocr_blit_kernels.hpp"

#include <gtest/gtest.h>
#include <hsa/amd_hsa_kernel_code.h>

#include <cstring>
#include <functional>
#include <random>
#include <vector>
#include <xenhsa/hsa/soft_testing/aql_producer.hpp>

#include "address_space.hpp"
#include "kernels.hpp"

namespace xenhsa::hsa::soft_test {
namespace {

using soft::AddressSpace;
using soft::BuiltinKernel;
using soft::GpuMemory;
using soft_testing::HostMemory;
using soft_testing::kGpuNodeMask;

constexpr uint64_t kBlitMemoryBytes = 1u << 20;

// One phase of a shader's loop, as the shader runs it for work-item i of n: elements
// i + t*n of `width` bytes, groups of `unroll` handled whole while the group's first
// element lies below `end`; `once`: t = 0 only, masked.
struct ShaderPhase {
    Va start, end;
    uint64_t width, unroll;
    bool once;
};

void shader_loop(const ShaderPhase& p, uint64_t n,
                 const std::function<void(uint64_t element)>& element) {
    for (uint64_t i = 0; i < n; ++i) {
        if (p.once) {
            if (p.start + i * p.width < p.end) {
                element(i);
            }
            continue;
        }
        for (uint64_t g = 0; p.start + (i + g * p.unroll * n) * p.width < p.end; ++g) {
            for (uint64_t j = 0; j < p.unroll; ++j) {
                element(i + (g * p.unroll + j) * n);
            }
        }
    }
}

class RocrBlitKernelsTest : public ::testing::Test {
protected:
    RocrBlitKernelsTest() {
        EXPECT_TRUE(space_.register_user(memory_.va(), memory_.size(), false));
        EXPECT_TRUE(space_.map_to_gpu(memory_.va(), kGpuNodeMask, false));
        std::mt19937 random(7);
        for (uint64_t i = 0; i < kBlitMemoryBytes; ++i) {
            memory_.at<uint8_t>()[i] = static_cast<uint8_t>(random());
        }
        expected_.assign(memory_.at<uint8_t>(), memory_.at<uint8_t>() + kBlitMemoryBytes);
    }

    Va va(uint64_t offset) const { return memory_.va(offset); }
    uint64_t offset(Va address) const { return address - memory_.va(); }

    // The shader's copy of one phase, into expected_ (reads what the earlier ones wrote:
    // ROCr's phases never overlap).
    void shader_copy(const ShaderPhase& p, Va dst, uint64_t n) {
        shader_loop(p, n, [&](uint64_t e) {
            std::memmove(&expected_[offset(dst + e * p.width)],
                         &expected_[offset(p.start + e * p.width)], p.width);
        });
    }
    void shader_fill(const ShaderPhase& p, uint32_t value, uint64_t n) {
        shader_loop(p, n, [&](uint64_t e) {
            for (uint64_t k = 0; k < p.width; k += 4) {
                std::memcpy(&expected_[offset(p.start + e * p.width + k)], &value, 4);
            }
        });
    }

    // Runs the kernel over all n work-items in workgroups of 64, last first (any order
    // must do), and compares the whole memory with expected_.
    template <class Args>
    void run_and_compare(const BuiltinKernel& kernel, const Args& args, uint64_t n) {
        std::array<std::byte, soft::kMaxKernargSize> kernarg{};
        std::memcpy(kernarg.data(), &args, sizeof args);
        const std::span<const std::byte> span(kernarg.data(), kernel.kernarg_size);
        ASSERT_TRUE(kernel.accepts(span, {static_cast<uint32_t>(n), 1, 1}, {64, 1, 1}));
        for (uint64_t group = n / 64; group-- > 0;) {
            GpuMemory gpu(space_);
            kernel.run(span, group * 64, group * 64 + 64, gpu);
            ASSERT_FALSE(gpu.fault()) << std::hex << *gpu.fault();
        }
        uint64_t differ = 0;
        for (uint64_t i = 0; i < kBlitMemoryBytes; ++i) {
            differ += memory_.at<uint8_t>()[i] != expected_[i];
        }
        EXPECT_EQ(differ, 0u) << kernel.name;
    }

    HostMemory memory_{kBlitMemoryBytes};
    AddressSpace space_{kGpuNodeMask, 0};
    std::vector<uint8_t> expected_;
};

const BuiltinKernel& kernel(const char* name) {
    for (const BuiltinKernel& k : soft::rocr_kernels()) {
        if (std::strcmp(k.name, name) == 0) {
            return k;
        }
    }
    throw std::runtime_error(name);
}

struct CopyAlignedArgs {
    uint64_t p1s, p1d, p2s, p2d, p3s, p3d, p4s, p4d, p4s_end, p4d_end;
    uint32_t n, pad;
};
struct CopyMisalignedArgs {
    uint64_t p1s, p1d, p2s, p2d, p2s_end, p2d_end;
    uint32_t n, pad;
};
struct FillArgs {
    uint64_t p1, p2, p2_end;
    uint32_t value, n;
};

// What ROCr 5.2.3's BlitKernel::SubmitLinearCopyCommand computes for the aligned kernel.
CopyAlignedArgs rocr_copy_aligned(Va dst, Va src, uint64_t size, uint32_t n) {
    const uint64_t p1 = std::min<uint64_t>(size, (0x100 - (dst & 0xFF)) & 0xFF);
    const uint64_t block = uint64_t{n} * 16;
    const uint64_t p2 = (size - p1) / block * block;
    const uint64_t p3 = (size - p1 - p2) / 4 * 4;
    return {src,
            dst,
            src + p1,
            dst + p1,
            src + p1 + p2,
            dst + p1 + p2,
            src + p1 + p2 + p3,
            dst + p1 + p2 + p3,
            src + size,
            dst + size,
            n,
            0};
}

TEST_F(RocrBlitKernelsTest, CopyAlignedLeavesMemoryAsTheShader) {
    const BuiltinKernel& k = kernel("rocr:CopyAligned");
    for (const auto& [src, dst, size, n] :
         std::vector<std::array<uint64_t, 4>>{{0, 512 * 1024, 300000, 1024},
                                              {4, 600004, 77777, 64},
                                              {0x10, 0x80010, 0x10000, 256},
                                              {8, 4096, 3, 64}}) {
        const auto a = rocr_copy_aligned(va(dst), va(src), size, static_cast<uint32_t>(n));
        shader_copy({a.p1s, a.p2s, 1, 1, false}, a.p1d, n);
        shader_copy({a.p2s, a.p3s, 16, 1, false}, a.p2d, n);
        shader_copy({a.p3s, a.p4s, 4, 1, false}, a.p3d, n);
        shader_copy({a.p4s, a.p4s_end, 1, 1, true}, a.p4d, n);
        run_and_compare(k, a, n);
    }
}

TEST_F(RocrBlitKernelsTest, CopyMisalignedLeavesMemoryAsTheShaderEvenWithPartialGroups) {
    const BuiltinKernel& k = kernel("rocr:CopyMisaligned");
    const uint32_t n = 128;
    // ROCr's: phase 1 of whole blocks of 4n bytes, phase 2 right after it; then phase 1
    // ending inside a block (the unrolled shader copies that group whole), with phase 2
    // after it and elsewhere (so that the group's bytes past phase 1 show).
    // Each into a destination of its own, whose bytes no earlier case wrote.
    for (const auto& [phase1, gap, to] :
         std::vector<std::array<uint64_t, 3>>{{4 * n * 100, 0, 300003},
                                              {4 * n * 7 + 300, 0, 500003},
                                              {4 * n * 7 + 300, 5000, 700003}}) {
        const Va src = va(1), dst = va(to);
        const uint64_t size = phase1 + 1000;
        const CopyMisalignedArgs a{
            src, dst, src + phase1, dst + phase1 + gap, src + size, dst + size, n, 0};
        shader_copy({a.p1s, a.p2s, 1, 4, false}, a.p1d, n);
        shader_copy({a.p2s, a.p2s_end, 1, 1, false}, a.p2d, n);
        run_and_compare(k, a, n);
    }
}

TEST_F(RocrBlitKernelsTest, FillLeavesMemoryAsTheShader) {
    const BuiltinKernel& k = kernel("rocr:Fill");
    const uint32_t n = 64 * 4;
    for (const uint64_t dwords : {uint64_t{200000}, uint64_t{1000003}, uint64_t{7}}) {
        const uint64_t bytes = std::min<uint64_t>(dwords * 4, kBlitMemoryBytes - 8);
        const uint64_t phase1 = bytes / (16 * n) * (16 * n);
        const FillArgs a{va(8), va(8 + phase1), va(8 + bytes), 0xC0DEF00Du, n};
        shader_fill({a.p1, a.p2, 16, 1, false}, a.value, n);
        shader_fill({a.p2, a.p2_end, 4, 1, false}, a.value, n);
        run_and_compare(k, a, n);
    }
}

TEST_F(RocrBlitKernelsTest, RunOnlyInTheShapeRocrDispatchesThem) {
    for (const BuiltinKernel& k : soft::rocr_kernels()) {
        std::array<std::byte, soft::kMaxKernargSize> kernarg{};
        const uint32_t n = 256;
        std::memcpy(kernarg.data() + k.kernarg_size - 4, &n, 4);  // the count is last
        const std::span<const std::byte> args(kernarg.data(), k.kernarg_size);
        EXPECT_TRUE(k.accepts(args, {256, 1, 1}, {64, 1, 1})) << k.name;
        EXPECT_FALSE(k.accepts(args, {128, 1, 1}, {64, 1, 1})) << k.name;
        EXPECT_FALSE(k.accepts(args, {256, 1, 1}, {32, 1, 1})) << k.name;
        EXPECT_FALSE(k.accepts(args, {256, 2, 1}, {64, 1, 1})) << k.name;
        const uint32_t zero = 0;
        std::memcpy(kernarg.data() + k.kernarg_size - 4, &zero, 4);
        EXPECT_FALSE(k.accepts(args, {64, 1, 1}, {64, 1, 1})) << k.name << ": no work-items";
    }
}

TEST_F(RocrBlitKernelsTest, OnlyTheirCodeNamesThem) {
    // A header as ROCr writes it, followed by code that is not ROCr's.
    auto* header = memory_.at<amd_kernel_code_t>(0);
    std::memset(header, 0, sizeof *header);
    header->kernel_code_entry_byte_offset = sizeof *header;
    EXPECT_EQ(soft::find_rocr_kernel(space_, va(0)), nullptr);
    // Nor does an address outside the GPU's reach, or near the top of the address space.
    EXPECT_EQ(soft::find_rocr_kernel(space_, va(kBlitMemoryBytes - 100)), nullptr);
    EXPECT_EQ(soft::find_rocr_kernel(space_, 0), nullptr);
    EXPECT_EQ(soft::find_rocr_kernel(space_, ~uint64_t{0} - 300), nullptr);
}

}  // namespace
}  // namespace xenhsa::hsa::soft_test
