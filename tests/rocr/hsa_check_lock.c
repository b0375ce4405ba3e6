/*
 * xenhsa-rocr-check --lock: hsa_amd_memory_lock of the program's own malloc'd memory (what
 * HIP does to copy from and to pageable memory), at an address off any page boundary and
 * with the program's bytes around it on the same pages. The GPU's address of the range
 * (the agent pointer) is not the CPU's, as a userptr's on a discrete GPU; copies through
 * it go into and out of the program's bytes, CPU writes are seen by the GPU; after
 * hsa_amd_memory_unlock the bytes are the program's and the ones around never changed.
 * Twice: a buffer of its own mapping (malloc's for large blocks), then one at the top of
 * the program's heap (malloc's mmap threshold raised, as glibc raises it by itself once
 * large blocks are freed), whose pages the heap's allocator shares with the lock's own
 * allocations; the heap must be whole afterwards.
 */
#include <malloc.h>
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

static const char* prefix = "";
static size_t tail_bytes = 4096 + 200; /* after the range, before whatever malloc puts next */

static void held(const char* name, size_t at, size_t n) {
    char detail[96] = "";
    char full[96];
    if (at != n) {
        snprintf(detail, sizeof detail, "first difference at byte %zu of %zu", at, n);
    }
    snprintf(full, sizeof full, "%s%s", prefix, name);
    check(full, at == n, detail);
}

static void checked(const char* name, int ok) {
    char full[96];
    snprintf(full, sizeof full, "%s%s", prefix, name);
    check(full, ok, "");
}

static void lock_round(struct ctx* c) {
    const size_t n = (3u << 20) + 77;
    const size_t head = 4096 + 100;
    const size_t total = head + n + tail_bytes;
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
        checked("lock-gpu-address", gpu_view != NULL && gpu_view != (void*)range);
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
        checked("lock-neighbours-untouched", head_at == head && tail_at == total - tail);
    }
    hsa_amd_memory_pool_free(device);
    free(buffer);
}

void locked_copies(struct ctx* c) {
    prefix = "";
    lock_round(c);
    /* The heap's top: the next blocks come from the range's last page. */
    prefix = "heap-";
    tail_bytes = 200;
    if (mallopt(M_MMAP_THRESHOLD, 64 << 20) != 1) {
        /* A sanitizer's malloc (xenhsa-run preloads ASan's runtime for a sanitized guest
           library): its heap shares no pages between blocks; the release build's runs
           (script/demo) check this. */
        printf("info heap-lock skipped: malloc is not glibc's\n");
        return;
    }
    lock_round(c);
    enum { kBlocks = 256 };
    void* blocks[kBlocks];
    int whole = 1;
    for (int i = 0; i < kBlocks; ++i) {
        blocks[i] = malloc((size_t)(i + 1) * 512);
        whole = whole && blocks[i] != NULL;
        if (blocks[i] != NULL) {
            memset(blocks[i], i, (size_t)(i + 1) * 512);
        }
    }
    for (int i = 0; i < kBlocks; ++i) {
        free(blocks[i]);
    }
    checked("lock-heap-whole", whole);
}
