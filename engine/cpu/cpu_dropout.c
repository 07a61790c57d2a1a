/* CPU inverted dropout from the counter-based RNG. The mask is a pure function of
 * (seed, stream, element index), so the backward regenerates it instead of storing it, and
 * every backend draws the same mask. */
#include "cpu/cpu_f16.h"
#include "cpu/cpu_internal.h"
#include "kiln/rng.h"

/* Dropout draws one Philox block per element: worth threading well below CPU_PAR_MIN. */
#define DROPOUT_PAR_MIN 4096

kiln_status cpu_dropout_fwd(void *dev, const kiln_dropout_args *a) {
    if (a->dtype != KILN_F32) { /* f16: on widened copies (cpu_f16.h) */
        kiln_dropout_args w = *a;
        w.dtype = KILN_F32;
        cpu_widen s;
        cpu_widen_init(&s, a->dtype, "dropout_fwd");
        cpu_widen_operand(&s, &w.x, a->n, CPU_IN);
        cpu_widen_operand(&s, &w.y, a->n, CPU_OUT);
        return cpu_widen_finish(&s, s.status ? s.status : cpu_dropout_fwd(dev, &w));
    }
    (void)dev;
    const float *x = CPU_PTR(a->x, float);
    float *y = CPU_PTR(a->y, float);
    /* kept values are x / (1-p), divided rather than multiplied by a reciprocal: the
     * contract's rounding, which the GPU kernels reproduce */
    const float prob = a->prob, keep = 1.0f - a->prob;
    const int64_t n = a->n;
#pragma omp parallel for if (n > DROPOUT_PAR_MIN)
    for (int64_t i = 0; i < n; i++) {
        y[i] = kiln_rng_uniform(a->seed, a->stream, (uint64_t)i) >= prob ? x[i] / keep : 0.0f;
    }
    return KILN_OK;
}

kiln_status cpu_dropout_bwd(void *dev, const kiln_dropout_args *a) {
    if (a->dtype != KILN_F32) { /* f16: on widened copies (cpu_f16.h) */
        kiln_dropout_args w = *a;
        w.dtype = KILN_F32;
        cpu_widen s;
        cpu_widen_init(&s, a->dtype, "dropout_bwd");
        cpu_widen_operand(&s, &w.dy, a->n, CPU_IN);
        cpu_widen_operand(&s, &w.dx, a->n, CPU_INOUT);
        return cpu_widen_finish(&s, s.status ? s.status : cpu_dropout_bwd(dev, &w));
    }
    (void)dev;
    const float *dy = CPU_PTR(a->dy, float);
    float *dx = CPU_PTR(a->dx, float);
    const float prob = a->prob, keep = 1.0f - a->prob;
    const int64_t n = a->n;
#pragma omp parallel for if (n > DROPOUT_PAR_MIN)
    for (int64_t i = 0; i < n; i++) {
        if (kiln_rng_uniform(a->seed, a->stream, (uint64_t)i) >= prob) dx[i] += dy[i] / keep;
    }
    return KILN_OK;
}
