/*
 * xenhsa-rocr-check:
 * a GPU fault and stopped queues: --fault, --queue-error, --queue-error-abort.
 */
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

/* Returns only if the fault went unnoticed. */
void fault(struct ctx* c) {
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

void queue_error(struct ctx* c, const char* cause, int with_callback) {
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
