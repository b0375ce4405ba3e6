#include "kernels.hpp"

#include <xenhsa/hsa/builtin_kernels.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>

namespace xenhsa::hsa::soft {

namespace {

// kernel_object values: builtin_kernels.h.
constexpr uint64_t kKernelObjectBase = XENHSA_BUILTIN_KERNEL_OBJECT(0);
constexpr uint64_t kKernelObjectStep = XENHSA_BUILTIN_KERNEL_OBJECT(1) - kKernelObjectBase;

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
    if (const auto dst = memory.reach<Access::write>(args.dst, begin, n, 4)) {
        (void)dst->fill(0, dst->size(), args.value);  // the whole slice: not refused
    }
}

void run_copy(std::span<const std::byte> kernarg, uint64_t begin, uint64_t end, GpuMemory& memory) {
    const auto args = load<xenhsa_kernarg_copy>(kernarg);
    if (!clamp(begin, end, args.size)) {
        return;
    }
    const auto src = memory.reach<Access::read>(args.src, begin, end - begin, 1);
    const auto dst =
        src ? memory.reach<Access::write>(args.dst, begin, end - begin, 1) : std::nullopt;
    if (dst) {
        (void)dst->move_from(0, *src);  // as big as src: not refused
    }
}

// In the loops below every offset lies in slices of n elements: the accessors refuse none.

void run_vector_add(std::span<const std::byte> kernarg, uint64_t begin, uint64_t end,
                    GpuMemory& memory) {
    const auto args = load<xenhsa_kernarg_vector_add>(kernarg);
    if (!clamp(begin, end, args.n)) {
        return;
    }
    const uint64_t n = end - begin;
    const auto a = memory.reach<Access::read>(args.a, begin, n, 4);
    const auto b = a ? memory.reach<Access::read>(args.b, begin, n, 4) : std::nullopt;
    const auto c = b ? memory.reach<Access::write>(args.c, begin, n, 4) : std::nullopt;
    if (!c) {
        return;
    }
    for (uint64_t i = 0; i < n; ++i) {
        const auto x = a->load<float>(4 * i);
        const auto y = b->load<float>(4 * i);
        if (!x || !y) {
            return;
        }
        const float sum = *x + *y;
        if (!c->store(4 * i, sum)) {
            return;
        }
    }
}

void run_saxpy(std::span<const std::byte> kernarg, uint64_t begin, uint64_t end,
               GpuMemory& memory) {
    const auto args = load<xenhsa_kernarg_saxpy>(kernarg);
    if (!clamp(begin, end, args.n)) {
        return;
    }
    const uint64_t n = end - begin;
    const auto x = memory.reach<Access::read>(args.x, begin, n, 4);
    const auto y = x ? memory.reach<Access::write>(args.y, begin, n, 4) : std::nullopt;
    if (!y) {
        return;
    }
    for (uint64_t i = 0; i < n; ++i) {
        const auto xi = x->load<float>(4 * i);
        const auto yi = y->load<float>(4 * i);
        if (!xi || !yi) {
            return;
        }
        const float product = args.a * *xi;  // two roundings: not an FMA
        const float result = product + *yi;
        if (!y->store(4 * i, result)) {
            return;
        }
    }
}

void run_checksum(std::span<const std::byte> kernarg, uint64_t begin, uint64_t end,
                  GpuMemory& memory) {
    const auto args = load<xenhsa_kernarg_checksum>(kernarg);
    if (!clamp(begin, end, args.count)) {
        return;
    }
    const auto src = memory.reach<Access::read>(args.src, begin, end - begin, 4);
    if (!src) {
        return;
    }
    uint64_t sum = 0;
    for (uint64_t i = 0; i < end - begin; ++i) {
        const auto word = src->load<uint32_t>(4 * i);
        if (!word) {
            return;
        }
        sum += *word;
    }
    if (const auto result = memory.reach_aligned<Access::write>(args.result, 8)) {
        if (const auto total = result->atomic<uint64_t>(0)) {  // aligned: not refused
            total->fetch_add(sum, std::memory_order_relaxed);
        }
    }
}

void run_oob_read(std::span<const std::byte> kernarg, uint64_t begin, uint64_t end,
                  GpuMemory& memory) {
    const auto args = load<xenhsa_kernarg_oob_read>(kernarg);
    if (!clamp(begin, end, 1)) {
        return;
    }
    const auto src = memory.reach<Access::read>(args.src, args.index, 1, 4);
    const auto dst = src ? memory.reach<Access::write>(args.dst, 0, 1, 4) : std::nullopt;
    if (dst) {
        (void)dst->move_from(0, *src);  // 4 bytes into 4: not refused
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
