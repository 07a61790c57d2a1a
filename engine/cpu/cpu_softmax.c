/* CPU masked softmax over the last axis of [batch, heads, tq, tk], forward and backward.
 *
 * The causal and key-length masks are evaluated per element from (b, i, j): nothing of
 * size tq x tk is ever built. A row whose keys are all masked is all zeros (never NaN):
 * with causal and tq > tk the first queries see no key, and a key length of 0 masks a
 * whole sequence. */
#include <math.h>

#include "cpu/cpu_internal.h"

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

kiln_status cpu_softmax_fwd(void *dev, const kiln_softmax_args *a) {
    (void)dev;
    const float *x = CPU_PTR(a->x, float);
    const float *add = CPU_HAS(a->add) ? CPU_PTR(a->add, float) : NULL;
    const int32_t *lengths = CPU_HAS(a->lengths) ? CPU_PTR(a->lengths, int32_t) : NULL;
    float *y = CPU_PTR(a->y, float);
    const int64_t tk = a->tk, rows = a->batch * a->heads * a->tq;
    const float scale = a->scale, inv_temp = 1.0f / a->temperature;
#pragma omp parallel for if (rows * tk > CPU_PAR_MIN)
    for (int64_t r = 0; r < rows; r++) {
        const int64_t b = r / (a->heads * a->tq), i = r % a->tq;
        const int64_t visible = visible_keys(a, lengths, b, i);
        const float *xr = x + r * tk;
        const float *ar = add ? add + r * tk : NULL;
        float *yr = y + r * tk;
        /* z_j = (scale x_j + add_j) / T, written into y first; the max is subtracted before
         * exp so large scores cannot overflow */
        float zmax = -INFINITY;
        for (int64_t j = 0; j < visible; j++) {
            float z = (scale * xr[j] + (ar ? ar[j] : 0.0f)) * inv_temp;
            yr[j] = z;
            if (z > zmax) zmax = z;
        }
        double sum = 0;
        for (int64_t j = 0; j < visible; j++) {
            float e = expf(yr[j] - zmax);
            yr[j] = e;
            sum += e;
        }
        const float inv_sum = visible > 0 ? (float)(1.0 / sum) : 0.0f;
        for (int64_t j = 0; j < visible; j++) yr[j] *= inv_sum;
        for (int64_t j = visible; j < tk; j++) yr[j] = 0.0f;
    }
    return KILN_OK;
}

/* g = y * (dy - sum_j dy_j y_j); dx += g * scale / T; dadd += g / T. Masked keys have
 * y == 0 and so receive nothing. */
kiln_status cpu_softmax_bwd(void *dev, const kiln_softmax_args *a) {
    (void)dev;
    const float *y = CPU_PTR(a->y, float), *dy = CPU_PTR(a->dy, float);
    float *dx = CPU_HAS(a->dx) ? CPU_PTR(a->dx, float) : NULL;
    float *dadd = CPU_HAS(a->dadd) ? CPU_PTR(a->dadd, float) : NULL;
    const int64_t tk = a->tk, rows = a->batch * a->heads * a->tq;
    const float inv_temp = 1.0f / a->temperature, dx_scale = a->scale * inv_temp;
#pragma omp parallel for if (rows * tk > CPU_PAR_MIN)
    for (int64_t r = 0; r < rows; r++) {
        const float *yr = y + r * tk, *dyr = dy + r * tk;
        double dot = 0;
        for (int64_t j = 0; j < tk; j++) dot += (double)dyr[j] * yr[j];
        for (int64_t j = 0; j < tk; j++) {
            float g = yr[j] * (dyr[j] - (float)dot);
            if (dx) dx[r * tk + j] += g * dx_scale;
            if (dadd) dadd[r * tk + j] += g * inv_temp;
        }
    }
    return KILN_OK;
}
