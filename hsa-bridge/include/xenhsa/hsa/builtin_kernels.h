/*
 * The software GPU agent's built-in kernels: their names and kernarg layouts.
 *
 * A guest finds a kernel with QUERY KERNEL (struct xenhsa_kernel_info: the name below,
 * kernarg_size == sizeof its struct, and the kernel_object to put in an AQL kernel
 * dispatch packet). It writes the kernarg struct into GPU-mapped memory and points the
 * packet's kernarg_address at it. Every address in a kernarg struct is a GPU VA; each
 * access a kernel makes is checked against the GPU address space, and a stray one is a
 * GPU page fault that stops the queue.
 *
 * Work-items are numbered linearly: id = x + y * grid_x + z * grid_x * grid_y. Work-item
 * `id` handles element `id`; work-items with id >= the element count do nothing, so the
 * grid may be rounded up to whole workgroups. Elements of 4 bytes need no alignment.
 *
 * C11 and C++ alike: fixed-width fields, explicit pads, sizes checked at compile time.
 */
#ifndef XENHSA_HSA_BUILTIN_KERNELS_H
#define XENHSA_HSA_BUILTIN_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
#define XENHSA_KERNARG_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define XENHSA_KERNARG_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif

#define XENHSA_KERNARG_LAYOUT(type, size)                                       \
    XENHSA_KERNARG_ASSERT(sizeof(type) == (size), #type " has the wrong size"); \
    XENHSA_KERNARG_ASSERT(sizeof(type) % 8 == 0, #type " size not a multiple of 8")

/* QUERY KERNEL indices of the built-ins, in this order. */
enum xenhsa_builtin_kernel {
    XENHSA_KERNEL_FILL = 0,
    XENHSA_KERNEL_COPY = 1,
    XENHSA_KERNEL_VECTOR_ADD = 2,
    XENHSA_KERNEL_SAXPY = 3,
    XENHSA_KERNEL_CHECKSUM = 4,
    XENHSA_KERNEL_OOB_READ = 5,
    XENHSA_KERNEL_COUNT_ = 6
};

/* The kernel_object the software GPU runs built-in `index` as: opaque, nonzero, 64-byte
 * steps like real kernel descriptors, far from any pointer a guest owns. QUERY KERNEL
 * reports it; the KFD shim's emulated GPU (tests/kfd_shim), which has no QUERY, runs the
 * same kernels at the same values. */
#define XENHSA_BUILTIN_KERNEL_OBJECT(index) (0x584e4b0000000000ull + 64ull * (uint64_t)(index))

#define XENHSA_KERNEL_NAME_FILL "fill"
#define XENHSA_KERNEL_NAME_COPY "copy"
#define XENHSA_KERNEL_NAME_VECTOR_ADD "vector_add"
#define XENHSA_KERNEL_NAME_SAXPY "saxpy"
#define XENHSA_KERNEL_NAME_CHECKSUM "checksum"
#define XENHSA_KERNEL_NAME_OOB_READ "oob_read"

/* fill: ((uint32_t *)dst)[i] = value for i < count. */
struct xenhsa_kernarg_fill {
    uint64_t dst;
    uint64_t count; /* 4-byte words */
    uint32_t value;
    uint32_t pad;
};
XENHSA_KERNARG_LAYOUT(struct xenhsa_kernarg_fill, 24);

/* copy: ((uint8_t *)dst)[i] = ((const uint8_t *)src)[i] for i < size (one byte per
 * work-item). Overlapping buffers give an unspecified result, as on a GPU. */
struct xenhsa_kernarg_copy {
    uint64_t dst;
    uint64_t src;
    uint64_t size; /* bytes */
};
XENHSA_KERNARG_LAYOUT(struct xenhsa_kernarg_copy, 24);

/* vector_add: c[i] = a[i] + b[i] for i < n (IEEE single precision). */
struct xenhsa_kernarg_vector_add {
    uint64_t a;
    uint64_t b;
    uint64_t c;
    uint64_t n;
};
XENHSA_KERNARG_LAYOUT(struct xenhsa_kernarg_vector_add, 32);

/* saxpy: y[i] = a * x[i] + y[i] for i < n (single precision, not fused). */
struct xenhsa_kernarg_saxpy {
    uint64_t x;
    uint64_t y;
    uint64_t n;
    float a;
    uint32_t pad;
};
XENHSA_KERNARG_LAYOUT(struct xenhsa_kernarg_saxpy, 32);

/* checksum: *(uint64_t *)result += sum of ((const uint32_t *)src)[i] for i < count,
 * modulo 2^64. Each workgroup adds its part atomically, so result must be 8-byte
 * aligned (a misaligned result is a fault at its address). The caller zeroes it. */
struct xenhsa_kernarg_checksum {
    uint64_t src;
    uint64_t count; /* 4-byte words */
    uint64_t result;
};
XENHSA_KERNARG_LAYOUT(struct xenhsa_kernarg_checksum, 24);

/* oob_read: work-item 0 copies ((const uint32_t *)src)[index] to *(uint32_t *)dst; the
 * other work-items do nothing. Used to make a GPU page fault on purpose: an index past
 * src's mapping reads an address the GPU cannot reach. */
struct xenhsa_kernarg_oob_read {
    uint64_t src;
    uint64_t index;
    uint64_t dst;
};
XENHSA_KERNARG_LAYOUT(struct xenhsa_kernarg_oob_read, 24);

XENHSA_KERNARG_ASSERT(offsetof(struct xenhsa_kernarg_saxpy, a) == 24, "saxpy.a moved");
XENHSA_KERNARG_ASSERT(sizeof(float) == 4, "float is not IEEE single precision");

#endif /* XENHSA_HSA_BUILTIN_KERNELS_H */
