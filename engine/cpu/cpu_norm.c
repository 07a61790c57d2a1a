/* CPU LayerNorm and RMSNorm over rows of length cols, forward and backward.
 *
 * Row statistics accumulate in double (two passes for the variance: no cancellation when
 * the mean is large). The backward recomputes xhat from x and the saved mean/rstd:
 *   xhat = (x - mean) * rstd,  g = dy * weight
 *   LayerNorm: dx += rstd * (g - mean(g) - xhat * mean(g * xhat))
 *   RMSNorm:   dx += rstd * (g - xhat * mean(g * xhat))          (mean = 0, no mean(g) term)
 *   dweight += sum over rows of dy * xhat,  dbias += sum over rows of dy. */
#include <math.h>

#include "cpu/cpu_f16.h"
#include "cpu/cpu_internal.h"
#include "cpu/cpu_vmath.h"

/* Columns per task in the weight/bias gradient: each task owns a block of columns and walks
 * every row, so no two threads write the same dweight[j] (race-free without atomics) and
 * each row's block is read contiguously. */
#define NORM_COL_BLOCK 64

/* f16 x, weight, bias, y and gradients: the f32 kernel on widened copies (cpu_f16.h);
 * mean and rstd are f32 in every case. */
static kiln_status norm_f16(void *dev, const kiln_norm_args *a, kiln_status (*kernel)(void *, const kiln_norm_args *),
                            const char *name) {
    const int64_t n = a->rows * a->cols, c = a->cols;
    kiln_norm_args w = *a;
    w.dtype = KILN_F32;
    cpu_widen s;
    cpu_widen_init(&s, a->dtype, name);
    cpu_widen_operand(&s, &w.x, n, CPU_IN);
    cpu_widen_operand(&s, &w.weight, c, CPU_IN);
    cpu_widen_operand(&s, &w.bias, c, CPU_IN);
    cpu_widen_operand(&s, &w.y, n, CPU_OUT);
    cpu_widen_operand(&s, &w.dy, n, CPU_IN);
    cpu_widen_operand(&s, &w.dx, n, CPU_INOUT);
    cpu_widen_operand(&s, &w.dweight, c, CPU_INOUT);
    cpu_widen_operand(&s, &w.dbias, c, CPU_INOUT);
    return cpu_widen_finish(&s, s.status ? s.status : kernel(dev, &w));
}

static kiln_status layernorm_fwd(void *dev, const kiln_norm_args *a) {
    if (a->dtype != KILN_F32) return norm_f16(dev, a, layernorm_fwd, "layernorm_fwd");
    (void)dev;
    const float *x = CPU_PTR(a->x, float);
    const float *w = CPU_HAS(a->weight) ? CPU_PTR(a->weight, float) : NULL;
    const float *b = CPU_HAS(a->bias) ? CPU_PTR(a->bias, float) : NULL;
    float *y = CPU_PTR(a->y, float);
    float *mean_out = CPU_HAS(a->mean) ? CPU_PTR(a->mean, float) : NULL;
    float *rstd_out = CPU_HAS(a->rstd) ? CPU_PTR(a->rstd, float) : NULL;
    int64_t rows = a->rows, cols = a->cols;
    double eps = a->eps;
#pragma omp parallel for if (cpu_use_threads(rows * cols, CPU_PAR_MIN))
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        const double mean = cpu_sum_f64(xr, cols) / (double)cols;
        const double var = cpu_sum_sq_dev_f64(xr, mean, cols) / (double)cols;
        const float m = (float)mean, rs = (float)(1.0 / sqrt(var + eps));
        /* one loop per case of the optional parameters, so that each vectorizes */
        if (w && b)
            for (int64_t j = 0; j < cols; j++) yr[j] = (xr[j] - m) * rs * w[j] + b[j];
        else if (w)
            for (int64_t j = 0; j < cols; j++) yr[j] = (xr[j] - m) * rs * w[j];
        else if (b)
            for (int64_t j = 0; j < cols; j++) yr[j] = (xr[j] - m) * rs + b[j];
        else
            for (int64_t j = 0; j < cols; j++) yr[j] = (xr[j] - m) * rs;
        if (mean_out) mean_out[r] = m;
        if (rstd_out) rstd_out[r] = rs;
    }
    return KILN_OK;
}

static kiln_status rmsnorm_fwd(void *dev, const kiln_norm_args *a) {
    if (a->dtype != KILN_F32) return norm_f16(dev, a, rmsnorm_fwd, "rmsnorm_fwd");
    (void)dev;
    const float *x = CPU_PTR(a->x, float);
    const float *w = CPU_HAS(a->weight) ? CPU_PTR(a->weight, float) : NULL;
    float *y = CPU_PTR(a->y, float);
    float *rstd_out = CPU_HAS(a->rstd) ? CPU_PTR(a->rstd, float) : NULL;
    int64_t rows = a->rows, cols = a->cols;
    double eps = a->eps;
#pragma omp parallel for if (cpu_use_threads(rows * cols, CPU_PAR_MIN))
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        const double sumsq = cpu_dot_f64(xr, xr, cols);
        const float rs = (float)(1.0 / sqrt(sumsq / (double)cols + eps));
        if (w)
            for (int64_t j = 0; j < cols; j++) yr[j] = xr[j] * rs * w[j];
        else
            for (int64_t j = 0; j < cols; j++) yr[j] = xr[j] * rs;
        if (rstd_out) rstd_out[r] = rs;
    }
    return KILN_OK;
}

/* Columns per pass of row_grad_sums: its xhat buffer stays in L1. */
#define NORM_CHUNK 256

