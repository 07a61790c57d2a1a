/* Widened f32 copies of f16 operands: see cpu_f16.h. */
#include <stdlib.h>

#include "cpu/cpu_f16.h"

/* Elements converted per OpenMP work item. */
#define WIDEN_BLOCK 16384

void cpu_widen_init(cpu_widen *w, kiln_dtype dtype, const char *kernel) {
    w->n = 0;
    w->status = dtype == KILN_F16 ? KILN_OK
                                  : kiln_set_error(KILN_ERR_DTYPE, "cpu %s: dtype %s is not supported (f32 or f16)",
                                                   kernel, kiln_dtype_name(dtype));
}

static void widen(const uint16_t *src, float *dst, int64_t n) {
    const int64_t blocks = (n + WIDEN_BLOCK - 1) / WIDEN_BLOCK;
#pragma omp parallel for if (cpu_use_threads(n, CPU_PAR_MIN))
    for (int64_t b = 0; b < blocks; b++) {
        const int64_t i0 = b * WIDEN_BLOCK, len = n - i0 < WIDEN_BLOCK ? n - i0 : WIDEN_BLOCK;
        kiln_f16_to_f32_n(src + i0, dst + i0, len);
    }
}

static void narrow(const float *src, uint16_t *dst, int64_t n) {
    const int64_t blocks = (n + WIDEN_BLOCK - 1) / WIDEN_BLOCK;
#pragma omp parallel for if (cpu_use_threads(n, CPU_PAR_MIN))
    for (int64_t b = 0; b < blocks; b++) {
        const int64_t i0 = b * WIDEN_BLOCK, len = n - i0 < WIDEN_BLOCK ? n - i0 : WIDEN_BLOCK;
        kiln_f32_to_f16_n(src + i0, dst + i0, len);
    }
}

void cpu_widen_operand(cpu_widen *w, kiln_ref *ref, int64_t count, int mode) {
    if (w->status || !ref->buf || count <= 0) return;
    for (int i = 0; i < w->n; i++) { /* the same tensor again: share its copy */
        if (w->op[i].orig.buf == ref->buf && w->op[i].orig.off == ref->off && count <= w->op[i].count) {
            /* nothing has run yet: a copy skipped as write-only can still be loaded */
            if ((mode & CPU_IN) && !(w->op[i].mode & CPU_IN)) widen(CPU_PTR(*ref, uint16_t), w->op[i].buf.ptr, count);
            w->op[i].mode |= mode;
            *ref = (kiln_ref){&w->op[i].buf, 0};
            return;
        }
    }
    if (w->n == CPU_WIDEN_MAX) {
        w->status = kiln_set_error(KILN_ERR_ARGUMENT, "cpu f16: more than %d operands in one kernel", CPU_WIDEN_MAX);
        return;
    }
    size_t bytes = ((size_t)count * sizeof(float) + 63) / 64 * 64;
    float *copy = aligned_alloc(64, bytes);
    if (!copy) {
        w->status = kiln_set_error(KILN_ERR_MEMORY, "cpu: out of memory for %zu bytes of f32 copies of f16 data", bytes);
        return;
    }
    if (mode & CPU_IN) widen(CPU_PTR(*ref, uint16_t), copy, count);
    int i = w->n++;
    w->op[i].orig = *ref;
    w->op[i].count = count;
    w->op[i].mode = mode;
    w->op[i].buf = (struct kiln_buf){copy, bytes};
    *ref = (kiln_ref){&w->op[i].buf, 0};
}

kiln_status cpu_widen_finish(cpu_widen *w, kiln_status kernel_status) {
    kiln_status s = w->status ? w->status : kernel_status;
    for (int i = 0; i < w->n; i++) {
        if (s == KILN_OK && (w->op[i].mode & CPU_OUT))
            narrow(w->op[i].buf.ptr, CPU_PTR(w->op[i].orig, uint16_t), w->op[i].count);
        free(w->op[i].buf.ptr);
    }
    w->n = 0;
    return s;
}
