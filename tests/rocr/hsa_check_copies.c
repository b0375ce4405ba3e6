/* xenhsa-rocr-check: ROCr's blit kernels and profiled times: --blits, --profile. */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <hsa/hsa_ext_image.h>
#include <hsakmt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hsa_check.h"

/* Device memory filled and copied by ROCr's blit kernels, read back and compared. */
void blits(struct ctx* c) {
    const size_t size = 4u << 20;
    unsigned char *a = NULL, *b = NULL;
    unsigned char* host = fine_alloc(c, size);
    unsigned char* expect = malloc(size);
    if (!hsa_ok("device allocate",
                hsa_amd_memory_pool_allocate(c->gpu_pools.coarse, size, 0, (void**)&a)) ||
        !hsa_ok("device allocate",
                hsa_amd_memory_pool_allocate(c->gpu_pools.coarse, size, 0, (void**)&b)) ||
        !host || !expect) {
        return;
    }
    char detail[160];
    /* Fills: the whole buffer, then a part at an odd dword count and offset. */
    const struct {
        size_t offset, count;
        uint32_t value;
    } fills[] = {
        {0, size / 4, 0xA5C3F00Du}, {4, 1000003, 0x01020304u}, {size - 44, 7, 0xFFFFFFFFu}};
    for (unsigned i = 0; i < sizeof fills / sizeof fills[0]; ++i) {
        uint32_t* dst = (uint32_t*)(a + fills[i].offset);
        int ok = hsa_ok("memory fill", hsa_amd_memory_fill(dst, fills[i].value, fills[i].count));
        for (size_t k = 0; k < fills[i].count; ++k) {
            memcpy(expect + fills[i].offset + 4 * k, &fills[i].value, 4);
        }
        ok = ok && copy(host, c->agents.cpu, a, c->agents.gpu, size);
        const size_t differ = ok ? (size_t)(memcmp(host, expect, size) != 0) : 1;
        snprintf(detail, sizeof detail, "offset=%zu dwords=%zu", fills[i].offset, fills[i].count);
        check("blit-fill", ok && differ == 0, detail);
    }
    /* A known pattern in a, through the host. */
    for (size_t k = 0; k < size; ++k) {
        expect[k] = (unsigned char)(k * 7u + (k >> 10));
    }
    memcpy(host, expect, size);
    if (!copy(a, c->agents.gpu, host, c->agents.cpu, size)) {
        check("blit-setup", 0, "host to device");
        return;
    }
    /* Device to device: aligned and not, sizes that leave every phase something. */
    const struct {
        size_t src, dst, bytes;
    } copies[] = {{0, 0, size}, {4, 260, 1234567}, {1, 3, 1048581}, {7, 6, 999}, {0, 17, 5}};
    unsigned char* want = malloc(size);
    memset(host, 0xEE, size);
    if (!want || !copy(b, c->agents.gpu, host, c->agents.cpu, size)) {
        check("blit-setup", 0, "clearing b");
        return;
    }
    memset(want, 0xEE, size);
    for (unsigned i = 0; i < sizeof copies / sizeof copies[0]; ++i) {
        int ok = copy(b + copies[i].dst, c->agents.gpu, a + copies[i].src, c->agents.gpu,
                      copies[i].bytes);
        memcpy(want + copies[i].dst, expect + copies[i].src, copies[i].bytes);
        ok = ok && copy(host, c->agents.cpu, b, c->agents.gpu, size);
        size_t first_bad = size;
        for (size_t k = 0; ok && k < size; ++k) {
            if (host[k] != want[k]) {
                first_bad = k;
                break;
            }
        }
        snprintf(detail, sizeof detail, "src+%zu dst+%zu bytes=%zu first_bad=%zd", copies[i].src,
                 copies[i].dst, copies[i].bytes,
                 first_bad == size ? (ssize_t)-1 : (ssize_t)first_bad);
        check("blit-copy-d2d", ok && first_bad == size, detail);
    }
    free(want);
    free(expect);
    hsa_amd_memory_pool_free(host);
    hsa_amd_memory_pool_free(a);
    hsa_amd_memory_pool_free(b);
}

static uint64_t system_now(void) {
    uint64_t t = 0;
    hsa_system_get_info(HSA_SYSTEM_INFO_TIMESTAMP, &t);
    return t;
}

