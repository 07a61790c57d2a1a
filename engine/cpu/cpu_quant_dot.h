/* Integer dot products of quantized weight blocks with 8-bit activations: the CPU's fast
 * path for kiln_matmul_q (cpu_quant.c).
 *
 * Like ggml's CPU backend, the product rounds each block of 32 activations to int8 with one
 * f32 scale (d = max|x| / 127, q = round(x / d)), so a block's contribution is
 * d_w * d_x * sum(q_w * q_x): 32 multiply-adds on bytes, which vector units do 32 or 64 at a
 * time, where f32 weights would need four times the loads and the conversion. The rounding
 * costs at most half a step of each activation (|x| max / 254 per block); tests/test_op_quant.c
 * checks the result against that bound, and docs/quantization.md gives the measured effect on
 * loss (none at the third decimal).
 *
 * One implementation per instruction set, chosen once at run time: AVX2 on x86-64 (byte
 * multiply-adds, as ggml), NEON on AArch64 (widening multiplies; the SDOT instruction when the
 * compiler targets it), and portable C everywhere else. All compute the same integer sums, so
 * they differ only in the f32 rounding of the accumulation. */
#ifndef KILN_CPU_QUANT_DOT_H
#define KILN_CPU_QUANT_DOT_H

#include <stddef.h>
#include <stdint.h>

#include "kiln/quant.h"

/* One block of activations rounded to int8: x ~ d * q; s = d * sum(q), for Q4_1's minimum. */
typedef struct cpu_qx {
    float d, s;
    int8_t q[KILN_QBLOCK];
} cpu_qx;

/* Rounds `blocks` blocks of x (blocks * 32 floats) into out. */
void cpu_qx_quantize(const float *x, int64_t blocks, cpu_qx *out);

/* acc[i] = sum over the blocks of weight row `row` (format, block_bytes apart) times the
 * activation row x + i * blocks, for i < rows (at most CPU_QDOT_ROWS). */
#define CPU_QDOT_ROWS 4
typedef void cpu_qdot_fn(kiln_qformat format, const unsigned char *row, size_t block_bytes, int64_t blocks,
                         const cpu_qx *x, int rows, float *acc);

/* The best implementation for this CPU, and its name ("avx2", "neon", "neon-dotprod",
 * "generic"). */
cpu_qdot_fn *cpu_qdot_select(const char **name);

/* Decoding's case, one activation row x against the n weight rows from w (row_stride bytes
 * apart): y[r] = their dot product + bias[r] (bias may be NULL), each with the bits of
 * cpu_qdot_fn with rows = 1 on that row. One call for all the rows keeps the call and the
 * format's branches out of every row's path. NULL where no implementation does better than
 * calling cpu_qdot_fn per row (all but AVX2). */
typedef void cpu_qdot_n_fn(kiln_qformat format, const unsigned char *w, size_t row_stride, size_t block_bytes,
                           int64_t blocks, int64_t n, const cpu_qx *x, const float *bias, float *y);
cpu_qdot_n_fn *cpu_qdot_n_select(void);

#endif
