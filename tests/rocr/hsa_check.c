/*
 * xenhsa-rocr-check: a ROCm program as a user writes it, against Debian's
 * libhsa-runtime64 (hsa.h, hsa_ext_amd.h) and nothing of xenhsa's but the handles of the
 * backend's built-in kernels, which the guest libhsakmt publishes after hsa_init() as
 * XENHSA_KERNEL_<NAME> (docs/guest-rocm.md). Run it under xenhsa-run.
 *
 *   xenhsa-rocr-check                 one pass: fill, vector_add, async copies, verified
 *   xenhsa-rocr-check --repeat N      N passes (0: until killed); "info repeating" after the
 *                                     first, for a test that kills it mid-dispatch
 *   xenhsa-rocr-check --wait-ms MS    also: one thread waits on a signal that another sets
 *                                     after MS ms; prints the waiter's CPU time
 *   xenhsa-rocr-check --fault         dispatches a read far past its buffer: ROCr's VM-fault
 *                                     handler is expected to report it and abort the
 *                                     process (SIGABRT), as on a GPU; a wait that times
 *                                     out instead is a failed check
 *   xenhsa-rocr-check --blits         ROCr's own blit kernels: hsa_amd_memory_fill of device
 *                                     memory, device-to-device copies, aligned and not,
 *                                     of sizes that reach every phase of the kernels, each
 *                                     verified byte for byte (run it with HSA_ENABLE_SDMA=0
 *                                     too: every copy is then a blit kernel)
 *   xenhsa-rocr-check --profile       dispatch and copy times (profiling enabled on the
 *                                     queue, and for async copies): start <= end, both
 *                                     within the wall time around them, in ROCr's system
 *                                     timestamp domain
 *   xenhsa-rocr-check --queue-error CAUSE
 *                                     submits a packet the GPU stops its queue on (CAUSE:
 *                                     code, an unknown code object; dimensions, a dispatch
 *                                     of 0 dimensions; packet, an agent-dispatch packet) to
 *                                     a queue created with an error callback: the callback
 *                                     is expected within 1 s with the status ROCr maps the
 *                                     cause to
 *   xenhsa-rocr-check --queue-error-abort CAUSE
 *                                     the same on a queue without a callback: ROCr's default
 *                                     handler is expected to print why and abort (SIGABRT)
 *   xenhsa-rocr-check --fork          forks after hsa_init: the child's libhsakmt calls must
 *                                     answer HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED (20,
 *                                     as the real thunk's) and leave the parent's device
 *                                     alone, its hsaKmtCloseKFD included; the parent
 *                                     then computes again
 *   xenhsa-rocr-check --fork-opens    the same, where the guest has a device free: the
 *                                     child's hsaKmtOpenKFD must succeed (a device of its
 *                                     own, as the real thunk opens anew in a child), and
 *                                     its calls and close after it
 *   xenhsa-rocr-check --close-under-wait
 *                                     without ROCr (whose threads would use the memory the
 *                                     close gives back): libhsakmt.so.1 loaded and opened
 *                                     directly, and closed while another thread waits in
 *                                     hsaKmtWaitOnEvent: the wait must end with an error
 *                                     within 1 s and nothing may touch the closed session
 *   xenhsa-rocr-check --system-mib N  prints the fine-grained system pool's size and
 *                                     ALLOC_MAX_SIZE, allocates N MiB there, fills it on the
 *                                     GPU (hsa_amd_memory_fill) and checks every dword
 *   xenhsa-rocr-check --system-mib-refused N
 *                                     the allocation of N MiB is expected to be refused
 *                                     (HSA_STATUS_ERROR_OUT_OF_RESOURCES), and 16 MiB to be
 *                                     allocated and filled after it
 *
 *   xenhsa-rocr-check --images         ROCr's image support (which HIP initialises): the
 *                                     capabilities of a 2D RGBA8 image on the GPU
 *   xenhsa-rocr-check --lock          hsa_amd_memory_lock of the program's own memory, copies
 *                                     through its GPU address (hsa_check_lock.c)
 *   xenhsa-rocr-check --isolation VALUE DIR
 *                                     run twice at once in one guest (DIR shared, VALUEs
 *                                     different): each fills device and system memory with
 *                                     VALUE on the GPU, waits for the other, and checks that
 *                                     it reads its own VALUE back (it prints the VAs)
 *
 * Output: "check <name> ok|FAIL ...", "info ...", last "summary rocr-check ... result=ok".
 * Exit code 0 iff every check held.
 */
