/*
 * xenhsa wire protocol v1: common definitions.
 *
 * Every wire struct holds fixed-width integers only (no pointers, no fds, no bool),
 * has explicit pad fields, a size that is a multiple of 8 and an alignment of at most 8.
 * XENHSA_WIRE_STRUCT checks that at compile time, in C11 and in C++20.
 * All wire values are little-endian; the headers refuse to build elsewhere.
 */
#ifndef XENHSA_PROTO_COMMON_H
#define XENHSA_PROTO_COMMON_H

#ifdef __cplusplus
#include <cstddef>
#include <cstdint>
#include <type_traits>
#define XENHSA_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#define XENHSA_ALIGNOF(type) alignof(type)
#define XENHSA_TRIVIAL(type)                                                                       \
    static_assert(std::is_trivially_copyable<type>::value && std::is_standard_layout<type>::value, \
                  #type " must be trivially copyable and standard layout")
#else
#include <stddef.h>
#include <stdint.h>
#define XENHSA_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#define XENHSA_ALIGNOF(type) _Alignof(type)
#define XENHSA_TRIVIAL(type) XENHSA_STATIC_ASSERT(1, #type)
#endif

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "xenhsa wire protocol v1 is little-endian only"
#endif

/* Size, 8-byte granularity, alignment and (in C++) trivial copyability of a wire struct. */
#define XENHSA_WIRE_STRUCT(type, size)                                              \
    XENHSA_STATIC_ASSERT(sizeof(type) == (size), #type " has the wrong size");      \
    XENHSA_STATIC_ASSERT(sizeof(type) % 8 == 0, #type " size not a multiple of 8"); \
    XENHSA_STATIC_ASSERT(XENHSA_ALIGNOF(type) <= 8, #type " alignment above 8");    \
    XENHSA_TRIVIAL(type)

#define XENHSA_FIELD_AT(type, field, offset) \
    XENHSA_STATIC_ASSERT(offsetof(type, field) == (offset), #type "." #field " moved")

#define XENHSA_PROTO_VERSION 1u

/* Xen's page size; grant references always name 4 KiB pages. */
#define XENHSA_PAGE_SHIFT 12u
#define XENHSA_PAGE_SIZE 4096u

/*
 * Highest guest virtual address (exclusive) that may be mirrored: the end of user space,
 * 2^47 on x86-64 (4-level paging), 2^48 on arm64 (Linux with 48-bit VAs, where mmap
 * places memory just below it). A guest and its backend run on one host: both sides are
 * built for the same architecture and see the same limit.
 */
#if defined(__aarch64__)
#define XENHSA_VA_LIMIT 0x0001000000000000ull
#else
#define XENHSA_VA_LIMIT 0x0000800000000000ull
#endif

/*
 * Handles are opaque 64-bit ids the backend issues per guest connection.
 * 0 is never a valid handle.
 */
#define XENHSA_HANDLE_NONE 0ull

/* Grant references as in <xen/grant_table.h> (grant_ref_t). */
typedef uint32_t xenhsa_gref_t;

/* Pages listed by one indirect page: a page of grant references. */
#define XENHSA_GREFS_PER_INDIRECT_PAGE (XENHSA_PAGE_SIZE / 4u)

static inline int xenhsa_page_aligned(uint64_t value) {
    return (value & (XENHSA_PAGE_SIZE - 1u)) == 0;
}

/* Nonzero when [va, va + size) is a nonempty page-aligned range below XENHSA_VA_LIMIT. */
static inline int xenhsa_va_range_ok(uint64_t va, uint64_t size) {
    return size != 0 && xenhsa_page_aligned(va) && xenhsa_page_aligned(size) &&
           va < XENHSA_VA_LIMIT && size <= XENHSA_VA_LIMIT - va;
}

#endif /* XENHSA_PROTO_COMMON_H */
