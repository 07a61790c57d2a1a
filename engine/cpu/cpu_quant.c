/* CPU products with matrices quantized in ggml's block formats (kiln_qmatmul_args).
 *
 * The activations are rounded to int8 blocks once, in the activation format ggml pairs with
 * the weights' format (cpu_quant_dot.h says which, why and how much that costs), then each
 * thread takes whole weight rows and, for tiles of up to CPU_QDOT_ROWS rows of x, sums
 * integer block products scaled by both blocks' scales. One token (m = 1) is the
 * same loop with one row. Each weight block is unpacked once per tile and read from memory
 * once per product: decoding a token streams the matrix once, at its quantized size, which
 * is the bound of this work. */
#include <stdlib.h>

#include "cpu/cpu_f16.h"
#include "cpu/cpu_internal.h"
#include "cpu/cpu_quant_dot.h"
#include "kiln/quant.h"

/* The product of m activation rows with weight rows [r0, r0 + rows) in tiles of up to
 * CPU_QDOT_ROWS activation rows: each weight block is unpacked once per tile. */
static void qmatmul_rows(const kiln_qmatmul_args *a, cpu_qdot_fn *dot, const unsigned char *xq, size_t x_row_bytes,
                         const float *bias, float *y) {
    const kiln_qformat format = (kiln_qformat)a->format;
    const unsigned char *w = CPU_PTR(a->w, unsigned char);
    const int64_t m = a->m, n = a->n, blocks = a->k / (int64_t)kiln_qformat_block_values(format);
    const size_t row_stride = (size_t)a->row_words * 4, block_bytes = kiln_qformat_block_bytes(format);
#pragma omp parallel for schedule(static) if (cpu_use_threads(m * n * a->k, 1 << 18))
    for (int64_t r = 0; r < n; r++) {
        const unsigned char *row = w + (size_t)r * row_stride;
        for (int64_t m0 = 0; m0 < m; m0 += CPU_QDOT_ROWS) {
            const int tile = (int)(m - m0 < CPU_QDOT_ROWS ? m - m0 : CPU_QDOT_ROWS);
            float acc[CPU_QDOT_ROWS];
            dot(format, row, block_bytes, blocks, xq + (size_t)m0 * x_row_bytes, tile, acc);
            for (int i = 0; i < tile; i++) y[(size_t)(m0 + i) * (size_t)n + (size_t)r] = acc[i] + (bias ? bias[r] : 0.0f);
        }
    }
}

static kiln_status qmatmul_f32(const kiln_qmatmul_args *a) {
    const float *x = CPU_PTR(a->x, float);
    const float *bias = CPU_HAS(a->bias) ? CPU_PTR(a->bias, float) : NULL;
    float *y = CPU_PTR(a->y, float);
    const kiln_qformat format = (kiln_qformat)a->format;
    const int64_t m = a->m, n = a->n, blocks = a->k / (int64_t)kiln_qformat_block_values(format);
    const size_t row_stride = (size_t)a->row_words * 4, block_bytes = kiln_qformat_block_bytes(format);
    const size_t x_row_bytes = (size_t)blocks * cpu_qact_bytes(format);
    unsigned char *xq = malloc((size_t)m * x_row_bytes);
    if (!xq) return kiln_set_error(KILN_ERR_MEMORY, "cpu qmatmul: out of host memory");
    const cpu_qdot_impl impl = cpu_qdot_select(format);
#pragma omp parallel for schedule(static) if (cpu_use_threads(m * a->k, 1 << 16))
    for (int64_t i = 0; i < m; i++) cpu_qact_quantize(format, x + i * a->k, a->k, xq + (size_t)i * x_row_bytes);
    if (m == 1 && impl.dot_n) { /* one token: runs of QDOT_RUN rows per call */
        enum { QDOT_RUN = 64 };
        const unsigned char *w = CPU_PTR(a->w, unsigned char);
#pragma omp parallel for schedule(static) if (cpu_use_threads(n * a->k, 1 << 18))
        for (int64_t r = 0; r < n; r += QDOT_RUN)
            impl.dot_n(format, w + (size_t)r * row_stride, row_stride, block_bytes, blocks,
                       n - r < QDOT_RUN ? n - r : QDOT_RUN, xq, bias ? bias + r : NULL, y + r);
    } else {
        qmatmul_rows(a, impl.dot, xq, x_row_bytes, bias, y);
    }
    free(xq);
    return KILN_OK;
}

int cpu_qmatmul_rounds_x(void *dev) {
    (void)dev;
    return 1;
}

kiln_status cpu_qmatmul(void *dev, const kiln_qmatmul_args *a) {
    (void)dev;
    if (a->format < 0 || a->format >= KILN_QFORMAT_COUNT || a->format == KILN_Q8_K) /* Q8_K: activations only */
        return kiln_set_error(KILN_ERR_ARGUMENT, "cpu qmatmul: unknown weight format %d", a->format);
    if (a->dtype == KILN_F32) return qmatmul_f32(a);
    /* f16 activations: the f32 kernel on widened copies (cpu_f16.h) */
    kiln_qmatmul_args w = *a;
    w.dtype = KILN_F32;
    cpu_widen s;
    cpu_widen_init(&s, a->dtype, "qmatmul");
    cpu_widen_operand(&s, &w.x, a->m * a->k, CPU_IN);
    cpu_widen_operand(&s, &w.bias, a->n, CPU_IN);
    cpu_widen_operand(&s, &w.y, a->m * a->n, CPU_OUT);
    return cpu_widen_finish(&s, s.status ? s.status : qmatmul_f32(&w));
}
