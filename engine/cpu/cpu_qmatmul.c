/* CPU products with matrices quantized in ggml's block formats (kiln_qmatmul_args).
 *
 * Each block's 32 integers are unpacked to floats once and used for every row of x in a
 * tile of up to M_TILE rows: s = sum_j q_j x_j in f32 in j order, then acc += d * s (Q4_1 adds
 * its minimum times the block's sum of x, computed once per x row and block). One token
 * (m = 1) is the same loop with one row. The weight rows are shared among the threads, so
 * each block is read from memory once per tile: decoding one token streams the matrix once,
 * at its quantized size, the bound of this work. */
#include <stdlib.h>

#include "cpu/cpu_f16.h"
#include "cpu/cpu_internal.h"
#include "kiln/quant.h"

#define M_TILE 16

static float load_f16(const unsigned char *b) { return kiln_f16_to_f32((uint16_t)(b[0] | b[1] << 8)); }

/* Block b's integers as floats into q[32], and its scale and minimum (0 but Q4_1). */
static void unpack_block(int format, const unsigned char *b, float *q, float *d, float *min) {
    *d = load_f16(b);
    *min = 0.0f;
    if (format == KILN_Q8_0) {
        for (int j = 0; j < KILN_QBLOCK; j++) q[j] = (float)(int8_t)b[2 + j];
        return;
    }
    const unsigned char *nibbles = b + 2;
    int offset = 8;
    if (format == KILN_Q4_1) *min = load_f16(b + 2), nibbles = b + 4, offset = 0;
    for (int j = 0; j < KILN_QBLOCK / 2; j++) {
        q[j] = (float)((nibbles[j] & 0x0f) - offset);
        q[j + KILN_QBLOCK / 2] = (float)((nibbles[j] >> 4) - offset);
    }
}

static kiln_status qmatmul_f32(const kiln_qmatmul_args *a) {
    const float *x = CPU_PTR(a->x, float);
    const float *bias = CPU_HAS(a->bias) ? CPU_PTR(a->bias, float) : NULL;
    float *y = CPU_PTR(a->y, float);
    const unsigned char *w = CPU_PTR(a->w, unsigned char);
    const int64_t m = a->m, n = a->n, k = a->k, blocks = k / KILN_QBLOCK;
    const size_t row_stride = (size_t)a->row_words * 4, block_bytes = kiln_qformat_block_bytes((kiln_qformat)a->format);
    float *xsum = NULL; /* Q4_1: each x row's sum over each block */
    if (a->format == KILN_Q4_1) {
        if (!(xsum = malloc((size_t)(m * blocks) * sizeof *xsum)))
            return kiln_set_error(KILN_ERR_MEMORY, "cpu qmatmul: out of host memory");
        for (int64_t i = 0; i < m * blocks; i++) {
            float s = 0.0f;
            for (int j = 0; j < KILN_QBLOCK; j++) s += x[i * KILN_QBLOCK + j];
            xsum[i] = s;
        }
    }
#pragma omp parallel for schedule(static) if (cpu_use_threads(m * n * k, 1 << 18))
    for (int64_t r = 0; r < n; r++) {
        const unsigned char *row = w + (size_t)r * row_stride;
        for (int64_t m0 = 0; m0 < m; m0 += M_TILE) {
            const int tile = (int)(m - m0 < M_TILE ? m - m0 : M_TILE);
            float acc[M_TILE] = {0};
            for (int64_t b = 0; b < blocks; b++) {
                float q[KILN_QBLOCK], d, min;
                unpack_block(a->format, row + (size_t)b * block_bytes, q, &d, &min);
                for (int i = 0; i < tile; i++) {
                    const float *xb = x + (size_t)(m0 + i) * (size_t)k + (size_t)b * KILN_QBLOCK;
                    float s = 0.0f;
                    for (int j = 0; j < KILN_QBLOCK; j++) s += q[j] * xb[j];
                    acc[i] += d * s;
                    if (xsum) acc[i] += min * xsum[(m0 + i) * blocks + b];
                }
            }
            for (int i = 0; i < tile; i++) y[(size_t)(m0 + i) * (size_t)n + (size_t)r] = acc[i] + (bias ? bias[r] : 0.0f);
        }
    }
    free(xsum);
    return KILN_OK;
}

kiln_status cpu_qmatmul(void *dev, const kiln_qmatmul_args *a) {
    (void)dev;
    if (a->format < 0 || a->format >= KILN_QFORMAT_COUNT)
        return kiln_set_error(KILN_ERR_ARGUMENT, "cpu qmatmul: unknown format %d", a->format);
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