/* sum_j g_j and sum_j g_j xhat_j over one row, with g = dy * w (w NULL: 1) and
 * xhat = (x - m) * rs: products and sums in double, through the lane helpers of
 * cpu_vmath.h (which vectorize, where one loop computing both sums did not). */
CPU_VECTOR_CLONES static void row_grad_sums(const float *x, const float *dy, const float *w, float m, float rs,
                                            int64_t n, double *sum_g, double *sum_gx) {
    double sg = 0, sgx = 0;
    for (int64_t j0 = 0; j0 < n; j0 += NORM_CHUNK) {
        const int64_t len = n - j0 < NORM_CHUNK ? n - j0 : NORM_CHUNK;
        float xhat[NORM_CHUNK];
        for (int64_t j = 0; j < len; j++) xhat[j] = (x[j0 + j] - m) * rs;
        if (w) {
            sg += cpu_dot_f64(dy + j0, w + j0, len);
            sgx += cpu_dot3_f64(dy + j0, w + j0, xhat, len);
        } else {
            sg += cpu_sum_f64(dy + j0, len);
            sgx += cpu_dot_f64(dy + j0, xhat, len);
        }
    }
    *sum_g = sg;
    *sum_gx = sgx;
}

/* dx for every row; `mean` NULL means RMSNorm (no centering, no mean(g) term). */
static void norm_input_grad(const kiln_norm_args *a, const float *mean) {
    const float *x = CPU_PTR(a->x, float), *dy = CPU_PTR(a->dy, float);
    const float *w = CPU_HAS(a->weight) ? CPU_PTR(a->weight, float) : NULL;
    const float *rstd = CPU_PTR(a->rstd, float);
    float *dx = CPU_PTR(a->dx, float);
    int64_t rows = a->rows, cols = a->cols;
#pragma omp parallel for if (cpu_use_threads(rows * cols, CPU_PAR_MIN))
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols, *dyr = dy + r * cols;
        float *dxr = dx + r * cols;
        const float m = mean ? mean[r] : 0.0f, rs = rstd[r];
        double sum_g = 0, sum_gx = 0;
        row_grad_sums(xr, dyr, w, m, rs, cols, &sum_g, &sum_gx);
        const float mean_g = mean ? (float)(sum_g / (double)cols) : 0.0f;
        const float mean_gx = (float)(sum_gx / (double)cols);
        if (w)
            for (int64_t j = 0; j < cols; j++)
                dxr[j] += rs * (dyr[j] * w[j] - mean_g - (xr[j] - m) * rs * mean_gx);
        else
            for (int64_t j = 0; j < cols; j++)
                dxr[j] += rs * (dyr[j] - mean_g - (xr[j] - m) * rs * mean_gx);
    }
}

/* dweight[j] += sum_r dy * xhat, dbias[j] += sum_r dy (each when present). */
static void norm_param_grads(const kiln_norm_args *a, const float *mean) {
    float *dw = CPU_HAS(a->dweight) ? CPU_PTR(a->dweight, float) : NULL;
    float *db = CPU_HAS(a->dbias) ? CPU_PTR(a->dbias, float) : NULL;
    if (!dw && !db) return;
    const float *x = CPU_PTR(a->x, float), *dy = CPU_PTR(a->dy, float);
    const float *rstd = CPU_PTR(a->rstd, float);
    int64_t rows = a->rows, cols = a->cols;
    int64_t blocks = (cols + NORM_COL_BLOCK - 1) / NORM_COL_BLOCK;
#pragma omp parallel for if (cpu_use_threads(rows * cols, CPU_PAR_MIN))
    for (int64_t blk = 0; blk < blocks; blk++) {
        int64_t j0 = blk * NORM_COL_BLOCK;
        int64_t width = cols - j0 < NORM_COL_BLOCK ? cols - j0 : NORM_COL_BLOCK;
        double acc_w[NORM_COL_BLOCK] = {0}, acc_b[NORM_COL_BLOCK] = {0};
        for (int64_t r = 0; r < rows; r++) {
            const float *xr = x + r * cols + j0, *dyr = dy + r * cols + j0;
            float m = mean ? mean[r] : 0.0f, rs = rstd[r];
            for (int64_t j = 0; j < width; j++) {
                acc_w[j] += (double)dyr[j] * ((xr[j] - m) * rs);
                acc_b[j] += dyr[j];
            }
        }
        for (int64_t j = 0; j < width; j++) {
            if (dw) dw[j0 + j] += (float)acc_w[j];
            if (db) db[j0 + j] += (float)acc_b[j];
        }
    }
}

static kiln_status layernorm_bwd(void *dev, const kiln_norm_args *a) {
    if (a->dtype != KILN_F32) return norm_f16(dev, a, layernorm_bwd, "layernorm_bwd");
    (void)dev;
    const float *mean = CPU_PTR(a->mean, float);
    if (CPU_HAS(a->dx)) norm_input_grad(a, mean);
    norm_param_grads(a, mean);
    return KILN_OK;
}

static kiln_status rmsnorm_bwd(void *dev, const kiln_norm_args *a) {
    if (a->dtype != KILN_F32) return norm_f16(dev, a, rmsnorm_bwd, "rmsnorm_bwd");
    (void)dev;
    if (CPU_HAS(a->dx)) norm_input_grad(a, NULL);
    norm_param_grads(a, NULL);
    return KILN_OK;
}

kiln_status cpu_norm_fwd(void *dev, const kiln_norm_args *a) {
    return a->rms ? rmsnorm_fwd(dev, a) : layernorm_fwd(dev, a);
}

kiln_status cpu_norm_bwd(void *dev, const kiln_norm_args *a) {
    return a->rms ? rmsnorm_bwd(dev, a) : layernorm_bwd(dev, a);
}