#define _GNU_SOURCE
#include "hsa_check.h"

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

#define N_ELEMS (64u * 1024u)
#define COPY_BYTES (4u << 20)

static unsigned checks, failures;

void check(const char* name, int ok, const char* detail) {
    ++checks;
    failures += ok ? 0 : 1;
    printf("check %s %s%s%s\n", name, ok ? "ok" : "FAIL", detail[0] ? " " : "", detail);
    fflush(stdout);
}

int hsa_ok(const char* what, hsa_status_t s) {
    if (s == HSA_STATUS_SUCCESS) {
        return 1;
    }
    const char* msg = NULL;
    hsa_status_string(s, &msg);
    char detail[256];
    snprintf(detail, sizeof detail, "%s: %s", what, msg ? msg : "?");
    check(what, 0, detail);
    return 0;
}

static hsa_status_t find_agent(hsa_agent_t agent, void* data) {
    struct agents* a = data;
    hsa_device_type_t type;
    hsa_agent_get_info(agent, HSA_AGENT_INFO_DEVICE, &type);
    if (type == HSA_DEVICE_TYPE_GPU && !a->have_gpu) {
        a->gpu = agent;
        a->have_gpu = 1;
    } else if (type == HSA_DEVICE_TYPE_CPU && !a->have_cpu) {
        a->cpu = agent;
        a->have_cpu = 1;
    }
    return HSA_STATUS_SUCCESS;
}

static hsa_status_t find_pool(hsa_amd_memory_pool_t pool, void* data) {
    struct pools* p = data;
    hsa_amd_segment_t segment;
    uint32_t flags = 0;
    hsa_amd_memory_pool_get_info(pool, HSA_AMD_MEMORY_POOL_INFO_SEGMENT, &segment);
    if (segment != HSA_AMD_SEGMENT_GLOBAL) {
        return HSA_STATUS_SUCCESS;
    }
    hsa_amd_memory_pool_get_info(pool, HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS, &flags);
    if ((flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT) && !p->have_kernarg) {
        p->kernarg = pool;
        p->have_kernarg = 1;
    } else if ((flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED) && !p->have_fine) {
        p->fine = pool;
        p->have_fine = 1;
    } else if ((flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED) && !p->have_coarse) {
        p->coarse = pool;
        p->have_coarse = 1;
    }
    return HSA_STATUS_SUCCESS;
}

static uint64_t kernel_object(const char* name) {
    char var[64];
    snprintf(var, sizeof var, "XENHSA_KERNEL_%s", name);
    const char* value = getenv(var);
    return value ? strtoull(value, NULL, 0) : 0;
}

