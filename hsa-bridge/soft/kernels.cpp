#include "kernels.hpp"

#include <xenhsa/hsa/builtin_kernels.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>

namespace xenhsa::hsa::soft {

namespace {

// kernel_object values: opaque, nonzero, 64-byte steps like real kernel descriptors,
// and far from anything a guest would take for a pointer it owns.
constexpr uint64_t kKernelObjectBase = 0x584e'4b00'0000'0000ull;  // "XNK"
constexpr uint64_t kKernelObjectStep = 64;

template <class Args>
Args load(std::span<const std::byte> kernarg) noexcept {
    static_assert(sizeof(Args) <= kMaxKernargSize);
    Args args;
    std::memcpy(&args, kernarg.data(), sizeof args);
    return args;
}

// Narrows [begin, end) to the elements that exist; false when none do.
bool clamp(uint64_t& begin, uint64_t& end, uint64_t count) noexcept {
    if (begin >= count) {
        return false;
    }
    end = std::min(end, count);
    return true;
}

void run_fill(std::span<const std::byte> kernarg, uint64_t begin, uint64_t end, GpuMemory& memory) {
    const auto args = load<xenhsa_kernarg_fill>(kernarg);
    if (!clamp(begin, end, args.count)) {
        return;
    }
    const uint64_t n = end - begin;
    std::byte* dst = memory.reach(args.dst, begin, n, 4, Access::write);
    if (dst == nullptr) {
        return;
    }
    std::array<unsigned char, 4> bytes{};
    std::memcpy(bytes.data(), &args.value, 4);
    if (bytes[0] == bytes[1] && bytes[1] == bytes[2] && bytes[2] == bytes[3]) {
        std::memset(dst, bytes[0], 4 * n);
        return;
    }
    // The value doubles in place up to a block that stays in L1, which is then copied
    // on: memcpy speed, whatever the alignment.
    constexpr uint64_t kBlock = 8192;
    std::memcpy(dst, &args.value, 4);
    uint64_t done = 4;
    const uint64_t total = 4 * n;
    while (done < total) {
        const uint64_t step = std::min({done, total - done, kBlock});
        std::memcpy(dst + done, dst, step);
        done += step;
    }
}

void run_copy(std::span<const std::byte> kernarg, uint64_t begin, uint64_t end, GpuMemory& memory) {
    const auto args = load<xenhsa_kernarg_copy>(kernarg);
    if (!clamp(begin, end, args.size)) {
        return;
    }
    const std::byte* src = memory.reach(args.src, begin, end - begin, 1, Access::read);
    std::byte* dst =
        src == nullptr ? nullptr : memory.reach(args.dst, begin, end - begin, 1, Access::write);
    if (dst != nullptr) {
        std::memmove(dst, src, end - begin);
    }
}

void run_vector_add(std::span<const std::byte> kernarg, uint64_t begin, uint64_t end,
                    GpuMemory& memory) {
    const auto args = load<xenhsa_kernarg_vector_add>(kernarg);
    if (!clamp(begin, end, args.n)) {
        return;
    }
    const uint64_t n = end - begin;
    const std::byte* a = memory.reach(args.a, begin, n, 4, Access::read);
    const std::byte* b = a == nullptr ? nullptr : memory.reach(args.b, begin, n, 4, Access::read);
    std::byte* c = b == nullptr ? nullptr : memory.reach(args.c, begin, n, 4, Access::write);
    if (c == nullptr) {
        return;
    }
    for (uint64_t i = 0; i < n; ++i) {
        float x = 0;
        float y = 0;
        std::memcpy(&x, a + 4 * i, 4);
        std::memcpy(&y, b + 4 * i, 4);
        const float sum = x + y;
        std::memcpy(c + 4 * i, &sum, 4);
    }
}

void run_saxpy(std::span<const std::byte> kernarg, uint64_t begin, uint64_t end,
               GpuMemory& memory) {
    const auto args = load<xenhsa_kernarg_saxpy>(kernarg);
    if (!clamp(begin, end, args.n)) {
        return;
    }
    const uint64_t n = end - begin;
    const std::byte* x = memory.reach(args.x, begin, n, 4, Access::read);
    std::byte* y = x == nullptr ? nullptr : memory.reach(args.y, begin, n, 4, Access::write);
    if (y == nullptr) {
        return;
    }
    for (uint64_t i = 0; i < n; ++i) {
        float xi = 0;
        float yi = 0;
        std::memcpy(&xi, x + 4 * i, 4);
        std::memcpy(&yi, y + 4 * i, 4);
        const float product = args.a * xi;  // two roundings: not an FMA
        const float result = product + yi;
        std::memcpy(y + 4 * i, &result, 4);
    }
}

void run_checksum(std::span<const std::byte> kernarg, uint64_t begin, uint64_t end,
                  GpuMemory& memory) {
    const auto args = load<xenhsa_kernarg_checksum>(kernarg);
    if (!clamp(begin, end, args.count)) {
        return;
    }
    const std::byte* src = memory.reach(args.src, begin, end - begin, 4, Access::read);
    if (src == nullptr) {
        return;
    }
    uint64_t sum = 0;
    for (uint64_t i = 0; i < end - begin; ++i) {
        uint32_t word = 0;
        std::memcpy(&word, src + 4 * i, 4);
        sum += word;
    }
    if (memory.reach_aligned(args.result, 8, Access::write) != nullptr) {
        guest_atomic<uint64_t>(args.result).fetch_add(sum, std::memory_order_relaxed);
    }
}

void run_oob_read(std::span<const std::byte> kernarg, uint64_t begin, uint64_t end,
                  GpuMemory& memory) {
    const auto args = load<xenhsa_kernarg_oob_read>(kernarg);
    if (!clamp(begin, end, 1)) {
        return;
    }
    const std::byte* src = memory.reach(args.src, args.index, 1, 4, Access::read);
    std::byte* dst = src == nullptr ? nullptr : memory.reach(args.dst, 0, 1, 4, Access::write);
    if (dst != nullptr) {
        std::memcpy(dst, src, 4);
    }
}

constexpr std::array<BuiltinKernel, XENHSA_KERNEL_COUNT_> kKernels{{
    {XENHSA_KERNEL_NAME_FILL, sizeof(xenhsa_kernarg_fill), run_fill},
    {XENHSA_KERNEL_NAME_COPY, sizeof(xenhsa_kernarg_copy), run_copy},
    {XENHSA_KERNEL_NAME_VECTOR_ADD, sizeof(xenhsa_kernarg_vector_add), run_vector_add},
    {XENHSA_KERNEL_NAME_SAXPY, sizeof(xenhsa_kernarg_saxpy), run_saxpy},
    {XENHSA_KERNEL_NAME_CHECKSUM, sizeof(xenhsa_kernarg_checksum), run_checksum},
    {XENHSA_KERNEL_NAME_OOB_READ, sizeof(xenhsa_kernarg_oob_read), run_oob_read},
}};

}  // namespace

std::byte* GpuMemory::reach(Va base, uint64_t index, uint64_t count, uint64_t elem, Access access) {
    uint64_t offset = 0;
    uint64_t va = 0;
    uint64_t len = 0;
    if (__builtin_mul_overflow(index, elem, &offset) || __builtin_add_overflow(base, offset, &va) ||
        __builtin_mul_overflow(count, elem, &len)) {
        fault_ = base + index * elem;  // wraps like the GPU's address arithmetic
        return nullptr;
    }
    if (auto fault = view_.check(va, len, access)) {
        fault_ = *fault;
        return nullptr;
    }
    return host_ptr(va);
}

std::byte* GpuMemory::reach_aligned(Va va, uint64_t size, Access access) {
    if (va % size != 0) {
        fault_ = va;
        return nullptr;
    }
    return reach(va, 0, 1, size, access);
}

std::span<const BuiltinKernel> builtin_kernels() noexcept { return kKernels; }

const BuiltinKernel* find_kernel(uint64_t kernel_object) noexcept {
    const uint64_t offset = kernel_object - kKernelObjectBase;
    if (offset % kKernelObjectStep != 0 || offset / kKernelObjectStep >= kKernels.size()) {
        return nullptr;
    }
    return &kKernels[offset / kKernelObjectStep];
}

xenhsa_kernel_info kernel_info(uint32_t index) noexcept {
    const BuiltinKernel& kernel = kKernels.at(index);
    xenhsa_kernel_info info{};
    info.kernel_object = kKernelObjectBase + kKernelObjectStep * index;
    info.kernarg_size = kernel.kernarg_size;
    std::strncpy(reinterpret_cast<char*>(info.name), kernel.name, sizeof info.name - 1);
    return info;
}

}  // namespace xenhsa::hsa::soft
