/* CPU kernels for elementwise arithmetic: axpby, binary (add, sub, mul, div), sum_rows. */
#include "cpu/cpu_f16.h"
#include "cpu/cpu_internal.h"
#include "cpu/cpu_vmath.h"

/* Elements per OpenMP work item of the elementwise kernels below. */
#define BASIC_BLOCK 8192

/* y = alpha x + beta y (x absent: x = 1; beta == 0: y is not read) over one block. Each
 * case is its own loop, so each vectorizes. */
static void axpby_block(float *y, const float *x, int64_t n, float alpha, float beta) {
    if (beta == 0.0f) { /* overwrite: never read y, which may hold garbage or NaN */
        if (x)
            for (int64_t i = 0; i < n; i++) y[i] = alpha * x[i];
        else
            for (int64_t i = 0; i < n; i++) y[i] = alpha;
    } else {
        if (x)
            for (int64_t i = 0; i < n; i++) y[i] = alpha * x[i] + beta * y[i];
        else
            for (int64_t i = 0; i < n; i++) y[i] = alpha + beta * y[i];
    }
}

/* f16 x and y: the f32 kernel on widened copies (cpu_f16.h); y is loaded unless beta == 0
 * overwrites it. num and den are f32 in every case. */
static kiln_status axpby_f16(void *dev, const kiln_axpby_args *a) {
    kiln_axpby_args w = *a;
    w.dtype = KILN_F32;
    cpu_widen s;
    cpu_widen_init(&s, a->dtype, "axpby");
    cpu_widen_operand(&s, &w.x, a->n, CPU_IN);
    cpu_widen_operand(&s, &w.y, a->n, a->beta == 0.0f ? CPU_OUT : CPU_INOUT);
    return cpu_widen_finish(&s, s.status ? s.status : cpu_axpby(dev, &w));
}

kiln_status cpu_axpby(void *dev, const kiln_axpby_args *a) {
    if (a->dtype != KILN_F32) return axpby_f16(dev, a);
    (void)dev;
    float alpha = a->alpha, beta = a->beta;
    if (CPU_HAS(a->num)) alpha *= CPU_PTR(a->num, float)[0];
    if (CPU_HAS(a->den)) alpha /= CPU_PTR(a->den, float)[0];
    float *y = CPU_PTR(a->y, float);
    const float *x = CPU_HAS(a->x) ? CPU_PTR(a->x, float) : NULL;
    const int64_t n = a->n, blocks = (n + BASIC_BLOCK - 1) / BASIC_BLOCK;
#pragma omp parallel for if (cpu_use_threads(n, CPU_PAR_MIN))
    for (int64_t blk = 0; blk < blocks; blk++) {
        const int64_t i0 = blk * BASIC_BLOCK, len = n - i0 < BASIC_BLOCK ? n - i0 : BASIC_BLOCK;
        axpby_block(y + i0, x ? x + i0 : NULL, len, alpha, beta);
    }
    return KILN_OK;
}

/* out[j] = a[j] op b[j] for j < n. */
static void binary_run(float *out, const float *a, const float *b, int64_t n, kiln_binary_op op) {
    switch (op) {
    case KILN_BIN_ADD:
        for (int64_t j = 0; j < n; j++) out[j] = a[j] + b[j];
        break;
    case KILN_BIN_SUB:
        for (int64_t j = 0; j < n; j++) out[j] = a[j] - b[j];
        break;
    case KILN_BIN_MUL:
        for (int64_t j = 0; j < n; j++) out[j] = a[j] * b[j];
        break;
    case KILN_BIN_DIV:
        for (int64_t j = 0; j < n; j++) out[j] = a[j] / b[j];
        break;
    }
}

/* out[j] = a[j] op s for j < n: b is one element. (a[j] / s stays a division, not a
 * product with 1/s, so that a scalar b gives the bits a full b of equal values gives.) */
static void binary_run_scalar(float *out, const float *a, float s, int64_t n, kiln_binary_op op) {
    switch (op) {
    case KILN_BIN_ADD:
        for (int64_t j = 0; j < n; j++) out[j] = a[j] + s;
        break;
    case KILN_BIN_SUB:
        for (int64_t j = 0; j < n; j++) out[j] = a[j] - s;
        break;
    case KILN_BIN_MUL:
        for (int64_t j = 0; j < n; j++) out[j] = a[j] * s;
        break;
    case KILN_BIN_DIV:
        for (int64_t j = 0; j < n; j++) out[j] = a[j] / s;
        break;
    }
}

/* a is n / nb rows of nb, each combined with all of b; a work item is one row, or a
 * BASIC_BLOCK piece of it, so the broadcast costs no index arithmetic per element. A scalar
 * b (nb == 1) would make every element a work item of its own: it takes blocks of a. */
