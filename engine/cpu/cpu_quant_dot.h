/* Integer dot products of quantized weight blocks with 8-bit activations: the CPU's fast
 * path for kiln_matmul_q (cpu_quant.c).
 *
 * Like ggml's CPU backend, the product first rounds the activations to int8, in the
 * activation format ggml pairs with the weights' format, so a block's contribution is
 * d_w * d_x * sum(q_w * q_x): multiply-adds on bytes, which vector units do 32 or 64 at a
 * time, where f32 weights would need four times the loads and the conversion.
 *
 *   Q8_0, Q4_0, Q5_0   32 activations per block (cpu_qx): d = max|x| / 127, q = round(x / d)
 *   Q4_1, Q5_1         the same blocks with s = d * sum(q), for the weights' minimum (Q8_1)
 *   Q4_K, Q5_K, Q6_K   256 per block (cpu_q8k, ggml's Q8_K: kiln_quantize_row's KILN_Q8_K,
 *                      byte for byte): one f32 scale, and the sums of each 16 integers for
 *                      the minimums (Q4_K, Q5_K) and Q6_K's offset of 32
 *
 * The rounding moves each activation by at most half a step: max|x| / 254 over its block of
 * 32, or over its 256 for the K formats (a larger block, so a coarser step where one value
 * stands out). tests/test_op_quant.c checks the result against that bound, and
 * docs/quantization.md gives the measured effect on loss.
 *
 * One implementation per instruction set, chosen once at run time: AVX2 on x86-64 (byte
 * multiply-adds, as ggml), NEON on AArch64 (widening multiplies; the SDOT instruction when the
 * compiler targets it), and portable C everywhere else. All compute the same integer sums
 * (each K-format super-block's exactly, as ggml), so they differ only in the f32 rounding of
 * the accumulation. The 32-value formats are in cpu_quant_dot.c, the K formats in
 * cpu_quant_dot_k*.c. */
#ifndef KILN_CPU_QUANT_DOT_H
#define KILN_CPU_QUANT_DOT_H

#include <stddef.h>
#include <stdint.h>

#include "kiln/quant.h"

/* One block of 32 activations rounded to int8: x ~ d * q; s = d * sum(q), for the minimum of
 * Q4_1 and Q5_1. */
typedef struct cpu_qx {
    float d, s;
    int8_t q[KILN_QBLOCK];
} cpu_qx;

/* One block of 256 activations in ggml's Q8_K layout (292 bytes): x ~ d * q, and
 * bsums[g] = the sum of q[16 g .. 16 g + 15]. */
typedef struct cpu_q8k {
    float d;
    int8_t q[KILN_QK_K];
    int16_t bsums[KILN_QK_K / 16];
} cpu_q8k;

/* Bytes of one activation block for products with `format` (sizeof cpu_qx or cpu_q8k), and
 * the rounding of k activations (a multiple of the format's block_values) into k /
 * block_values of them at out. */
size_t cpu_qact_bytes(kiln_qformat format);
void cpu_qact_quantize(kiln_qformat format, const float *x, int64_t k, void *out);

/* acc[i] = sum over the `blocks` blocks of weight row `row` (format, block_bytes apart) times
 * activation row i (x + i * blocks activation blocks), for i < rows (at most CPU_QDOT_ROWS). */
#define CPU_QDOT_ROWS 4
typedef void cpu_qdot_fn(kiln_qformat format, const unsigned char *row, size_t block_bytes, int64_t blocks,
                         const void *x, int rows, float *acc);

/* Decoding's case, one activation row x against the n weight rows from w (row_stride bytes
 * apart): y[r] = their dot product + bias[r] (bias may be NULL), each with the bits of
 * cpu_qdot_fn with rows = 1 on that row. One call for all the rows keeps the call and the
 * format's branches out of every row's path. NULL where an implementation has none: the
 * caller then calls cpu_qdot_fn per row. */
typedef void cpu_qdot_n_fn(kiln_qformat format, const unsigned char *w, size_t row_stride, size_t block_bytes,
                           int64_t blocks, int64_t n, const void *x, const float *bias, float *y);

/* One implementation of a format's products: its name ("avx2", "neon", "neon-dotprod",
 * "generic") and functions. */
typedef struct cpu_qdot_impl {
    const char *name;
    cpu_qdot_fn *dot;
    cpu_qdot_n_fn *dot_n; /* may be NULL */
} cpu_qdot_impl;

/* The best implementation of format's products for this CPU. */
cpu_qdot_impl cpu_qdot_select(kiln_qformat format);
/* Every implementation of format's products this build has and this CPU runs, best first
 * ("generic" last): tests hold each to the portable C. Returns how many (at most
 * CPU_QDOT_IMPLS). */
#define CPU_QDOT_IMPLS 4
int cpu_qdot_impls(kiln_qformat format, cpu_qdot_impl *out);

#endif
