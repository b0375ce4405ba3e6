/* xenhsa-rocr-check's parts (hsa_check.c has the program and its options). */
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

/* Prints "check NAME ok|FAIL [DETAIL]" and counts it. */
void check(const char* name, int ok, const char* detail);
/* 1 on success; else a failed check named WHAT with ROCr's message. */
int hsa_ok(const char* what, hsa_status_t s);
/* hsa_amd_memory_async_copy, waited for (10 s at most): 1 when it completed. */
int copy(void* dst, hsa_agent_t dst_agent, const void* src, hsa_agent_t src_agent, size_t size);

/* --lock (hsa_check_lock.c). */
void locked_copies(struct ctx* c);

#endif
