/* CPU kernels for memory and elementwise arithmetic: fill, cast, axpby, binary, sum_rows. */
#include <string.h>

#include "cpu/cpu_internal.h"

kiln_status cpu_fill(void *dev, const kiln_fill_args *a) {
    (void)dev;
    int64_t n = a->n;
    if (a->dtype == KILN_F32) {
        float *p = CPU_PTR(a->dst, float), v = a->value;
        for (int64_t i = 0; i < n; i++) p[i] = v;
    } else if (a->dtype == KILN_F16) {
        uint16_t *p = CPU_PTR(a->dst, uint16_t), v = kiln_f32_to_f16(a->value);
        for (int64_t i = 0; i < n; i++) p[i] = v;
    } else {
        int32_t *p = CPU_PTR(a->dst, int32_t), v = (int32_t)a->value;
        for (int64_t i = 0; i < n; i++) p[i] = v;
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

kiln_status cpu_axpby(void *dev, const kiln_axpby_args *a) {
    (void)dev;
    float alpha = a->alpha, beta = a->beta;
    if (CPU_HAS(a->num)) alpha *= CPU_PTR(a->num, float)[0];
    if (CPU_HAS(a->den)) alpha /= CPU_PTR(a->den, float)[0];
    float *y = CPU_PTR(a->y, float);
    const float *x = CPU_HAS(a->x) ? CPU_PTR(a->x, float) : NULL;
    int64_t n = a->n;
#pragma omp parallel for if (n > CPU_PAR_MIN)
    for (int64_t i = 0; i < n; i++) {
        float xv = x ? x[i] : 1.0f;
        /* beta == 0 overwrites: never read y, which may hold garbage or NaN */
        y[i] = beta == 0.0f ? alpha * xv : alpha * xv + beta * y[i];
    }
    return KILN_OK;
}

kiln_status cpu_binary(void *dev, const kiln_binary_args *a) {
    (void)dev;
    const float *x = CPU_PTR(a->a, float), *b = CPU_PTR(a->b, float);
    float *out = CPU_PTR(a->out, float);
    int64_t n = a->n, nb = a->nb;
#pragma omp parallel for if (n > CPU_PAR_MIN)
    for (int64_t i = 0; i < n; i++) {
        float bv = b[nb == n ? i : i % nb];
        switch (a->op) {
        case KILN_BIN_ADD: out[i] = x[i] + bv; break;
        case KILN_BIN_SUB: out[i] = x[i] - bv; break;
        case KILN_BIN_MUL: out[i] = x[i] * bv; break;
        }
    }
    return KILN_OK;
}

kiln_status cpu_sum_rows(void *dev, const kiln_sum_rows_args *a) {
    (void)dev;
    const float *x = CPU_PTR(a->x, float);
    float *out = CPU_PTR(a->out, float);
    int64_t rows = a->rows, cols = a->cols;
#pragma omp parallel for if (rows * cols > CPU_PAR_MIN)
    for (int64_t j = 0; j < cols; j++) {
        double s = 0;
        for (int64_t i = 0; i < rows; i++) s += x[i * cols + j];
        out[j] += a->alpha * (float)s;
    }
    return KILN_OK;
}
