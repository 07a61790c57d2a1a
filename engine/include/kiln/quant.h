/* Weight-only quantization in the block formats of ggml / llama.cpp, byte for byte: the
 * formats of the quantized models users download (GGUF) and of the kernels that decode from
 * them. A row of weights is cut into blocks of consecutive values: KILN_QBLOCK (32) for the
 * first five formats, a super-block of KILN_QK_K (256) for the K formats. Every field is
 * little-endian; d, m and dmin are f16 but for Q8_K's f32 d. Blocks follow one another with
 * no padding (ggml-common.h's block_* structs):
 *
 *   Q8_0  34 bytes: d, qs[32] int8;                        value = d * q
 *   Q4_0  18 bytes: d, qs[16];                             value = d * (q - 8)
 *   Q4_1  20 bytes: d, m, qs[16];                          value = d * q + m
 *   Q5_0  22 bytes: d, qh[4], qs[16];                      value = d * (q - 16)
 *   Q5_1  24 bytes: d, m, qh[4], qs[16];                   value = d * q + m
 *       In these five, byte j of qs holds value j in its low nibble and value j + 16 in its
 *       high one; Q5's fifth bit of value j is bit j of qh (a little-endian uint32).
 *   Q4_K 144 bytes: d, dmin, scales[12], qs[128]
 *   Q5_K 176 bytes: d, dmin, scales[12], qh[32], qs[128]
 *       8 sub-blocks of 32 values, each with a 6-bit scale sc and min mn packed in scales:
 *       for sub-block j < 4, sc = scales[j] & 63, mn = scales[j + 4] & 63; for j >= 4,
 *       sc = (scales[j + 4] & 15) | (scales[j - 4] >> 6) << 4 and
 *       mn = (scales[j + 4] >> 4) | (scales[j] >> 6) << 4.  value = d * sc * q - dmin * mn.
 *       Values 64c .. 64c + 31 are the low nibbles of qs[32c .. 32c + 31], values 64c + 32 ..
 *       64c + 63 their high nibbles; Q5_K's fifth bit of those is bit 2c, resp. 2c + 1, of
 *       qh[l] for the value's l = index % 32.
 *   Q6_K 210 bytes: ql[128], qh[64], scales[16] int8, d (last)
 *       16 sub-blocks of 16 values, value = d * scales[i / 16] * (q - 32), q 6 bits. In each
 *       half h (128 values; ql + 64h, qh + 32h), for l < 32: values l, l + 32, l + 64, l + 96
 *       take the low nibble of ql[l], of ql[l + 32], the high nibble of ql[l], of ql[l + 32],
 *       and bits 0-1, 2-3, 4-5, 6-7 of qh[l] as their top two bits.
 *   Q8_K 292 bytes: d (f32), qs[256] int8, bsums[16] int16 (the sums of each 16 qs);
 *       value = d * q. An activation format (the CPU's, as ggml's): rows only, never a matrix.
 *
 * kiln_quantize_row implements ggml's reference quantizers without an importance matrix
 * (quantize_row_*_ref in ggml-quants.c) with the same float operations in the same order, so
 * it writes the same bytes (tests/test_quant.c holds bytes that ggml's own library wrote;
 * ctest quant_ggml_reference compares with the library itself where it is installed). */
#ifndef KILN_QUANT_H
#define KILN_QUANT_H

#include "kiln/context.h"
#include "kiln/tensor.h"
#include "kiln/types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_QBLOCK 32 /* the block of Q8_0, Q4_0, Q4_1, Q5_0 and Q5_1 */
#define KILN_QK_K 256  /* the super-block of the K formats */

typedef enum kiln_qformat {
    KILN_Q8_0 = 0,
    KILN_Q4_0 = 1,
    KILN_Q4_1 = 2,
    KILN_Q5_0 = 3,
    KILN_Q5_1 = 4,
    KILN_Q4_K = 5,
    KILN_Q5_K = 6,
    KILN_Q6_K = 7,
    KILN_Q8_K = 8, /* an activation format (the CPU's, as ggml's): rows only */
    KILN_QFORMAT_COUNT
} kiln_qformat;

/* "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q4_k", "q5_k", "q6_k", "q8_k"; the format named
 * so (-1 for none). */
const char *kiln_qformat_name(kiln_qformat format);
int kiln_qformat_from_name(const char *name);

/* Values in one block: KILN_QBLOCK or KILN_QK_K (0 for an unknown format). */
size_t kiln_qformat_block_values(kiln_qformat format);
/* Bytes of one block, and of a row of n values (n a multiple of the block's values). */
size_t kiln_qformat_block_bytes(kiln_qformat format);
size_t kiln_qformat_row_bytes(kiln_qformat format, int64_t n);

