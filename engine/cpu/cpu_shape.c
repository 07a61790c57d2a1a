/* CPU data movement for the shape ops: an axis swap (split/merge heads) and a block copy
 * along a middle axis (concat, slice). Both move whole contiguous rows of the innermost
 * axis, and every destination row is written by exactly one iteration, so the parallel
 * loops never race, even when accumulating. */
#include <string.h>

#include "cpu/cpu_internal.h"

/* Copies or adds n floats. */
static void move_row(float *dst, const float *src, int64_t n, int accumulate) {
    if (accumulate) {
        for (int64_t k = 0; k < n; k++) dst[k] += src[k];
    } else {
        memcpy(dst, src, (size_t)n * sizeof(float));
    }
}

kiln_status cpu_permute(void *dev, const kiln_permute_args *a) {
    (void)dev;
    const float *x = CPU_PTR(a->x, float);
    float *y = CPU_PTR(a->y, float);
    int64_t d1 = a->d1, d2 = a->d2, d3 = a->d3;
    int64_t n_rows = a->d0 * d1 * d2; /* rows of d3 elements, in x's order (a, b, c) */
    int acc = a->accumulate;
#pragma omp parallel for if (n_rows * d3 > CPU_PAR_MIN)
    for (int64_t row = 0; row < n_rows; row++) {
        int64_t c = row % d2, b = (row / d2) % d1, i0 = row / (d1 * d2);
        int64_t dst_row = (i0 * d2 + c) * d1 + b; /* y[a, c, b, :] */
        move_row(y + dst_row * d3, x + row * d3, d3, acc);
    }
    return KILN_OK;
}

kiln_status cpu_copy_block(void *dev, const kiln_copy_block_args *a) {
    (void)dev;
    const float *src = CPU_PTR(a->src, float);
    float *dst = CPU_PTR(a->dst, float);
    int64_t len = a->len, inner = a->inner;
    int64_t n_rows = a->outer * len;
    int acc = a->accumulate;
#pragma omp parallel for if (n_rows * inner > CPU_PAR_MIN)
    for (int64_t row = 0; row < n_rows; row++) {
        int64_t o = row / len, i = row % len;
        const float *s = src + (o * a->src_axis + a->src_start + i) * inner;
        float *d = dst + (o * a->dst_axis + a->dst_start + i) * inner;
        move_row(d, s, inner, acc);
    }
    return KILN_OK;
}
