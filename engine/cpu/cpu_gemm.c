/* The CPU GEMM: C = alpha op(A) op(B) + beta C (+ bias).
 *
 * Operands are first packed into f32 panels (this also handles both transposes and f16
 * inputs in one place), then a cache-blocked loop with a contiguous inner loop over N that
 * the compiler vectorizes. OpenMP splits the rows of C. */
#include <stdlib.h>
#include <string.h>

#include "cpu/cpu_internal.h"

/* Reads element (r, c) of a row-major matrix with row stride ld, as f32. */
static inline float load(const void *base, kiln_dtype dt, int64_t idx) {
    if (dt == KILN_F16) return kiln_f16_to_f32(((const uint16_t *)base)[idx]);
    return ((const float *)base)[idx];
}

/* Copies op(X) (rows x cols) into a dense row-major f32 matrix. */
static void pack(float *dst, const void *src, kiln_dtype dt, int64_t rows, int64_t cols,
                 int64_t ld, int trans) {
#pragma omp parallel for if (rows * cols > CPU_PAR_MIN)
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++)
            dst[r * cols + c] = trans ? load(src, dt, c * ld + r) : load(src, dt, r * ld + c);
}

#define KC 256 /* depth of a block: a KC x N strip of B stays in L2 */

static void gemm_one(const float *A, const float *B, float *C, const float *bias, int64_t m,
                     int64_t n, int64_t k, int64_t ldc, float alpha, float beta) {
#pragma omp parallel
    {
        float *acc = malloc((size_t)n * sizeof(float));
#pragma omp for schedule(static)
        for (int64_t i = 0; i < m; i++) {
            if (!acc) continue;
            memset(acc, 0, (size_t)n * sizeof(float));
            for (int64_t k0 = 0; k0 < k; k0 += KC) {
                int64_t k1 = k0 + KC < k ? k0 + KC : k;
                for (int64_t p = k0; p < k1; p++) {
                    const float av = A[i * k + p];
                    const float *brow = B + p * n;
                    for (int64_t j = 0; j < n; j++) acc[j] += av * brow[j];
                }
            }
            float *crow = C + i * ldc;
            for (int64_t j = 0; j < n; j++) {
                float v = alpha * acc[j];
                if (beta != 0.0f) v += beta * crow[j];
                if (bias) v += bias[j];
                crow[j] = v;
            }
        }
        free(acc);
    }
}

kiln_status cpu_gemm(void *dev, const kiln_gemm_args *a) {
    (void)dev;
    if (a->c_dtype != KILN_F32)
        return kiln_set_error(KILN_ERR_DTYPE, "cpu gemm: output must be f32");
    int64_t m = a->m, n = a->n, k = a->k;
    float *A = malloc((size_t)(m * k) * sizeof(float));
    float *B = malloc((size_t)(k * n) * sizeof(float));
    if (!A || !B) {
        free(A);
        free(B);
        return kiln_set_error(KILN_ERR_MEMORY, "cpu gemm: out of memory for packing");
    }
    size_t as = kiln_dtype_size(a->a_dtype), bs = kiln_dtype_size(a->b_dtype);
    const float *bias = CPU_HAS(a->bias) ? CPU_PTR(a->bias, float) : NULL;
    for (int64_t b = 0; b < a->batch; b++) {
        const char *abase = CPU_PTR(a->a, char) + (size_t)(b * a->stride_a) * as;
        const char *bbase = CPU_PTR(a->b, char) + (size_t)(b * a->stride_b) * bs;
        float *cbase = CPU_PTR(a->c, float) + b * a->stride_c;
        if (b == 0 || a->stride_a) pack(A, abase, a->a_dtype, m, k, a->lda, a->trans_a);
        if (b == 0 || a->stride_b) pack(B, bbase, a->b_dtype, k, n, a->ldb, a->trans_b);
        gemm_one(A, B, cbase, bias, m, n, k, a->ldc, a->alpha, a->beta);
    }
    free(A);
    free(B);
    return KILN_OK;
}
