/* xenhsa-rocr-check: waits, a fork and a close under a waiter: --wait-ms, --fork, --fork-opens,
 * --close-under-wait. */
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
void long_wait(unsigned delay_ms) {
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

/* A child forked from this ROCm process calls libhsakmt (found as any program would, by
 * its symbols), closes it and exits; the parent's session must not notice. */
void forked(struct ctx* c, int opens) {
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
int close_under_wait(void) {
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
