/* xenhsa-rocr-check: system memory, two programs' isolation and image support: --system-mib,
 * --system-mib-refused, --isolation, --images. */
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

/* `mib` MiB of fine-grained system memory, filled by the GPU and checked dword by dword;
 * 0 when the allocation was refused (`status`). */
static int system_fill(struct ctx* c, size_t mib, const char* name, hsa_status_t* status) {
    const size_t size = mib << 20;
    void* p = NULL;
    *status = hsa_amd_memory_pool_allocate(c->cpu_pools.fine, size, 0, &p);
    if (*status != HSA_STATUS_SUCCESS) {
        return 0;
    }
    char detail[160];
    const uint32_t value = 0x5EC7A11Fu ^ (uint32_t)mib;
    int ok = hsa_ok("allow access", hsa_amd_agents_allow_access(1, &c->agents.gpu, NULL, p)) &&
             hsa_ok("memory fill", hsa_amd_memory_fill(p, value, size / 4));
    size_t differ = 0;
    const uint32_t* words = p;
    for (size_t k = 0; ok && k < size / 4; ++k) {
        differ += words[k] != value;
    }
    snprintf(detail, sizeof detail, "mib=%zu differing-dwords=%zu", mib, differ);
    check(name, ok && differ == 0, detail);
    hsa_amd_memory_pool_free(p);
    return 1;
}

/* The system pool's size as ROCr reports it, then an allocation of `mib` MiB. */
void system_memory(struct ctx* c, size_t mib, int expect_refused) {
    size_t size = 0, alloc_max = 0;
    hsa_amd_memory_pool_get_info(c->cpu_pools.fine, HSA_AMD_MEMORY_POOL_INFO_SIZE, &size);
    hsa_amd_memory_pool_get_info(c->cpu_pools.fine, HSA_AMD_MEMORY_POOL_INFO_ALLOC_MAX_SIZE,
                                 &alloc_max);
    printf("info system-pool size=%zu alloc-max=%zu\n", size, alloc_max);
    fflush(stdout);
    hsa_status_t status = HSA_STATUS_SUCCESS;
    const int allocated = system_fill(c, mib, "system-fill", &status);
    const char* name = NULL;
    hsa_status_string(status, &name);
    char detail[200];
    snprintf(detail, sizeof detail, "mib=%zu status=%d %s", mib, (int)status, name ? name : "");
    if (!expect_refused) {
        check("system-alloc", allocated, detail);
        return;
    }
    check("system-alloc-refused", !allocated && status == HSA_STATUS_ERROR_OUT_OF_RESOURCES,
          detail);
    /* Nothing is lost: a smaller allocation works after it. */
    check("system-alloc-after-refusal", system_fill(c, 16, "system-fill-after-refusal", &status),
          "mib=16");
}

/* Waits (up to 60 s) until DIR holds `want` files whose names start with `prefix`. */
static int wait_for_files(const char* dir, const char* prefix, unsigned want) {
    for (int tries = 0; tries < 6000; ++tries) {
        unsigned n = 0;
        DIR* d = opendir(dir);
        for (struct dirent* e = d ? readdir(d) : NULL; e != NULL; e = readdir(d)) {
            n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
        }
        if (d) {
            closedir(d);
        }
        if (n >= want) {
            return 1;
        }
        usleep(10 * 1000);
    }
    return 0;
}

static void touch(const char* dir, const char* prefix) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s%d", dir, prefix, (int)getpid());
    FILE* f = fopen(path, "w");
    if (f) {
        fclose(f);
    }
}

/* Two copies of this program in one guest at once, each over a device of its own: each
 * fills a buffer of device memory and one of system memory with its own value on the GPU,
 * and tells the other through DIR; once both have, each reads its buffers back. Every
 * dword must be its own value: one GPU address space between the two would show the
 * other's, at the same VA (the test compares the VAs both print). */
void isolation(struct ctx* c, uint32_t value, const char* dir) {
    void* device = NULL;
    uint32_t* system = fine_alloc(c, N_ELEMS * 4);
    uint32_t* back = fine_alloc(c, N_ELEMS * 4);
    if (!hsa_ok("device allocate",
                hsa_amd_memory_pool_allocate(c->gpu_pools.coarse, N_ELEMS * 4, 0, &device)) ||
        !system || !back) {
        return;
    }
    printf("info isolation device-va=%p system-va=%p\n", device, (void*)system);
    fflush(stdout);
    struct fill_args fd = {(uintptr_t)device, N_ELEMS, value, 0};
    struct fill_args fs = {(uintptr_t)system, N_ELEMS, value, 0};
    const int filled = dispatch(c, c->k_fill, &fd, sizeof fd, N_ELEMS) &&
                       dispatch(c, c->k_fill, &fs, sizeof fs, N_ELEMS);
    touch(dir, "filled-");
    const int both = wait_for_files(dir, "filled-", 2);
    check("isolation-other-filled", both, dir);
    const int read = filled && copy(back, c->agents.cpu, device, c->agents.gpu, N_ELEMS * 4);
    unsigned wrong_device = 0, wrong_system = 0;
    for (unsigned i = 0; read && i < N_ELEMS; ++i) {
        wrong_device += back[i] != value;
        wrong_system += system[i] != value;
    }
    char detail[160];
    snprintf(detail, sizeof detail, "value=%#x n=%u wrong-device=%u wrong-system=%u", value,
             N_ELEMS, wrong_device, wrong_system);
    check("isolation-own-data", read && wrong_device == 0 && wrong_system == 0, detail);
    /* Neither frees its buffers before the other has read its own. */
    touch(dir, "read-");
    check("isolation-other-read", wait_for_files(dir, "read-", 2), dir);
    hsa_amd_memory_pool_free(device);
    hsa_amd_memory_pool_free(system);
    hsa_amd_memory_pool_free(back);
}

/* ROCr's image support, which HIP initialises: its first use sets up the GPU's address
 * library from hsaKmtGetTileConfig (and aborts when that fails). A 2D RGBA8 image must be
 * reported readable and writable, as on any GFX9 GPU. */
void images(struct ctx* c) {
    hsa_ext_image_format_t format = {HSA_EXT_IMAGE_CHANNEL_TYPE_UNORM_INT8,
                                     HSA_EXT_IMAGE_CHANNEL_ORDER_RGBA};
    uint32_t capability = 0;
    const hsa_status_t s = hsa_ext_image_get_capability(c->agents.gpu, HSA_EXT_IMAGE_GEOMETRY_2D,
                                                        &format, &capability);
    char detail[96];
    snprintf(detail, sizeof detail, "status=%d capability=%#x", (int)s, capability);
    check("image-capability",
          s == HSA_STATUS_SUCCESS && (capability & HSA_EXT_IMAGE_CAPABILITY_READ_WRITE) != 0,
          detail);
}