static double now_ms(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

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

/* Dispatches on c->queue and waits for `done` (which the caller made, at 1). */
static int dispatch_signal(struct ctx* c, uint64_t kernel, const void* args, size_t args_size,
                           uint32_t items, hsa_signal_t done);

static int dispatch(struct ctx* c, uint64_t kernel, const void* args, size_t args_size,
                    uint32_t items) {
    hsa_signal_t done;
    if (!hsa_ok("signal create", hsa_signal_create(1, 0, NULL, &done))) {
        return 0;
    }
    const int ok = dispatch_signal(c, kernel, args, args_size, items, done);
    hsa_signal_destroy(done);
    return ok;
}

static int dispatch_signal(struct ctx* c, uint64_t kernel, const void* args, size_t args_size,
                           uint32_t items, hsa_signal_t done) {
    void* kernarg = NULL;
    if (!hsa_ok("kernarg allocate",
                hsa_amd_memory_pool_allocate(c->cpu_pools.kernarg, 4096, 0, &kernarg)) ||
        !hsa_ok("kernarg allow access",
                hsa_amd_agents_allow_access(1, &c->agents.gpu, NULL, kernarg))) {
        return 0;
    }
    memcpy(kernarg, args, args_size);
    hsa_queue_t* q = c->queue;
    const uint64_t index = hsa_queue_add_write_index_relaxed(q, 1);
    while (index - hsa_queue_load_read_index_scacquire(q) >= q->size) {
    }
    hsa_kernel_dispatch_packet_t* packet =
        (hsa_kernel_dispatch_packet_t*)q->base_address + (index & (q->size - 1));
    memset((char*)packet + 2, 0, sizeof *packet - 2);
    packet->setup = 1 << HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS;
    packet->workgroup_size_x = 256;
    packet->workgroup_size_y = packet->workgroup_size_z = 1;
    packet->grid_size_x = (items + 255) / 256 * 256;
    packet->grid_size_y = packet->grid_size_z = 1;
    packet->kernel_object = kernel;
    packet->kernarg_address = kernarg;
    packet->completion_signal = done;
    const uint16_t header = (HSA_PACKET_TYPE_KERNEL_DISPATCH << HSA_PACKET_HEADER_TYPE) |
                            (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE) |
                            (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE);
    __atomic_store_n(&packet->header, header, __ATOMIC_RELEASE);
    hsa_signal_store_screlease(q->doorbell_signal, (hsa_signal_value_t)index);
    const hsa_signal_value_t left = hsa_signal_wait_scacquire(
        done, HSA_SIGNAL_CONDITION_LT, 1, 10ull * 1000 * 1000 * 1000, HSA_WAIT_STATE_BLOCKED);
    hsa_amd_memory_pool_free(kernarg);
    return left == 0;
}

int copy(void* dst, hsa_agent_t dst_agent, const void* src, hsa_agent_t src_agent, size_t size) {
    hsa_signal_t done;
    if (!hsa_ok("signal create", hsa_signal_create(1, 0, NULL, &done))) {
        return 0;
    }
    int ok = hsa_ok("async copy",
                    hsa_amd_memory_async_copy(dst, dst_agent, src, src_agent, size, 0, NULL, done));
    if (ok) {
        ok = hsa_signal_wait_scacquire(done, HSA_SIGNAL_CONDITION_LT, 1, 10ull * 1000 * 1000 * 1000,
                                       HSA_WAIT_STATE_BLOCKED) == 0;
    }
    hsa_signal_destroy(done);
    return ok;
}

static void* fine_alloc(struct ctx* c, size_t size) {
    void* p = NULL;
    if (!hsa_ok("fine-grained allocate",
                hsa_amd_memory_pool_allocate(c->cpu_pools.fine, size, 0, &p)) ||
        !hsa_ok("allow access", hsa_amd_agents_allow_access(1, &c->agents.gpu, NULL, p))) {
        return NULL;
    }
    return p;
}

static int one_pass(struct ctx* c, unsigned pass) {
    char detail[160];
    const unsigned failed_before = failures;
    /* vector_add on fine-grained host memory. */
    float *a = fine_alloc(c, N_ELEMS * 4), *b = fine_alloc(c, N_ELEMS * 4),
          *v = fine_alloc(c, N_ELEMS * 4);
    if (!a || !b || !v) {
        return 0;
    }
    for (unsigned i = 0; i < N_ELEMS; ++i) {
        a[i] = (float)i;
        b[i] = (float)(2 * i + pass);
        v[i] = -1.0f;
    }
    struct vector_add_args va = {(uintptr_t)a, (uintptr_t)b, (uintptr_t)v, N_ELEMS};
    int ok = dispatch(c, c->k_vector_add, &va, sizeof va, N_ELEMS);
    unsigned wrong = 0;
    for (unsigned i = 0; ok && i < N_ELEMS; ++i) {
        wrong += v[i] != (float)(3 * i + pass);
    }
    snprintf(detail, sizeof detail, "n=%u wrong=%u", N_ELEMS, wrong);
    check("vector-add", ok && wrong == 0, detail);

    /* fill into coarse-grained device memory, read back through an async copy. */
    void* device = NULL;
    uint32_t* back = fine_alloc(c, N_ELEMS * 4);
    if (hsa_ok("device allocate",
               hsa_amd_memory_pool_allocate(c->gpu_pools.coarse, COPY_BYTES, 0, &device)) &&
        back) {
        struct fill_args fa = {(uintptr_t)device, N_ELEMS, 0xC0FFEE00u + pass, 0};
        ok = dispatch(c, c->k_fill, &fa, sizeof fa, N_ELEMS);
        ok = ok && copy(back, c->agents.cpu, device, c->agents.gpu, N_ELEMS * 4);
        wrong = 0;
        for (unsigned i = 0; ok && i < N_ELEMS; ++i) {
            wrong += back[i] != 0xC0FFEE00u + pass;
        }
        snprintf(detail, sizeof detail, "n=%u wrong=%u", N_ELEMS, wrong);
        check("fill-device", ok && wrong == 0, detail);

        /* host -> device -> host, byte for byte. */
        unsigned char *src = fine_alloc(c, COPY_BYTES), *dst = fine_alloc(c, COPY_BYTES);
        if (src && dst) {
            for (unsigned i = 0; i < COPY_BYTES; ++i) {
                src[i] = (unsigned char)(i * 131u + pass * 7u + (i >> 12));
            }
            memset(dst, 0x5A, COPY_BYTES);
            ok = copy(device, c->agents.gpu, src, c->agents.cpu, COPY_BYTES) &&
                 copy(dst, c->agents.cpu, device, c->agents.gpu, COPY_BYTES);
            const int same = ok && memcmp(src, dst, COPY_BYTES) == 0;
            snprintf(detail, sizeof detail, "bytes=%u", COPY_BYTES);
            check("async-copy", same, detail);
        }
        hsa_amd_memory_pool_free(src);
        hsa_amd_memory_pool_free(dst);
    }
    hsa_amd_memory_pool_free(device);
    hsa_amd_memory_pool_free(back);
    hsa_amd_memory_pool_free(a);
    hsa_amd_memory_pool_free(b);
    hsa_amd_memory_pool_free(v);
    return failures == failed_before;
}

struct setter {
    hsa_signal_t signal;
    unsigned delay_ms;
};

static void* set_later(void* arg) {
    struct setter* s = arg;
    struct timespec ts = {s->delay_ms / 1000, (long)(s->delay_ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
    hsa_signal_store_screlease(s->signal, 0);
    return NULL;
}

/* One thread blocks in hsa_signal_wait_scacquire until another sets the signal. */
static void long_wait(unsigned delay_ms) {
    struct setter s = {{0}, delay_ms};
    if (!hsa_ok("signal create", hsa_signal_create(1, 0, NULL, &s.signal))) {
        return;
    }
    pthread_t thread;
    pthread_create(&thread, NULL, set_later, &s);
    printf("info long-wait-start\n");
    fflush(stdout);
    const double cpu0 = now_ms(CLOCK_THREAD_CPUTIME_ID), wall0 = now_ms(CLOCK_MONOTONIC);
    const hsa_signal_value_t value = hsa_signal_wait_scacquire(s.signal, HSA_SIGNAL_CONDITION_LT, 1,
                                                               UINT64_MAX, HSA_WAIT_STATE_BLOCKED);
    const double cpu = now_ms(CLOCK_THREAD_CPUTIME_ID) - cpu0;
    const double wall = now_ms(CLOCK_MONOTONIC) - wall0;
    pthread_join(thread, NULL);
    hsa_signal_destroy(s.signal);
    char detail[128];
    snprintf(detail, sizeof detail, "value=%" PRId64 " wall_ms=%.1f", (int64_t)value, wall);
    check("long-wait-woken", value == 0 && wall >= delay_ms * 0.9, detail);
    printf("info long-wait wall_ms=%.1f cpu_ms=%.2f cpu_share=%.4f\n", wall, cpu, cpu / wall);
}

/* Returns only if the fault went unnoticed. */
static void fault(struct ctx* c) {
    uint32_t* buffer = fine_alloc(c, 4096);
    const uint64_t k_oob = kernel_object("OOB_READ");
    if (!buffer || !k_oob) {
        check("fault-setup", 0, "no buffer or no OOB_READ kernel");
        return;
    }
    printf("info dispatching-fault\n");
    fflush(stdout);
    struct oob_read_args args = {(uintptr_t)buffer, 1u << 30, (uintptr_t)buffer};
    const int completed = dispatch(c, k_oob, &args, sizeof args, 1);
    check(
        "fault-reported", 0,
        completed ? "the faulting dispatch completed" : "ROCr's wait timed out: no fault reported");
}

/* A child forked from this ROCm process calls libhsakmt (found as any program would, by
 * its symbols), closes it and exits; the parent's session must not notice. */
static void forked(struct ctx* c, int opens) {
    int (*get_version)(void*) = (int (*)(void*))dlsym(RTLD_DEFAULT, "hsaKmtGetVersion");
    int (*open_kfd)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "hsaKmtOpenKFD");
    int (*close_kfd)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "hsaKmtCloseKFD");
    if (get_version == NULL || open_kfd == NULL || close_kfd == NULL) {
        check("fork-child", 0, "no hsaKmt symbols in the process");
        return;
    }
    fflush(stdout);
    const pid_t pid = fork();
    if (pid == 0) {
        unsigned char version[64];
        const int before = get_version(version);
        const int opened = open_kfd();
        const int after = get_version(version);
        const int closed = close_kfd();
        printf("info fork-child get-version=%d open=%d get-version-after=%d close=%d\n", before,
               opened, after, closed);
        fflush(stdout);
        /* _exit: the child's copy of ROCr was never shut down (a sanitized build's leak
         * check would count it). */
        if (opens) {
            /* A device of its own: the child's libhsakmt works from its open to its close. */
            _exit(before == 20 && opened == 0 && after == 0 && closed == 0 ? 0 : 1);
        }
        _exit(before == 20 && opened == 20 && after == 20 && closed == 20 ? 0 : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    char detail[64];
    snprintf(detail, sizeof detail, "child status %d", status);
    check("fork-child", pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0, detail);
    check("fork-parent-goes-on", one_pass(c, 1), "");
}

struct waiter {
    HSAKMT_STATUS (*wait)(HsaEvent*, HSAuint32);
    HsaEvent* event;
    HSAKMT_STATUS status;
    double ended_ms;
};

static void* wait_long(void* arg) {
    struct waiter* w = arg;
    w->status = w->wait(w->event, 60000);
    w->ended_ms = now_ms(CLOCK_MONOTONIC);
    return NULL;
}

/* Returns 1 when the checks held. */
static int close_under_wait(void) {
    HSAKMT_STATUS (*open_kfd)(void) = (HSAKMT_STATUS(*)(void))dlsym(RTLD_DEFAULT, "hsaKmtOpenKFD");
    HSAKMT_STATUS(*close_kfd)
    (void) = (HSAKMT_STATUS(*)(void))dlsym(RTLD_DEFAULT, "hsaKmtCloseKFD");
    HSAKMT_STATUS(*create)
    (HsaEventDescriptor*, bool, bool, HsaEvent**) = (HSAKMT_STATUS(*)(
        HsaEventDescriptor*, bool, bool, HsaEvent**))dlsym(RTLD_DEFAULT, "hsaKmtCreateEvent");
    struct waiter w = {
        (HSAKMT_STATUS(*)(HsaEvent*, HSAuint32))dlsym(RTLD_DEFAULT, "hsaKmtWaitOnEvent"), NULL,
        HSAKMT_STATUS_SUCCESS, 0};
    if (!open_kfd || !close_kfd || !create || !w.wait) {
        check("close-under-wait", 0, "no hsaKmt symbols in the process");
        return 0;
    }
    HsaEventDescriptor desc;
    memset(&desc, 0, sizeof desc);
    desc.EventType = HSA_EVENTTYPE_SIGNAL;
    if (open_kfd() != HSAKMT_STATUS_SUCCESS ||
        create(&desc, false, false, &w.event) != HSAKMT_STATUS_SUCCESS) {
        check("close-under-wait", 0, "open or event create failed");
        return 0;
    }
    pthread_t thread;
    pthread_create(&thread, NULL, wait_long, &w);
    usleep(300 * 1000); /* the waiter is in its wait */
    const double closing = now_ms(CLOCK_MONOTONIC);
    const HSAKMT_STATUS closed = close_kfd(); /* the last: the session goes */
    pthread_join(thread, NULL);
    char detail[160];
    snprintf(detail, sizeof detail, "close=%d wait=%d after_ms=%.1f", (int)closed, (int)w.status,
             w.ended_ms - closing);
    const int ok = closed == HSAKMT_STATUS_SUCCESS && w.status != HSAKMT_STATUS_SUCCESS &&
                   w.ended_ms - closing < 1000;
    check("close-under-wait", ok, detail);
    return ok;
}

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
static void system_memory(struct ctx* c, size_t mib, int expect_refused) {
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
static void isolation(struct ctx* c, uint32_t value, const char* dir) {
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
static void images(struct ctx* c) {
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

/* Device memory filled and copied by ROCr's blit kernels, read back and compared. */
static void blits(struct ctx* c) {
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

static void profile(struct ctx* c) {
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

struct queue_error {
    int reported;
    hsa_status_t status;
    double at_ms;
};

static void on_queue_error(hsa_status_t status, hsa_queue_t* source, void* data) {
    (void)source;
    struct queue_error* e = data;
    e->status = status;
    e->at_ms = now_ms(CLOCK_MONOTONIC);
    __atomic_store_n(&e->reported, 1, __ATOMIC_RELEASE);
}

/* A packet the GPU stops the queue on, and the status ROCr reports for it. */
static int bad_packet(struct ctx* c, const char* cause, hsa_kernel_dispatch_packet_t* packet,
                      uint16_t* type, hsa_status_t* expected) {
    static uint64_t not_code[64] __attribute__((aligned(256)));
    memset(packet, 0, sizeof *packet);
    packet->setup = 1 << HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS;
    packet->workgroup_size_x = packet->workgroup_size_y = packet->workgroup_size_z = 1;
    packet->grid_size_x = packet->grid_size_y = packet->grid_size_z = 1;
    packet->kernel_object = c->k_fill;
    *type = HSA_PACKET_TYPE_KERNEL_DISPATCH;
    if (strcmp(cause, "code") == 0) {
        packet->kernel_object = (uintptr_t)not_code;
        *expected = HSA_STATUS_ERROR_INVALID_CODE_OBJECT;
    } else if (strcmp(cause, "dimensions") == 0) {
        packet->setup = 0;
        *expected = HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS;
    } else if (strcmp(cause, "packet") == 0) {
        *type = HSA_PACKET_TYPE_AGENT_DISPATCH;
        *expected = HSA_STATUS_ERROR_INVALID_PACKET_FORMAT;
    } else {
        return 0;
    }
    return 1;
}

/* Stores the packet at the queue's next slot and rings the doorbell; waits for nothing. */
static void submit(hsa_queue_t* q, const hsa_kernel_dispatch_packet_t* body, uint16_t type) {
    const uint64_t index = hsa_queue_add_write_index_relaxed(q, 1);
    hsa_kernel_dispatch_packet_t* packet =
        (hsa_kernel_dispatch_packet_t*)q->base_address + (index & (q->size - 1));
    memcpy((char*)packet + 2, (const char*)body + 2, sizeof *packet - 2);
    const uint16_t header =
        (uint16_t)((type << HSA_PACKET_HEADER_TYPE) |
                   (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE) |
                   (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE));
    __atomic_store_n(&packet->header, header, __ATOMIC_RELEASE);
    hsa_signal_store_screlease(q->doorbell_signal, (hsa_signal_value_t)index);
}

static void queue_error(struct ctx* c, const char* cause, int with_callback) {
    hsa_kernel_dispatch_packet_t packet;
    uint16_t type = 0;
    hsa_status_t expected = HSA_STATUS_SUCCESS;
    if (!bad_packet(c, cause, &packet, &type, &expected)) {
        check("queue-error-cause", 0, cause);
        return;
    }
    if (!with_callback) {
        printf("info dispatching-queue-error cause=%s\n", cause);
        fflush(stdout);
        submit(c->queue, &packet, type);
        sleep(5);
        check("queue-error-aborted", 0, "still running 5 s after the queue's error");
        return;
    }
    struct queue_error e = {0, HSA_STATUS_SUCCESS, 0};
    hsa_queue_t* q = NULL;
    if (!hsa_ok("hsa_queue_create",
                hsa_queue_create(c->agents.gpu, 64, HSA_QUEUE_TYPE_SINGLE, on_queue_error, &e,
                                 UINT32_MAX, UINT32_MAX, &q))) {
        return;
    }
    const double t0 = now_ms(CLOCK_MONOTONIC);
    submit(q, &packet, type);
    while (!__atomic_load_n(&e.reported, __ATOMIC_ACQUIRE) && now_ms(CLOCK_MONOTONIC) - t0 < 5000) {
        usleep(1000);
    }
    const int reported = __atomic_load_n(&e.reported, __ATOMIC_ACQUIRE);
    const char* got = "none";
    const char* want = "?";
    if (reported) {
        hsa_status_string(e.status, &got);
    }
    hsa_status_string(expected, &want);
    char detail[512];
    snprintf(detail, sizeof detail, "cause=%s status=\"%s\" expected=\"%s\" after_ms=%.1f", cause,
             got ? got : "?", want ? want : "?", reported ? e.at_ms - t0 : -1.0);
    check("queue-error-reported", reported && e.status == expected, detail);
    check("queue-error-within-1s", reported && e.at_ms - t0 <= 1000.0, detail);
    check("queue-error-queue-destroy", hsa_queue_destroy(q) == HSA_STATUS_SUCCESS, "");
}

int main(int argc, char** argv) {
    long repeat = 1;
    unsigned wait_ms = 0;
    int do_fault = 0;
    int do_blits = 0;
    int do_profile = 0;
    const char* error_cause = NULL;
    int error_callback = 0;
    size_t system_mib = 0;
    int system_refused = 0;
    int do_fork = 0;
    int do_close_under_wait = 0;
    const char* isolation_dir = NULL;
    int do_images = 0;
    int do_lock = 0;
    uint32_t isolation_value = 0;
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--repeat") == 0 && i + 1 < argc) {
            repeat = strtol(argv[++i], NULL, 10);
        } else if (strcmp(argv[i], "--wait-ms") == 0 && i + 1 < argc) {
            wait_ms = (unsigned)strtoul(argv[++i], NULL, 10);
        } else if (strcmp(argv[i], "--fault") == 0) {
            do_fault = 1;
        } else if (strcmp(argv[i], "--blits") == 0) {
            do_blits = 1;
        } else if (strcmp(argv[i], "--profile") == 0) {
            do_profile = 1;
        } else if (strcmp(argv[i], "--queue-error") == 0 && i + 1 < argc) {
            error_cause = argv[++i];
            error_callback = 1;
        } else if (strcmp(argv[i], "--queue-error-abort") == 0 && i + 1 < argc) {
            error_cause = argv[++i];
            error_callback = 0;
        } else if (strcmp(argv[i], "--fork") == 0) {
            do_fork = 1;
        } else if (strcmp(argv[i], "--fork-opens") == 0) {
            do_fork = 2;
        } else if (strcmp(argv[i], "--isolation") == 0 && i + 2 < argc) {
            isolation_value = (uint32_t)strtoul(argv[++i], NULL, 0);
            isolation_dir = argv[++i];
        } else if (strcmp(argv[i], "--images") == 0) {
            do_images = 1;
        } else if (strcmp(argv[i], "--lock") == 0) {
            do_lock = 1;
        } else if (strcmp(argv[i], "--close-under-wait") == 0) {
            do_close_under_wait = 1;
        } else if (strcmp(argv[i], "--system-mib") == 0 && i + 1 < argc) {
            system_mib = strtoull(argv[++i], NULL, 10);
        } else if (strcmp(argv[i], "--system-mib-refused") == 0 && i + 1 < argc) {
            system_mib = strtoull(argv[++i], NULL, 10);
            system_refused = 1;
        } else {
            fprintf(
                stderr,
                "usage: %s [--repeat N] [--wait-ms MS] [--blits] [--profile] [--fault] "
                "[--queue-error CAUSE] "
                "[--queue-error-abort CAUSE] [--system-mib N] [--system-mib-refused N] "
                "[--fork] [--fork-opens] [--close-under-wait] [--isolation VALUE DIR] [--images] "
                "[--lock]\n",
                argv[0]);
            return 2;
        }
    }
    struct ctx c;
    memset(&c, 0, sizeof c);
    printf("info pid=%d\n", (int)getpid());
    fflush(stdout);
    if (do_close_under_wait) {
        const int ok = close_under_wait();
        printf("summary rocr-check checks=%u failed=%u result=%s\n", checks, failures,
               ok ? "ok" : "FAIL");
        return ok ? 0 : 1;
    }
    if (!hsa_ok("hsa_init", hsa_init())) {
        return 1;
    }
    hsa_iterate_agents(find_agent, &c.agents);
    check("agents", c.agents.have_cpu && c.agents.have_gpu, "");
    if (!c.agents.have_gpu || !c.agents.have_cpu) {
        return 1;
    }
    char name[64] = {0};
    hsa_agent_get_info(c.agents.gpu, HSA_AGENT_INFO_NAME, name);
    printf("info gpu name=%s\n", name);
    hsa_amd_agent_iterate_memory_pools(c.agents.cpu, find_pool, &c.cpu_pools);
    hsa_amd_agent_iterate_memory_pools(c.agents.gpu, find_pool, &c.gpu_pools);
    check("pools", c.cpu_pools.have_kernarg && c.cpu_pools.have_fine && c.gpu_pools.have_coarse,
          "");
    c.k_fill = kernel_object("FILL");
    c.k_vector_add = kernel_object("VECTOR_ADD");
    check("kernels", c.k_fill != 0 && c.k_vector_add != 0, "");
    if (failures == 0 &&
        hsa_ok("hsa_queue_create", hsa_queue_create(c.agents.gpu, 1024, HSA_QUEUE_TYPE_SINGLE, NULL,
                                                    NULL, UINT32_MAX, UINT32_MAX, &c.queue))) {
        for (long pass = 0; repeat == 0 || pass < repeat; ++pass) {
            if (!one_pass(&c, (unsigned)pass)) {
                break;
            }
            if (pass == 0 && repeat != 1) {
                printf("info repeating\n");
                fflush(stdout);
            }
        }
        if (wait_ms != 0) {
            long_wait(wait_ms);
        }
        if (do_blits) {
            blits(&c);
        }
        if (do_profile) {
            profile(&c);
        }
        if (system_mib != 0) {
            system_memory(&c, system_mib, system_refused);
        }
        if (do_fork) {
            forked(&c, do_fork == 2);
        }
        if (do_images) {
            images(&c);
        }
        if (do_lock) {
            locked_copies(&c);
        }
        if (isolation_dir != NULL) {
            isolation(&c, isolation_value, isolation_dir);
        }

        if (do_fault) {
            fault(&c);
        }
        if (error_cause != NULL) {
            queue_error(&c, error_cause, error_callback);
        }
        check("queue-destroy", hsa_queue_destroy(c.queue) == HSA_STATUS_SUCCESS, "");
    }
    check("shut-down", hsa_shut_down() == HSA_STATUS_SUCCESS, "");
    printf("summary rocr-check checks=%u failed=%u result=%s\n", checks, failures,
           failures == 0 ? "ok" : "FAIL");
    return failures == 0 ? 0 : 1;
}
