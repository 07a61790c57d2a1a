/* Fault injection for tests (fault.h). */
#include "core/fault.h"

#ifdef KILN_FAULTS
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

typedef enum { FAULT_NONE, FAULT_DEVICE_LOST, FAULT_OOM, FAULT_WRONG, FAULT_COUNT } fault_kind;

int kiln_fault_armed;
static fault_kind g_kind;
static uint64_t g_at;
static char g_slot[32]; /* wrong:SLOT */
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
    else if (!strncmp(v, "wrong:", 6) && v[6] && strlen(v + 6) < sizeof g_slot) {
        g_kind = FAULT_WRONG;
        snprintf(g_slot, sizeof g_slot, "%s", v + 6);
    } else {
        fprintf(stderr, "kiln: KILN_FAULT=%s is not device-lost@N, oom@N, wrong:KERNEL or count (N >= 1); ignored\n",
                v);
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

/* Where a kernel slot writes its main output: the element a wrong:SLOT fault changes (the
 * output and output_dtype of core/kernel_slots.def). 0 for a name that is no slot. */
static int slot_output(const char *slot, const void *args, kiln_ref *out, kiln_dtype *dtype) {
#define KILN_SLOT(family, name, type, field, type_of) \
    if (!strcmp(slot, #name)) {                       \
        const type *a = args;                         \
        *out = a->field, *dtype = (type_of);          \
        return 1;                                     \
    }
#include "core/kernel_slots.def"
    return 0;
}

kiln_status kiln_fault_result(kiln_ctx *ctx, const char *slot, const void *args, kiln_status status) {
    kiln_ref out;
    kiln_dtype dtype;
    if (status != KILN_OK || g_kind != FAULT_WRONG || strcmp(slot, g_slot) || !strcmp(ctx->be->name, "cpu") ||
        !slot_output(slot, args, &out, &dtype) || dtype == KILN_I32)
        return status;
    /* the first element of the output, off by 10% of its size plus 0.1: small enough to
     * look plausible, far past every tolerance of kiln verify */
    union {
        float f;
        uint16_t h;
    } v;
    size_t size = dtype == KILN_F16 ? 2 : 4;
    kiln_status s = ctx->be->download(ctx->dev, out, &v, size);
    if (s) return s;
    float x = dtype == KILN_F16 ? kiln_f16_to_f32(v.h) : v.f;
    x += 0.1f * (1.0f + fabsf(x));
    if (dtype == KILN_F16) v.h = kiln_f32_to_f16(x);
    else v.f = x;
    return ctx->be->upload(ctx->dev, out, &v, size);
}

void kiln_fault_report(void) {
    if (g_kind == FAULT_COUNT)
        fprintf(stderr, "kiln: KILN_FAULT=count: %" PRIu64 " kernel calls, %" PRIu64 " device allocations\n",
                (uint64_t)atomic_load(&g_kernels), (uint64_t)atomic_load(&g_allocs));
}
#endif
