/*
 * xenhsa-rocr-check --lock: hsa_amd_memory_lock of the program's own malloc'd memory (what
 * HIP does to copy from and to pageable memory), at an address off any page boundary and
 * with the program's bytes around it on the same pages. The GPU's address of the range
 * (the agent pointer) is not the CPU's, as a userptr's on a discrete GPU; copies through
 * it go into and out of the program's bytes, CPU writes are seen by the GPU; after
 * hsa_amd_memory_unlock the bytes are the program's and the ones around never changed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hsa_check.h"

static unsigned char pattern(size_t i, unsigned seed) { return (unsigned char)(i * 131 + seed); }

/* The first index where [p, p + n) differs from pattern(i + from, seed), or n. */
static size_t first_off_pattern(const unsigned char* p, size_t n, size_t from, unsigned seed) {
    for (size_t i = 0; i < n; ++i) {
        if (p[i] != pattern(i + from, seed)) {
            return i;
        }
    }
    return n;
}

static void held(const char* name, size_t at, size_t n) {
    char detail[96] = "";
    if (at != n) {
        snprintf(detail, sizeof detail, "first difference at byte %zu of %zu", at, n);
    }
    check(name, at == n, detail);
}

void locked_copies(struct ctx* c) {
    const size_t n = (3u << 20) + 77;
    const size_t head = 4096 + 100;
    const size_t total = head + n + 4096 + 200;
    unsigned char* buffer = malloc(total);
    void* device = NULL;
    if (buffer == NULL || !hsa_ok("device allocate", hsa_amd_memory_pool_allocate(
                                                         c->gpu_pools.coarse, n, 0, &device))) {
        free(buffer);
        return;
    }
    for (size_t i = 0; i < total; ++i) {
        buffer[i] = pattern(i, 3);
    }
    unsigned char* range = buffer + head;
    void* gpu_view = NULL;
    if (hsa_ok("hsa_amd_memory_lock",
               hsa_amd_memory_lock(range, n, &c->agents.gpu, 1, &gpu_view))) {
        printf("info locked cpu=%p gpu=%p\n", (void*)range, gpu_view);
        check("lock-gpu-address", gpu_view != NULL && gpu_view != (void*)range, "");
        /* Out of the program's bytes, then back over different ones. */
        const int out = copy(device, c->agents.gpu, gpu_view, c->agents.cpu, n);
        memset(range, 0xee, n);
        const int in = out && copy(gpu_view, c->agents.cpu, device, c->agents.gpu, n);
        held("locked-copy-round-trip", in ? first_off_pattern(range, n, head, 3) : 0, n);
        /* The CPU writes the range; the GPU reads what it wrote. */
        for (size_t i = 0; i < n; ++i) {
            range[i] = pattern(i, 29);
        }
        int seen = copy(device, c->agents.gpu, gpu_view, c->agents.cpu, n);
        memset(range, 0, n);
        seen = seen && copy(gpu_view, c->agents.cpu, device, c->agents.gpu, n);
        held("locked-cpu-writes-seen", seen ? first_off_pattern(range, n, 0, 29) : 0, n);
        hsa_ok("hsa_amd_memory_unlock", hsa_amd_memory_unlock(range));
        held("unlocked-bytes-kept", first_off_pattern(range, n, 0, 29), n);
        range[0] ^= 0xff; /* the program's own memory again, writable */
        range[0] ^= 0xff;
        const size_t tail = head + n;
        const size_t head_at = first_off_pattern(buffer, head, 0, 3);
        const size_t tail_at = first_off_pattern(buffer + tail, total - tail, tail, 3);
        check("lock-neighbours-untouched", head_at == head && tail_at == total - tail, "");
    }
    hsa_amd_memory_pool_free(device);
    free(buffer);
}