/* Quantizes n floats (a multiple of kiln_qformat_block_values: a row that is not is refused
 * with KILN_ERR_SHAPE) into kiln_qformat_row_bytes(format, n) bytes at out. */
kiln_status kiln_quantize_row(kiln_qformat format, const float *x, int64_t n, void *out);
/* The values the blocks stand for, as f32. */
kiln_status kiln_dequantize_row(kiln_qformat format, const void *in, int64_t n, float *out);

/* ---- quantized matrices on a device ----
 * A [rows, cols] weight matrix kept in a block format (cols a multiple of the format's
 * block_values; not KILN_Q8_K, an activation format): row
 * r holds the weights of output r along the reduction dimension, as nn.Linear's weight and
 * ggml's tensors (not as GPT-2's Conv1D weight, which is its transpose). Device memory:
 * rows x kiln_qformat_row_bytes(cols) bytes, each row padded to whole 32-bit words (the
 * blocks inside a row are not word aligned: 22, 24 or 210 bytes). */
typedef struct kiln_qmatrix kiln_qmatrix;

kiln_qmatrix *kiln_qmatrix_new(kiln_ctx *ctx, kiln_qformat format, int64_t rows, int64_t cols);
void kiln_qmatrix_free(kiln_qmatrix *q);
kiln_qformat kiln_qmatrix_format(const kiln_qmatrix *q);
int64_t kiln_qmatrix_rows(const kiln_qmatrix *q);
int64_t kiln_qmatrix_cols(const kiln_qmatrix *q);
/* Device bytes the matrix takes. */
size_t kiln_qmatrix_bytes(const kiln_qmatrix *q);
/* Uploads rows x kiln_qformat_row_bytes(format, cols) bytes of blocks, rows one after the
 * other (GGUF's layout). */
kiln_status kiln_qmatrix_upload(kiln_qmatrix *q, const void *blocks);
/* Quantizes a host [rows, cols] f32 matrix (row-major) and uploads it; transposed != 0 takes
 * a [cols, rows] matrix instead (GPT-2's Conv1D layout), quantizing its columns. */
kiln_status kiln_qmatrix_quantize(kiln_qmatrix *q, const float *w, int transposed);

/* Downloads the blocks into rows x kiln_qformat_row_bytes(format, cols) bytes, rows one after
 * the other, unpadded (GGUF's layout): the inverse of kiln_qmatrix_upload. */
kiln_status kiln_qmatrix_download(const kiln_qmatrix *q, void *blocks);

/* y[..., rows] = x[..., cols] W^T (+ bias[rows]): the product of activations (f32 or f16,
 * y the same) with a quantized matrix, read block by block by the kernel, accumulating in
 * f32. The matrix is frozen: it never gets a gradient. When x or the bias requires a
 * gradient (and grad is enabled), the product records on the tape: the backward computes
 * dX = dY W from the blocks (kiln_matmul_qt) and dBias = dY summed over its rows, as a
 * LoRA adapter over a quantized base needs. The matrix must then outlive the backward. */
kiln_tensor *kiln_matmul_q(kiln_tensor *x, const kiln_qmatrix *w, kiln_tensor *bias);

/* y[..., cols] = dy[..., rows] W: the transposed product (f32 or f16, y in dy's dtype,
 * accumulating in f32), the gradient of kiln_matmul_q's x. The kernel decodes the blocks it
 * needs as it goes: no dequantized copy of the matrix. No gradient flows through it. */
kiln_tensor *kiln_matmul_qt(kiln_tensor *dy, const kiln_qmatrix *w);

/* 1 when kiln_matmul_q on ctx's device rounds the activations to int8 first and sums
 * integer products, as ggml's CPU backend does; 0 when the product uses the activations as
 * given (other devices). The rounding depends on the weights' format. The CPU rounds as ggml
 * does for that format (cpu/cpu_quant_dot.h):
 * - Q8_0, Q4_0, Q4_1, Q5_0 and Q5_1: each block of 32 values to one scale, d = max|x| / 127,
 *   q = round(x / d), half to even.
 * - Q4_K, Q5_K and Q6_K: each block of 256 values to Q8_K, one f32 scale, d = -(the value of
 *   largest magnitude) / 127.
 * Vulkan devices with integer dot products (VK_KHR_shader_integer_dot_product; not in
 * KILN_VK_MIN_LIMITS mode) round too, in blocks of their own choosing. Each activation then
 * moves by at most half a step, max|x| / 254 over its block. */
int kiln_qmatmul_rounds_activations(const kiln_ctx *ctx);

#ifdef __cplusplus
}
#endif
#endif