kiln_status cpu_binary(void *dev, const kiln_binary_args *a) {
    if (a->dtype != KILN_F32) { /* f16: on widened copies (cpu_f16.h) */
        kiln_binary_args w = *a;
        w.dtype = KILN_F32;
        cpu_widen s;
        cpu_widen_init(&s, a->dtype, "binary");
        cpu_widen_operand(&s, &w.a, a->n, CPU_IN);
        cpu_widen_operand(&s, &w.b, a->nb, CPU_IN);
        cpu_widen_operand(&s, &w.out, a->n, CPU_OUT);
        return cpu_widen_finish(&s, s.status ? s.status : cpu_binary(dev, &w));
    }
    (void)dev;
    const float *x = CPU_PTR(a->a, float), *b = CPU_PTR(a->b, float);
    float *out = CPU_PTR(a->out, float);
    const int64_t n = a->n, nb = a->nb;
    if (n <= 0 || nb <= 0) return KILN_OK;
    if (nb == 1 && n > 1) {
        const int64_t blocks = (n + BASIC_BLOCK - 1) / BASIC_BLOCK;
        const float scalar = b[0];
        const kiln_binary_op op = a->op;
#pragma omp parallel for if (cpu_use_threads(n, CPU_PAR_MIN))
        for (int64_t blk = 0; blk < blocks; blk++) {
            const int64_t i0 = blk * BASIC_BLOCK, len = n - i0 < BASIC_BLOCK ? n - i0 : BASIC_BLOCK;
            binary_run_scalar(out + i0, x + i0, scalar, len, op);
        }
        return KILN_OK;
    }
    const int64_t pieces = (nb + BASIC_BLOCK - 1) / BASIC_BLOCK; /* per row */
    const int64_t items = n / nb * pieces;
    const kiln_binary_op op = a->op;
#pragma omp parallel for if (cpu_use_threads(n, CPU_PAR_MIN))
    for (int64_t it = 0; it < items; it++) {
        const int64_t row = it / pieces, j0 = (it % pieces) * BASIC_BLOCK;
        const int64_t len = nb - j0 < BASIC_BLOCK ? nb - j0 : BASIC_BLOCK;
        const int64_t i0 = row * nb + j0;
        binary_run(out + i0, x + i0, b + j0, len, op);
    }
    return KILN_OK;
}

/* Columns per work item of sum_rows: a block's double accumulators stay in registers or
 * L1 while the rows stream by in order. */
#define SUM_ROWS_COLS 64

/* out[j] += alpha * sum_i x[i * cols + j] for j < width (<= SUM_ROWS_COLS). */
CPU_VECTOR_CLONES static void sum_rows_block(const float *x, int64_t rows, int64_t cols, int64_t width, float alpha,
                                             float *out) {
    double acc[SUM_ROWS_COLS] = {0};
    for (int64_t i = 0; i < rows; i++) {
        const float *xr = x + i * cols;
        for (int64_t j = 0; j < width; j++) acc[j] += xr[j];
    }
    for (int64_t j = 0; j < width; j++) out[j] += alpha * (float)acc[j];
}

/* Walks the rows in order, adding each row's block of columns into double accumulators:
 * per column the same sum, in the same order, as a loop down the column, but reading
 * memory row by row (contiguous, vectorized) instead of one float per cache line. */
kiln_status cpu_sum_rows(void *dev, const kiln_sum_rows_args *a) {
    if (a->dtype != KILN_F32) { /* f16: on widened copies (cpu_f16.h) */
        kiln_sum_rows_args w = *a;
        w.dtype = KILN_F32;
        cpu_widen s;
        cpu_widen_init(&s, a->dtype, "sum_rows");
        cpu_widen_operand(&s, &w.x, a->rows * a->cols, CPU_IN);
        cpu_widen_operand(&s, &w.out, a->cols, CPU_INOUT);
        return cpu_widen_finish(&s, s.status ? s.status : cpu_sum_rows(dev, &w));
    }
    (void)dev;
    const float *x = CPU_PTR(a->x, float);
    float *out = CPU_PTR(a->out, float);
    const int64_t rows = a->rows, cols = a->cols;
    const int64_t blocks = (cols + SUM_ROWS_COLS - 1) / SUM_ROWS_COLS;
    const float alpha = a->alpha;
#pragma omp parallel for if (cpu_use_threads(rows * cols, CPU_PAR_MIN))
    for (int64_t blk = 0; blk < blocks; blk++) {
        const int64_t j0 = blk * SUM_ROWS_COLS;
        const int64_t width = cols - j0 < SUM_ROWS_COLS ? cols - j0 : SUM_ROWS_COLS;
        sum_rows_block(x + j0, rows, cols, width, alpha, out + j0);
    }
    return KILN_OK;
}
