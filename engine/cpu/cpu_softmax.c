/* CPU masked softmax over the last axis of [batch, heads, tq, tk], forward and backward.
 *
 * The causal and key-length masks are evaluated per element from (b, i, j): nothing of
 * size tq x tk is ever built. A row whose keys are all masked is all zeros (never NaN):
 * with causal and tq > tk the first queries see no key, and a key length of 0 masks a
 * whole sequence. */
#include <math.h>

#include "cpu/cpu_f16.h"
#include "cpu/cpu_internal.h"
#include "cpu/cpu_vmath.h"

/* Number of leading keys query i may see: keys [0, visible) are unmasked. Both masks hide a
 * suffix of the row (causal: j > i + tk - tq; lengths: j >= len[b]), so their union is the
 * suffix after the smaller limit. */
static int64_t visible_keys(const kiln_softmax_args *a, const int32_t *lengths, int64_t b,
                            int64_t i) {
    int64_t visible = a->tk;
    if (a->causal) {
        int64_t last = i + (a->tk - a->tq); /* the last key query i sees */
        if (last + 1 < visible) visible = last + 1;
    }
    if (lengths && (int64_t)lengths[b] < visible) visible = lengths[b];
    return visible < 0 ? 0 : visible;
}

/* Elements above which the forward forks threads: an exponential per element makes it
 * worth threading well below a plain copy's CPU_PAR_MIN. */
#define SOFTMAX_PAR_MIN (CPU_PAR_MIN / 4)

/* One row: y_j = softmax(z)_j over the `visible` leading keys, 0 after them, where
 * z_j = (scale x_j + add_j) / T (add NULL: 0). z is written into y first; the max is
 * subtracted before exp so large scores cannot overflow.
 *
 * Every loop runs over the whole row, with masked keys selected out (-inf for the max, 0
 * for the sum and the output): causal rows have every length from 1 to tk, and loops over
 * just the visible keys spent most of their time in scalar tails (16-wide vectors, rows
 * of 1..64). */
CPU_VECTOR_CLONES static void softmax_row(const float *x, const float *add, float *y, int64_t visible,
                                          int64_t tk, float scale, float inv_temp) {
    if (visible == 0) { /* every key masked: zeros, never 0/0 */
        for (int64_t j = 0; j < tk; j++) y[j] = 0.0f;
        return;
    }
    if (add)
        for (int64_t j = 0; j < tk; j++)
            y[j] = cpu_select(j < visible, (scale * x[j] + add[j]) * inv_temp, -INFINITY);
    else
        for (int64_t j = 0; j < tk; j++) y[j] = cpu_select(j < visible, scale * x[j] * inv_temp, -INFINITY);
    const float zmax = cpu_max_f32(y, tk);
    /* masked keys get exp(0), then 0: an exp that underflows costs a microcode assist per
     * vector on x86 (no flush-to-zero here), which made this loop 2.5x slower */
    for (int64_t j = 0; j < tk; j++) {
        const int keep = j < visible;
        y[j] = cpu_select(keep, cpu_expf(cpu_select(keep, y[j] - zmax, 0.0f)), 0.0f);
    }
    const float inv_sum = (float)(1.0 / cpu_sum_f64(y, tk));
    for (int64_t j = 0; j < tk; j++) y[j] = cpu_select(j < visible, y[j] * inv_sum, 0.0f); /* 0 even in a NaN row */
}

kiln_status cpu_softmax_fwd(void *dev, const kiln_softmax_args *a) {
    if (a->dtype != KILN_F32) { /* f16: on widened copies (cpu_f16.h) */
        const int64_t n = a->batch * a->heads * a->tq * a->tk;
        kiln_softmax_args w = *a;
        w.dtype = KILN_F32;
        cpu_widen s;
        cpu_widen_init(&s, a->dtype, "softmax_fwd");
        cpu_widen_operand(&s, &w.x, n, CPU_IN);
        cpu_widen_operand(&s, &w.add, n, CPU_IN);
        cpu_widen_operand(&s, &w.y, n, CPU_OUT);
        return cpu_widen_finish(&s, s.status ? s.status : cpu_softmax_fwd(dev, &w));
    }
    (void)dev;
    const float *x = CPU_PTR(a->x, float);
    const float *add = CPU_HAS(a->add) ? CPU_PTR(a->add, float) : NULL;
    const int32_t *lengths = CPU_HAS(a->lengths) ? CPU_PTR(a->lengths, int32_t) : NULL;
    float *y = CPU_PTR(a->y, float);
    const int64_t tk = a->tk, rows = a->batch * a->heads * a->tq;
    const float inv_temp = 1.0f / a->temperature;
#pragma omp parallel for if (cpu_use_threads(rows * tk, SOFTMAX_PAR_MIN))
    for (int64_t r = 0; r < rows; r++) {
        const int64_t b = r / (a->heads * a->tq), i = r % a->tq;
        softmax_row(x + r * tk, add ? add + r * tk : NULL, y + r * tk, visible_keys(a, lengths, b, i), tk,
                    a->scale, inv_temp);
    }
    return KILN_OK;
}

/* g = y * (dy - sum_j dy_j y_j); dx += g * scale / T; dadd += g / T. Masked keys have
 * y == 0 and so receive nothing. */
kiln_status cpu_softmax_bwd(void *dev, const kiln_softmax_args *a) {
    if (a->dtype != KILN_F32) { /* f16: on widened copies (cpu_f16.h) */
        const int64_t n = a->batch * a->heads * a->tq * a->tk;
        kiln_softmax_args w = *a;
        w.dtype = KILN_F32;
        cpu_widen s;
        cpu_widen_init(&s, a->dtype, "softmax_bwd");
        cpu_widen_operand(&s, &w.y, n, CPU_IN);
        cpu_widen_operand(&s, &w.dy, n, CPU_IN);
        cpu_widen_operand(&s, &w.dx, n, CPU_INOUT);
        cpu_widen_operand(&s, &w.dadd, n, CPU_INOUT);
        return cpu_widen_finish(&s, s.status ? s.status : cpu_softmax_bwd(dev, &w));
    }
    (void)dev;
    const float *y = CPU_PTR(a->y, float), *dy = CPU_PTR(a->dy, float);
    float *dx = CPU_HAS(a->dx) ? CPU_PTR(a->dx, float) : NULL;
    float *dadd = CPU_HAS(a->dadd) ? CPU_PTR(a->dadd, float) : NULL;
    const int64_t tk = a->tk, rows = a->batch * a->heads * a->tq;
    const float inv_temp = 1.0f / a->temperature, dx_scale = a->scale * inv_temp;
#pragma omp parallel for if (cpu_use_threads(rows * tk, CPU_PAR_MIN))
    for (int64_t r = 0; r < rows; r++) {
        const float *yr = y + r * tk, *dyr = dy + r * tk;
        const float dot = (float)cpu_dot_f64(dyr, yr, tk);
        if (dx) {
            float *dxr = dx + r * tk;
            for (int64_t j = 0; j < tk; j++) dxr[j] += yr[j] * (dyr[j] - dot) * dx_scale;
        }
        if (dadd) {
            float *dar = dadd + r * tk;
            for (int64_t j = 0; j < tk; j++) dar[j] += yr[j] * (dyr[j] - dot) * inv_temp;
        }
    }
    return KILN_OK;
}
