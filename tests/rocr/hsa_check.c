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

uint64_t kernel_object(const char* name) {
    char var[64];
    snprintf(var, sizeof var, "XENHSA_KERNEL_%s", name);
    const char* value = getenv(var);
    return value ? strtoull(value, NULL, 0) : 0;
}

double now_ms(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int dispatch(struct ctx* c, uint64_t kernel, const void* args, size_t args_size, uint32_t items) {
    hsa_signal_t done;
    if (!hsa_ok("signal create", hsa_signal_create(1, 0, NULL, &done))) {
        return 0;
    }
    const int ok = dispatch_signal(c, kernel, args, args_size, items, done);
    hsa_signal_destroy(done);
    return ok;
}

int dispatch_signal(struct ctx* c, uint64_t kernel, const void* args, size_t args_size,
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

void* fine_alloc(struct ctx* c, size_t size) {
    void* p = NULL;
    if (!hsa_ok("fine-grained allocate",
                hsa_amd_memory_pool_allocate(c->cpu_pools.fine, size, 0, &p)) ||
        !hsa_ok("allow access", hsa_amd_agents_allow_access(1, &c->agents.gpu, NULL, p))) {
        return NULL;
    }
    return p;
}

int one_pass(struct ctx* c, unsigned pass) {
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
