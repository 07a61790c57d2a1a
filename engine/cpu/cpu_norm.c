/* CPU LayerNorm and RMSNorm over rows of length cols, forward and backward.
 *
 * Row statistics accumulate in double (two passes for the variance: no cancellation when
 * the mean is large). The backward recomputes xhat from x and the saved mean/rstd:
 *   xhat = (x - mean) * rstd,  g = dy * weight
 *   LayerNorm: dx += rstd * (g - mean(g) - xhat * mean(g * xhat))
 *   RMSNorm:   dx += rstd * (g - xhat * mean(g * xhat))          (mean = 0, no mean(g) term)
 *   dweight += sum over rows of dy * xhat,  dbias += sum over rows of dy. */
#include <math.h>

#include "cpu/cpu_internal.h"

/* Columns per task in the weight/bias gradient: each task owns a block of columns and walks
 * every row, so no two threads write the same dweight[j] (race-free without atomics) and
 * each row's block is read contiguously. */
#define NORM_COL_BLOCK 64

kiln_status cpu_layernorm_fwd(void *dev, const kiln_norm_args *a) {
    (void)dev;
    const float *x = CPU_PTR(a->x, float);
    const float *w = CPU_HAS(a->weight) ? CPU_PTR(a->weight, float) : NULL;
    const float *b = CPU_HAS(a->bias) ? CPU_PTR(a->bias, float) : NULL;
    float *y = CPU_PTR(a->y, float);
    float *mean_out = CPU_HAS(a->mean) ? CPU_PTR(a->mean, float) : NULL;
    float *rstd_out = CPU_HAS(a->rstd) ? CPU_PTR(a->rstd, float) : NULL;
    int64_t rows = a->rows, cols = a->cols;
    double eps = a->eps;
#pragma omp parallel for if (rows * cols > CPU_PAR_MIN)
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        double sum = 0;
        for (int64_t j = 0; j < cols; j++) sum += xr[j];
        double mean = sum / (double)cols;
        double var = 0;
        for (int64_t j = 0; j < cols; j++) {
            double d = xr[j] - mean;
            var += d * d;
        }
        var /= (double)cols;
        float m = (float)mean, rs = (float)(1.0 / sqrt(var + eps));
        for (int64_t j = 0; j < cols; j++) {
            float v = (xr[j] - m) * rs;
            if (w) v *= w[j];
            if (b) v += b[j];
            yr[j] = v;
        }
        if (mean_out) mean_out[r] = m;
        if (rstd_out) rstd_out[r] = rs;
    }
    return KILN_OK;
}

kiln_status cpu_rmsnorm_fwd(void *dev, const kiln_norm_args *a) {
    (void)dev;
    const float *x = CPU_PTR(a->x, float);
    const float *w = CPU_HAS(a->weight) ? CPU_PTR(a->weight, float) : NULL;
    float *y = CPU_PTR(a->y, float);
    float *rstd_out = CPU_HAS(a->rstd) ? CPU_PTR(a->rstd, float) : NULL;
    int64_t rows = a->rows, cols = a->cols;
    double eps = a->eps;
#pragma omp parallel for if (rows * cols > CPU_PAR_MIN)
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        double sumsq = 0;
        for (int64_t j = 0; j < cols; j++) sumsq += (double)xr[j] * xr[j];
        float rs = (float)(1.0 / sqrt(sumsq / (double)cols + eps));
        for (int64_t j = 0; j < cols; j++) yr[j] = w ? xr[j] * rs * w[j] : xr[j] * rs;
        if (rstd_out) rstd_out[r] = rs;
    }
    return KILN_OK;
}

/* dx for every row; `mean` NULL means RMSNorm (no centering, no mean(g) term). */
static void norm_input_grad(const kiln_norm_args *a, const float *mean) {
    const float *x = CPU_PTR(a->x, float), *dy = CPU_PTR(a->dy, float);
    const float *w = CPU_HAS(a->weight) ? CPU_PTR(a->weight, float) : NULL;
    const float *rstd = CPU_PTR(a->rstd, float);
    float *dx = CPU_PTR(a->dx, float);
    int64_t rows = a->rows, cols = a->cols;
#pragma omp parallel for if (rows * cols > CPU_PAR_MIN)
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols, *dyr = dy + r * cols;
        float *dxr = dx + r * cols;
        float m = mean ? mean[r] : 0.0f, rs = rstd[r];
        double sum_g = 0, sum_gx = 0;
        for (int64_t j = 0; j < cols; j++) {
            double g = w ? (double)dyr[j] * w[j] : dyr[j];
            sum_g += g;
            sum_gx += g * ((xr[j] - m) * rs);
        }
        float mean_g = mean ? (float)(sum_g / (double)cols) : 0.0f;
        float mean_gx = (float)(sum_gx / (double)cols);
        for (int64_t j = 0; j < cols; j++) {
            float g = w ? dyr[j] * w[j] : dyr[j];
            float xhat = (xr[j] - m) * rs;
            dxr[j] += rs * (g - mean_g - xhat * mean_gx);
        }
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
#pragma omp parallel for if (rows * cols > CPU_PAR_MIN)
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

kiln_status cpu_layernorm_bwd(void *dev, const kiln_norm_args *a) {
    (void)dev;
    const float *mean = CPU_PTR(a->mean, float);
    if (CPU_HAS(a->dx)) norm_input_grad(a, mean);
    norm_param_grads(a, mean);
    return KILN_OK;
}

kiln_status cpu_rmsnorm_bwd(void *dev, const kiln_norm_args *a) {
    (void)dev;
    if (CPU_HAS(a->dx)) norm_input_grad(a, NULL);
    norm_param_grads(a, NULL);
    return KILN_OK;
}
