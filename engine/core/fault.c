/* Fault injection for tests (fault.h). */
#include "core/fault.h"

#ifdef KILN_FAULTS
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

typedef enum { FAULT_NONE, FAULT_DEVICE_LOST, FAULT_OOM, FAULT_COUNT } fault_kind;

int kiln_fault_armed;
static fault_kind g_kind;
static uint64_t g_at;
static atomic_uint_fast64_t g_kernels, g_allocs;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

/* "NAME@N" with N >= 1: 1 and *n, else 0. */
static int spec_is(const char *v, const char *name, uint64_t *n) {
    size_t len = strlen(name);
    if (strncmp(v, name, len) || v[len] != '@') return 0;
    char *end;
    unsigned long long value = strtoull(v + len + 1, &end, 10);
    *n = value;
    return end != v + len + 1 && !*end && value > 0;
}

static void parse(void) {
    const char *v = getenv("KILN_FAULT");
    if (!v || !*v) return;
    if (!strcmp(v, "count"))
        g_kind = FAULT_COUNT;
    else if (spec_is(v, "device-lost", &g_at))
        g_kind = FAULT_DEVICE_LOST;
    else if (spec_is(v, "oom", &g_at))
        g_kind = FAULT_OOM;
    else {
        fprintf(stderr, "kiln: KILN_FAULT=%s is not device-lost@N, oom@N or count (N >= 1); ignored\n", v);
        return;
    }
    kiln_fault_armed = 1;
}

void kiln_fault_init(void) { pthread_once(&g_once, parse); }

int kiln_fault_kernel(const char *backend, const char *slot) {
    uint64_t n = atomic_fetch_add(&g_kernels, 1) + 1;
    if (g_kind != FAULT_DEVICE_LOST || n < g_at) return 0;
    kiln_set_error(KILN_ERR_DEVICE, "%s: device lost at kernel call %" PRIu64 " (%s; injected by KILN_FAULT)",
                   backend, n, slot);
    return 1;
}

int kiln_fault_alloc(const char *backend, size_t bytes) {
    uint64_t n = atomic_fetch_add(&g_allocs, 1) + 1;
    if (g_kind != FAULT_OOM || n != g_at) return 0;
    kiln_set_error(KILN_ERR_MEMORY, "%s: out of device memory allocating %zu bytes (allocation %" PRIu64
                                    ", injected by KILN_FAULT)", backend, bytes, n);
    return 1;
}

void kiln_fault_report(void) {
    if (g_kind == FAULT_COUNT)
        fprintf(stderr, "kiln: KILN_FAULT=count: %" PRIu64 " kernel calls, %" PRIu64 " device allocations\n",
                (uint64_t)atomic_load(&g_kernels), (uint64_t)atomic_load(&g_allocs));
}
#endif
