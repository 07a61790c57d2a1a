/* CPU data movement for the shape ops: an axis swap (split/merge heads), a block copy
 * along a middle axis (concat, slice), and the dtype cast. All three go over contiguous runs of elements, and every
 * destination element is written by exactly one work item, so the parallel loops never
 * race, even when accumulating.
 *
 * Elements are 4 bytes (f32, i32) or 2 (f16). A plain move copies bytes whatever the type;
 * accumulating into f16 converts a piece of both runs to f32, adds, and rounds once. */
#include <string.h>

#include "cpu/cpu_internal.h"

/* Elements per work item when one contiguous run is split over threads. */
#define SHAPE_PIECE 16384
/* Elements per step of an f16 accumulation (two f32 buffers of it on the stack). */
#define SHAPE_F16_STEP 512

/* Copies or adds n elements of `dtype` from src to dst. */
static void move_run(char *dst, const char *src, int64_t n, int accumulate, kiln_dtype dtype) {
    if (!accumulate) {
        memcpy(dst, src, (size_t)n * (dtype == KILN_F16 ? 2u : 4u));
    } else if (dtype == KILN_F32) {
        float *d = (float *)(void *)dst;
        const float *s = (const float *)(const void *)src;
        for (int64_t k = 0; k < n; k++) d[k] += s[k];
    } else { /* f16: load, add in f32, round */
        uint16_t *d = (uint16_t *)(void *)dst;
        const uint16_t *s = (const uint16_t *)(const void *)src;
        for (int64_t k0 = 0; k0 < n; k0 += SHAPE_F16_STEP) {
            const int64_t len = n - k0 < SHAPE_F16_STEP ? n - k0 : SHAPE_F16_STEP;
            float acc[SHAPE_F16_STEP], add[SHAPE_F16_STEP];
            kiln_f16_to_f32_n(d + k0, acc, len);
            kiln_f16_to_f32_n(s + k0, add, len);
            for (int64_t k = 0; k < len; k++) acc[k] += add[k];
            kiln_f32_to_f16_n(acc, d + k0, len);
        }
    }
}

/* Plain moves of any dtype; accumulation only into f32 and f16 (i32 holds no gradients). */
static kiln_status check_move(kiln_dtype dtype, int accumulate, const char *kernel) {
    if (dtype == KILN_F32 || dtype == KILN_F16 || (dtype == KILN_I32 && !accumulate)) return KILN_OK;
    return kiln_set_error(KILN_ERR_DTYPE, "cpu %s: cannot %s %s elements", kernel, accumulate ? "accumulate" : "move",
                          kiln_dtype_name(dtype));
}

kiln_status cpu_permute(void *dev, const kiln_permute_args *a) {
    (void)dev;
    kiln_status st = check_move(a->dtype, a->accumulate, "permute");
    if (st) return st;
    const char *x = CPU_PTR(a->x, char);
    char *y = CPU_PTR(a->y, char);
    const int64_t d0 = a->d0, d1 = a->d1, d2 = a->d2, d3 = a->d3;
    const int acc = a->accumulate;
    const kiln_dtype dt = a->dtype;
    const int64_t es = (int64_t)kiln_dtype_size(dt);
    /* x[i0, b, :, :] is one contiguous run of d2 rows; row c of it goes to y[i0, c, b, :],
     * d1 * d3 elements apart from the next */
#pragma omp parallel for if (cpu_use_threads(d0 * d1 * d2 * d3, CPU_PAR_MIN))
    for (int64_t ib = 0; ib < d0 * d1; ib++) {
        const int64_t i0 = ib / d1, b = ib % d1;
        const char *src = x + ib * d2 * d3 * es;
        char *dst = y + (i0 * d2 * d1 + b) * d3 * es;
        for (int64_t c = 0; c < d2; c++) move_run(dst + c * d1 * d3 * es, src + c * d3 * es, d3, acc, dt);
    }
    return KILN_OK;
}

/* Viewed as [outer, axis, inner], the block [o, start : start + len, :] is one contiguous
 * run of len * inner elements in both src and dst: one move per outer index (a slice of the
 * last axis used to move one float at a time). Long runs are split into pieces so that a
 * single large block still spreads over the threads. */
kiln_status cpu_copy_block(void *dev, const kiln_copy_block_args *a) {
    (void)dev;
    kiln_status st = check_move(a->dtype, a->accumulate, "copy_block");
    if (st) return st;
    const char *src = CPU_PTR(a->src, char);
    char *dst = CPU_PTR(a->dst, char);
    const kiln_dtype dt = a->dtype;
    const int64_t es = (int64_t)kiln_dtype_size(dt);
    const int64_t run = a->len * a->inner;
    const int64_t pieces = (run + SHAPE_PIECE - 1) / SHAPE_PIECE; /* per run */
    const int64_t items = a->outer * pieces;
    const int acc = a->accumulate;
#pragma omp parallel for if (cpu_use_threads(a->outer * run, CPU_PAR_MIN))
    for (int64_t it = 0; it < items; it++) {
        const int64_t o = it / pieces, k0 = (it % pieces) * SHAPE_PIECE;
        const int64_t n = run - k0 < SHAPE_PIECE ? run - k0 : SHAPE_PIECE;
        const char *s = src + ((o * a->src_axis + a->src_start) * a->inner + k0) * es;
        char *d = dst + ((o * a->dst_axis + a->dst_start) * a->inner + k0) * es;
        move_run(d, s, n, acc, dt);
    }
    return KILN_OK;
}

kiln_status cpu_cast(void *dev, const kiln_cast_args *a) {
    (void)dev;
    int64_t n = a->n;
    if (a->src_dtype == a->dst_dtype) {
        memmove(CPU_PTR(a->dst, char), CPU_PTR(a->src, char), (size_t)n * kiln_dtype_size(a->src_dtype));
    } else if (a->src_dtype == KILN_F32 && a->dst_dtype == KILN_F16) {
        const float *s = CPU_PTR(a->src, float);
        uint16_t *d = CPU_PTR(a->dst, uint16_t);
#pragma omp parallel for if (n > CPU_PAR_MIN)
        for (int64_t i = 0; i < n; i++) d[i] = kiln_f32_to_f16(s[i]);
    } else if (a->src_dtype == KILN_F16 && a->dst_dtype == KILN_F32) {
        const uint16_t *s = CPU_PTR(a->src, uint16_t);
        float *d = CPU_PTR(a->dst, float);
#pragma omp parallel for if (n > CPU_PAR_MIN)
        for (int64_t i = 0; i < n; i++) d[i] = kiln_f16_to_f32(s[i]);
    } else {
        return kiln_set_error(KILN_ERR_DTYPE, "cast from %s to %s is not supported",
                              kiln_dtype_name(a->src_dtype), kiln_dtype_name(a->dst_dtype));
    }
    return KILN_OK;
}
