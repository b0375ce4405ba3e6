#include "rocr_blit_kernels.hpp"

#include <hsa/amd_hsa_kernel_code.h>

#include <algorithm>
#include <array>
#include <boost/crc.hpp>
#include <cstring>
#include <limits>
#include <span>

namespace xenhsa::hsa::soft {

// Named, not anonymous: its names are the built-ins' too, and unity builds join the files.
namespace rocr_blit {

// ROCr's kernel object: the header, then the code.
constexpr uint64_t kCodeOffset = sizeof(amd_kernel_code_t);
static_assert(kCodeOffset == 256);
constexpr uint32_t kWorkgroupSize = 64;  // BlitKernel::PopulateQueue

// The kernarg layouts (ROCr 5.2.3, BlitKernel::KernelArgs).
struct CopyAlignedArgs {
    uint64_t phase1_src, phase1_dst, phase2_src, phase2_dst, phase3_src, phase3_dst;
    uint64_t phase4_src, phase4_dst, phase4_src_end, phase4_dst_end;
    uint32_t workitems;
};
constexpr uint32_t kCopyAlignedArgsSize = 84;

struct CopyMisalignedArgs {
    uint64_t phase1_src, phase1_dst, phase2_src, phase2_dst, phase2_src_end, phase2_dst_end;
    uint32_t workitems;
};
constexpr uint32_t kCopyMisalignedArgsSize = 52;

struct FillArgs {
    uint64_t phase1_dst, phase2_dst, phase2_dst_end;
    uint32_t value, workitems;
};
constexpr uint32_t kFillArgsSize = 32;

static_assert(offsetof(CopyAlignedArgs, workitems) == kCopyAlignedArgsSize - 4 &&
              offsetof(CopyMisalignedArgs, workitems) == kCopyMisalignedArgsSize - 4 &&
              sizeof(FillArgs) == kFillArgsSize && kCopyAlignedArgsSize <= kMaxKernargSize);

template <class Args>
Args load_args(std::span<const std::byte> kernarg) noexcept {
    Args args{};
    std::memcpy(&args, kernarg.data(), std::min(sizeof args, kernarg.size()));
    return args;
}

// One phase of a shader's loop: work-item i (of n) handles the `width`-byte elements
// i + t*n, t = 0, 1, ..., counted from `start`, in groups of `unroll` consecutive t, for
// as long as the first element of a group lies below `end` (the whole group is handled,
// as the unrolled shader does without a check per element); `once`: t = 0 only.
struct Phase {
    Va start = 0;
    Va end = 0;
    uint64_t width = 1;
    uint64_t unroll = 1;
    bool once = false;
};

using Wide = unsigned __int128;

// Calls each(first, count) for runs of the elements work-items [b, e) of n handle, so
// that over all work-items every element the shader handles is handled once (elements
// of the unrolled group that straddles `end` may come twice: the same bytes again).
// Stops at the first `each` that returns false; false then.
template <class Each>
bool share_out(const Phase& p, uint64_t b, uint64_t e, uint64_t n, Each&& each) {
    if (p.end <= p.start || n == 0 || b >= e) {
        return true;
    }
    const Wide slots = (Wide{p.end - p.start} + p.width - 1) / p.width;
    const auto run = [&](Wide first, Wide count) {
        return count == 0 || each(static_cast<uint64_t>(first), static_cast<uint64_t>(count));
    };
    if (p.once) {
        return b >= slots || run(b, std::min<Wide>(e, slots) - b);
    }
    // Every element below `slots`, in contiguous shares.
    const Wide lo = slots * b / n;
    const Wide hi = slots * std::min<uint64_t>(e, n) / n;
    if (hi > lo && !run(lo, hi - lo)) {
        return false;
    }
    if (p.unroll == 1) {
        return true;
    }
    // The group that straddles `slots`: work-items below `r` handle all of it.
    const Wide block = Wide{p.unroll} * n;
    const Wide group = slots / block * block;
    const Wide r = slots - group;
    const Wide items_end = std::min<Wide>({r, Wide{n}, Wide{e}});
    for (uint64_t t = 0; t < p.unroll && b < items_end; ++t) {
        const Wide first = std::max<Wide>(group + Wide{t} * n + b, slots);
        const Wide last = group + Wide{t} * n + items_end;
        if (last > first && !run(first, last - first)) {
            return false;
        }
    }
    return true;
}

bool copy_phase(GpuMemory& memory, const Phase& p, Va dst, uint64_t b, uint64_t e, uint64_t n) {
    return share_out(p, b, e, n, [&](uint64_t first, uint64_t count) {
        const auto from = memory.reach<Access::read>(p.start, first, count, p.width);
        const auto to =
            from ? memory.reach<Access::write>(dst, first, count, p.width) : std::nullopt;
        return to && to->move_from(0, *from);  // as big as from: not refused
    });
}

bool fill_phase(GpuMemory& memory, const Phase& p, uint32_t value, uint64_t b, uint64_t e,
                uint64_t n) {
    return share_out(p, b, e, n, [&](uint64_t first, uint64_t count) {
        const auto to = memory.reach<Access::write>(p.start, first, count, p.width);
        return to && to->fill(0, to->size(), value);
    });
}

void run_copy_aligned(std::span<const std::byte> kernarg, uint64_t b, uint64_t e,
                      GpuMemory& memory) {
    const auto a = load_args<CopyAlignedArgs>(kernarg);
    const uint64_t n = a.workitems;
    // Bytes up to the destination's 256-byte alignment, 16-byte blocks, dwords, then the
    // last bytes (one per work-item, no loop).
    (void)(copy_phase(memory, {a.phase1_src, a.phase2_src, 1, 1, false}, a.phase1_dst, b, e, n) &&
           copy_phase(memory, {a.phase2_src, a.phase3_src, 16, 1, false}, a.phase2_dst, b, e, n) &&
           copy_phase(memory, {a.phase3_src, a.phase4_src, 4, 1, false}, a.phase3_dst, b, e, n) &&
           copy_phase(memory, {a.phase4_src, a.phase4_src_end, 1, 1, true}, a.phase4_dst, b, e, n));
}

void run_copy_misaligned(std::span<const std::byte> kernarg, uint64_t b, uint64_t e,
                         GpuMemory& memory) {
    const auto a = load_args<CopyMisalignedArgs>(kernarg);
    const uint64_t n = a.workitems;
    // Bytes in unrolled groups of four, then bytes to the end.
    (void)(copy_phase(memory, {a.phase1_src, a.phase2_src, 1, 4, false}, a.phase1_dst, b, e, n) &&
           copy_phase(memory, {a.phase2_src, a.phase2_src_end, 1, 1, false}, a.phase2_dst, b, e,
                      n));
}

void run_fill(std::span<const std::byte> kernarg, uint64_t b, uint64_t e, GpuMemory& memory) {
    const auto a = load_args<FillArgs>(kernarg);
    const uint64_t n = a.workitems;
    // 16-byte blocks, then dwords to the end.
    (void)(fill_phase(memory, {a.phase1_dst, a.phase2_dst, 16, 1, false}, a.value, b, e, n) &&
           fill_phase(memory, {a.phase2_dst, a.phase2_dst_end, 4, 1, false}, a.value, b, e, n));
}

// As ROCr dispatches them: a 1-D grid of 64-wide workgroups, one work-item per count.
template <class Args>
bool rocr_shape(std::span<const std::byte> kernarg, const std::array<uint32_t, 3>& grid,
                const std::array<uint32_t, 3>& workgroup) {
    const uint32_t workitems = load_args<Args>(kernarg).workitems;
    return workitems != 0 && grid == std::array<uint32_t, 3>{workitems, 1, 1} &&
           workgroup == std::array<uint32_t, 3>{kWorkgroupSize, 1, 1};
}

constexpr BuiltinKernel kCopyAligned{"rocr:CopyAligned", kCopyAlignedArgsSize, run_copy_aligned,
                                     rocr_shape<CopyAlignedArgs>};
constexpr BuiltinKernel kCopyMisaligned{"rocr:CopyMisaligned", kCopyMisalignedArgsSize,
                                        run_copy_misaligned, rocr_shape<CopyMisalignedArgs>};
constexpr BuiltinKernel kFill{"rocr:Fill", kFillArgsSize, run_fill, rocr_shape<FillArgs>};

struct KnownCode {
    uint32_t bytes;  // of code after the header
    uint32_t crc32;  // of those bytes
    const BuiltinKernel* kernel;
};

// ROCr 5.2.3's amd_gpu_shaders.h, for gfx8 and gfx9 (all the soft agent's targets), and
// ROCr 6.1.2's for gfx9: its blit_shaders/*.s assembled for gfx900, the same shaders in
// gfx9's encoding, as Debian 13's libhsa-runtime64 carries them.
constexpr std::array<KnownCode, 6> kKnownCode{{
    {496, 0xfb2432c0, &kCopyAligned},     // 5.2.3 kCodeCopyAligned8
    {412, 0xae0f5a77, &kCopyMisaligned},  // 5.2.3 kCodeCopyMisaligned8
    {188, 0x4634c2f1, &kFill},            // 5.2.3 kCodeFill8
    {496, 0x6d5f9a7c, &kCopyAligned},     // 6.1.2 kCodeCopyAligned9
    {412, 0xefa041df, &kCopyMisaligned},  // 6.1.2 kCodeCopyMisaligned9
    {188, 0x644d4f27, &kFill},            // 6.1.2 kCodeFill9
}};
constexpr uint32_t kLongestCode = 496;

constexpr std::array<BuiltinKernel, 3> kKernels{kCopyAligned, kCopyMisaligned, kFill};

}  // namespace rocr_blit

std::span<const BuiltinKernel> rocr_kernels() noexcept { return rocr_blit::kKernels; }

const BuiltinKernel* find_rocr_kernel(const AddressSpace& space, uint64_t kernel_object) {
    if (kernel_object >
        std::numeric_limits<uint64_t>::max() - rocr_blit::kCodeOffset - rocr_blit::kLongestCode) {
        return nullptr;
    }
    const auto view = space.view();
    amd_kernel_code_t header{};
    if (!view.slice<Access::read>(kernel_object, sizeof header)
             ->read(0, std::as_writable_bytes(std::span(&header, 1))) ||
        header.kernel_code_entry_byte_offset != static_cast<int64_t>(rocr_blit::kCodeOffset)) {
        return nullptr;
    }
    std::array<std::byte, rocr_blit::kLongestCode> code{};
    for (const rocr_blit::KnownCode& known : rocr_blit::kKnownCode) {
        const std::span<std::byte> bytes(code.data(), known.bytes);
        if (!view.slice<Access::read>(kernel_object + rocr_blit::kCodeOffset, known.bytes)
                 ->read(0, bytes)) {
            continue;
        }
        boost::crc_32_type crc;
        crc.process_bytes(bytes.data(), bytes.size());
        if (crc.checksum() == known.crc32) {
            return known.kernel;
        }
    }
    return nullptr;
}

}  // namespace xenhsa::hsa::soft
