/* CPU data movement for the shape ops: an axis swap (split/merge heads) and a block copy
 * along a middle axis (concat, slice). Both move contiguous runs of floats, and every
 * destination element is written by exactly one work item, so the parallel loops never
 * race, even when accumulating. */
#include <string.h>

#include "cpu/cpu_internal.h"

/* Floats per work item when one contiguous run is split over threads. */
#define SHAPE_PIECE 16384

/* Copies or adds n floats. */
static void move_run(float *dst, const float *src, int64_t n, int accumulate) {
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
    const int64_t d0 = a->d0, d1 = a->d1, d2 = a->d2, d3 = a->d3;
    const int acc = a->accumulate;
    /* x[i0, b, :, :] is one contiguous run of d2 rows; row c of it goes to y[i0, c, b, :],
     * d1 * d3 floats apart from the next */
#pragma omp parallel for if (cpu_use_threads(d0 * d1 * d2 * d3, CPU_PAR_MIN))
    for (int64_t ib = 0; ib < d0 * d1; ib++) {
        const int64_t i0 = ib / d1, b = ib % d1;
        const float *src = x + ib * d2 * d3;
        float *dst = y + (i0 * d2 * d1 + b) * d3;
        for (int64_t c = 0; c < d2; c++) move_run(dst + c * d1 * d3, src + c * d3, d3, acc);
    }
    return KILN_OK;
}

/* Viewed as [outer, axis, inner], the block [o, start : start + len, :] is one contiguous
 * run of len * inner floats in both src and dst: one move per outer index (a slice of the
 * last axis used to move one float at a time). Long runs are split into pieces so that a
 * single large block still spreads over the threads. */
kiln_status cpu_copy_block(void *dev, const kiln_copy_block_args *a) {
    (void)dev;
    const float *src = CPU_PTR(a->src, float);
    float *dst = CPU_PTR(a->dst, float);
    const int64_t run = a->len * a->inner;
    const int64_t pieces = (run + SHAPE_PIECE - 1) / SHAPE_PIECE; /* per run */
    const int64_t items = a->outer * pieces;
    const int acc = a->accumulate;
#pragma omp parallel for if (cpu_use_threads(a->outer * run, CPU_PAR_MIN))
    for (int64_t it = 0; it < items; it++) {
        const int64_t o = it / pieces, k0 = (it % pieces) * SHAPE_PIECE;
        const int64_t n = run - k0 < SHAPE_PIECE ? run - k0 : SHAPE_PIECE;
        const float *s = src + (o * a->src_axis + a->src_start) * a->inner + k0;
        float *d = dst + (o * a->dst_axis + a->dst_start) * a->inner + k0;
        move_run(d, s, n, acc);
    }
    return KILN_OK;
}