/* start and end lie in [before, after] (give or take 2 ms of clock conversion) in order. */
static void check_times(const char* name, uint64_t start, uint64_t end, uint64_t before,
                        uint64_t after) {
    uint64_t freq = 0;
    hsa_system_get_info(HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY, &freq);
    const uint64_t slack = freq / 500; /* 2 ms */
    char detail[200];
    snprintf(detail, sizeof detail,
             "start=%+.1fus end=%+.1fus after=%+.1fus (from before; %" PRIu64 " Hz)",
             ((double)start - (double)before) * 1e6 / (double)freq,
             ((double)end - (double)before) * 1e6 / (double)freq,
             ((double)after - (double)before) * 1e6 / (double)freq, freq);
    check(name, start != 0 && start <= end && start + slack >= before && end <= after + slack,
          detail);
}

void profile(struct ctx* c) {
    float *a = fine_alloc(c, N_ELEMS * 4), *b = fine_alloc(c, N_ELEMS * 4),
          *v = fine_alloc(c, N_ELEMS * 4);
    hsa_signal_t done;
    if (!a || !b || !v || !hsa_ok("signal create", hsa_signal_create(1, 0, NULL, &done)) ||
        !hsa_ok("profiler enable", hsa_amd_profiling_set_profiler_enabled(c->queue, 1))) {
        return;
    }
    struct vector_add_args va = {(uintptr_t)a, (uintptr_t)b, (uintptr_t)v, N_ELEMS};
    uint64_t before = system_now();
    const int ok = dispatch_signal(c, c->k_vector_add, &va, sizeof va, N_ELEMS, done);
    uint64_t after = system_now();
    hsa_amd_profiling_dispatch_time_t dispatch_time = {0, 0};
    if (ok && hsa_ok("dispatch time",
                     hsa_amd_profiling_get_dispatch_time(c->agents.gpu, done, &dispatch_time))) {
        check_times("profile-dispatch-time", dispatch_time.start, dispatch_time.end, before, after);
    }
    hsa_signal_destroy(done);

    /* Copies: host to device (SDMA unless HSA_ENABLE_SDMA=0), device to device (a blit kernel). */
    void *d1 = NULL, *d2 = NULL;
    if (!hsa_ok("async copy profiling", hsa_amd_profiling_async_copy_enable(1)) ||
        !hsa_ok("device allocate",
                hsa_amd_memory_pool_allocate(c->gpu_pools.coarse, N_ELEMS * 4, 0, &d1)) ||
        !hsa_ok("device allocate",
                hsa_amd_memory_pool_allocate(c->gpu_pools.coarse, N_ELEMS * 4, 0, &d2))) {
        return;
    }
    const struct {
        const char* name;
        void* dst;
        hsa_agent_t dst_agent;
        const void* src;
        hsa_agent_t src_agent;
    } copies[] = {{"profile-copy-h2d-time", d1, c->agents.gpu, a, c->agents.cpu},
                  {"profile-copy-d2d-time", d2, c->agents.gpu, d1, c->agents.gpu}};
    for (unsigned i = 0; i < 2; ++i) {
        if (!hsa_ok("signal create", hsa_signal_create(1, 0, NULL, &done))) {
            return;
        }
        before = system_now();
        int copied = hsa_ok("async copy", hsa_amd_memory_async_copy(
                                              copies[i].dst, copies[i].dst_agent, copies[i].src,
                                              copies[i].src_agent, N_ELEMS * 4, 0, NULL, done));
        copied = copied &&
                 hsa_signal_wait_scacquire(done, HSA_SIGNAL_CONDITION_LT, 1,
                                           10ull * 1000 * 1000 * 1000, HSA_WAIT_STATE_BLOCKED) == 0;
        after = system_now();
        hsa_amd_profiling_async_copy_time_t copy_time = {0, 0};
        if (copied &&
            hsa_ok("copy time", hsa_amd_profiling_get_async_copy_time(done, &copy_time))) {
            check_times(copies[i].name, copy_time.start, copy_time.end, before, after);
        }
        hsa_signal_destroy(done);
    }
    hsa_amd_profiling_async_copy_enable(0);
    hsa_amd_memory_pool_free(d1);
    hsa_amd_memory_pool_free(d2);
    hsa_amd_memory_pool_free(a);
    hsa_amd_memory_pool_free(b);
    hsa_amd_memory_pool_free(v);
}
