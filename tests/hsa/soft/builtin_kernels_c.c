/* The kernarg header from C11, as the guest library uses it. */
#include <stddef.h>
#include <string.h>
#include <xenhsa/hsa/builtin_kernels.h>

size_t xenhsa_c_kernarg_size(int kernel);
size_t xenhsa_c_saxpy_a_offset(void);
void xenhsa_c_make_fill(void* out, uint64_t dst, uint64_t count, uint32_t value);

size_t xenhsa_c_kernarg_size(int kernel) {
    switch (kernel) {
        case XENHSA_KERNEL_FILL:
            return sizeof(struct xenhsa_kernarg_fill);
        case XENHSA_KERNEL_COPY:
            return sizeof(struct xenhsa_kernarg_copy);
        case XENHSA_KERNEL_VECTOR_ADD:
            return sizeof(struct xenhsa_kernarg_vector_add);
        case XENHSA_KERNEL_SAXPY:
            return sizeof(struct xenhsa_kernarg_saxpy);
        case XENHSA_KERNEL_CHECKSUM:
            return sizeof(struct xenhsa_kernarg_checksum);
        case XENHSA_KERNEL_OOB_READ:
            return sizeof(struct xenhsa_kernarg_oob_read);
        default:
            return 0;
    }
}

size_t xenhsa_c_saxpy_a_offset(void) { return offsetof(struct xenhsa_kernarg_saxpy, a); }

void xenhsa_c_make_fill(void* out, uint64_t dst, uint64_t count, uint32_t value) {
    struct xenhsa_kernarg_fill args;
    memset(&args, 0, sizeof args);
    args.dst = dst;
    args.count = count;
    args.value = value;
    memcpy(out, &args, sizeof args);
}
