/* The GEMM as its definition: one dot product per element of C, accumulated in double.
 * Slow and obviously right; tests/test_cpu_gemm.c holds the fast path to it. An f16 C is
 * read (beta != 0) and rounded once per element. */
#include "cpu/cpu_gemm.h"

static inline double element(const void *base, kiln_dtype dt, int64_t idx) {
    if (dt == KILN_F16) return kiln_f16_to_f32(((const uint16_t *)base)[idx]);
    return ((const float *)base)[idx];
}

kiln_status cpu_gemm_reference(void *dev, const kiln_gemm_args *a) {
    (void)dev;
    if (a->c_dtype != KILN_F32 && a->c_dtype != KILN_F16)
        return kiln_set_error(KILN_ERR_DTYPE, "cpu gemm: output must be f32 or f16");
    const size_t cs = kiln_dtype_size(a->c_dtype);
    const size_t as = kiln_dtype_size(a->a_dtype), bs = kiln_dtype_size(a->b_dtype);
    const float *bias = CPU_HAS(a->bias) ? CPU_PTR(a->bias, float) : NULL;
    for (int64_t b = 0; b < a->batch; b++) {
        const char *A = CPU_PTR(a->a, char) + (size_t)(b * a->stride_a) * as;
        const char *B = CPU_PTR(a->b, char) + (size_t)(b * a->stride_b) * bs;
        char *C = CPU_PTR(a->c, char) + (size_t)(b * a->stride_c) * cs;
#pragma omp parallel for if (a->m * a->n * a->k > CPU_PAR_MIN)
        for (int64_t i = 0; i < a->m; i++) {
            for (int64_t j = 0; j < a->n; j++) {
                double s = 0;
                for (int64_t p = 0; p < a->k; p++) {
                    int64_t ai = a->trans_a ? p * a->lda + i : i * a->lda + p;
                    int64_t bi = a->trans_b ? j * a->ldb + p : p * a->ldb + j;
                    s += element(A, a->a_dtype, ai) * element(B, a->b_dtype, bi);
                }
                const int64_t ci = i * a->ldc + j;
                double v = a->alpha * s + (bias ? bias[j] : 0.0);
                if (a->beta != 0.0f) v += (double)a->beta * element(C, a->c_dtype, ci); /* beta 0: never read C */
                if (a->c_dtype == KILN_F16)
                    ((uint16_t *)(void *)C)[ci] = kiln_f32_to_f16((float)v);
                else
                    ((float *)(void *)C)[ci] = (float)v;
            }
        }
    }
    return KILN_OK;
}
