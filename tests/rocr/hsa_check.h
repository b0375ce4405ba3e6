/* xenhsa-rocr-check's parts: hsa_check.c has the program, its options and the
 * common pass; each mode is a file of its own. */
#ifndef XENHSA_TESTS_ROCR_HSA_CHECK_H
#define XENHSA_TESTS_ROCR_HSA_CHECK_H

#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>
#include <stddef.h>
#include <stdint.h>

struct agents {
    hsa_agent_t cpu, gpu;
    int have_cpu, have_gpu;
};

struct pools {
    hsa_amd_memory_pool_t kernarg, fine, coarse;
    int have_kernarg, have_fine, have_coarse;
};

struct ctx {
    struct agents agents;
    struct pools cpu_pools, gpu_pools;
    hsa_queue_t* queue;
    uint64_t k_fill, k_vector_add;
};

#include <time.h>

#define N_ELEMS (64u * 1024u)
#define COPY_BYTES (4u << 20)

/* The kernarg layouts of the built-ins (docs/guest-rocm.md). */
struct fill_args {
    uint64_t dst, count;
    uint32_t value, pad;
};
struct vector_add_args {
    uint64_t a, b, c, n;
};
struct oob_read_args {
    uint64_t src, index, dst;
};

/* Prints "check NAME ok|FAIL [DETAIL]" and counts it. */
void check(const char* name, int ok, const char* detail);
/* 1 on success; else a failed check named WHAT with ROCr's message. */
int hsa_ok(const char* what, hsa_status_t s);
/* hsa_amd_memory_async_copy, waited for (10 s at most): 1 when it completed. */
int copy(void* dst, hsa_agent_t dst_agent, const void* src, hsa_agent_t src_agent, size_t size);

/* XENHSA_KERNEL_<NAME>'s kernel object, 0 when the library published none. */
uint64_t kernel_object(const char* name);
double now_ms(clockid_t clock);
/* Dispatches `items` work-items on c->queue and waits for them (10 s at most): 1 when
 * done. dispatch_signal takes the completion signal, which the caller made at 1. */
int dispatch(struct ctx* c, uint64_t kernel, const void* args, size_t args_size, uint32_t items);
int dispatch_signal(struct ctx* c, uint64_t kernel, const void* args, size_t args_size,
                    uint32_t items, hsa_signal_t done);
/* Fine-grained system memory the GPU may access, or NULL (a failed check). */
void* fine_alloc(struct ctx* c, size_t size);
/* One pass of fill, vector_add and async copies, verified: 1 when every check held. */
int one_pass(struct ctx* c, unsigned pass);

/* The modes, one file each. */
void long_wait(unsigned delay_ms); /* hsa_check_lifetime.c */
void forked(struct ctx* c, int opens);
int close_under_wait(void);
void system_memory(struct ctx* c, size_t mib, int expect_refused); /* hsa_check_memory.c */
void isolation(struct ctx* c, uint32_t value, const char* dir);
void images(struct ctx* c);
void blits(struct ctx* c); /* hsa_check_copies.c */
void profile(struct ctx* c);
void fault(struct ctx* c); /* hsa_check_errors.c */
void queue_error(struct ctx* c, const char* cause, int with_callback);
void locked_copies(struct ctx* c); /* hsa_check_lock.c */

#endif
