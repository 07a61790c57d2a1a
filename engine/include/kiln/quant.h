/* Weight-only quantization in the block formats of ggml / llama.cpp, byte for byte: the
 * formats of the quantized models users download (GGUF) and of the kernels that decode from
 * them. A row of weights is cut into blocks of KILN_QBLOCK (32) consecutive values; each
 * block holds an f16 scale (and, for Q4_1, an f16 minimum) and one small integer per value:
 *
 *   Q8_0  34 bytes: d (f16), 32 x int8 q;            value = d * q
 *   Q4_0  18 bytes: d (f16), 16 bytes of 4-bit q;    value = d * (q - 8)
 *   Q4_1  20 bytes: d (f16), m (f16), 16 bytes of q; value = d * q + m
 *
 * In the 4-bit formats byte j holds value j in its low nibble and value j + 16 in its high
 * one. kiln_quantize_row implements ggml's reference quantizers (quantize_row_*_ref) with the
 * same float operations in the same order, so it writes the same bytes (tests/test_quant.c
 * holds bytes that ggml's own library wrote). */
#ifndef KILN_QUANT_H
#define KILN_QUANT_H

#include "kiln/context.h"
#include "kiln/tensor.h"
#include "kiln/types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_QBLOCK 32

typedef enum kiln_qformat {
    KILN_Q8_0 = 0,
    KILN_Q4_0 = 1,
    KILN_Q4_1 = 2,
    KILN_QFORMAT_COUNT
} kiln_qformat;

/* "q8_0", "q4_0", "q4_1"; the format named so (-1 for none). */
const char *kiln_qformat_name(kiln_qformat format);
int kiln_qformat_from_name(const char *name);

/* Bytes of one block of KILN_QBLOCK values, and of a row of n values (n a multiple of
 * KILN_QBLOCK). */
size_t kiln_qformat_block_bytes(kiln_qformat format);
size_t kiln_qformat_row_bytes(kiln_qformat format, int64_t n);

/* Quantizes n floats (a multiple of KILN_QBLOCK: a row that is not is refused) into
 * kiln_qformat_row_bytes(format, n) bytes at out. */
kiln_status kiln_quantize_row(kiln_qformat format, const float *x, int64_t n, void *out);
/* The values the blocks stand for, as f32. */
kiln_status kiln_dequantize_row(kiln_qformat format, const void *in, int64_t n, float *out);

/* ---- quantized matrices on a device ----
 * A [rows, cols] weight matrix kept in a block format (cols a multiple of KILN_QBLOCK): row
 * r holds the weights of output r along the reduction dimension, as nn.Linear's weight and
 * ggml's tensors (not as GPT-2's Conv1D weight, which is its transpose). Device memory:
 * rows x kiln_qformat_row_bytes(cols) bytes, each row padded to whole 32-bit words. */
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

/* y[..., rows] = x[..., cols] W^T (+ bias[rows]): the product of activations (f32 or f16,
 * y the same) with a quantized matrix, read block by block by the kernel, accumulating in
 * f32. No gradient flows through it (quantized weights are for inference). */
kiln_tensor *kiln_matmul_q(kiln_tensor *x, const kiln_qmatrix *w, kiln_tensor *bias);

/* 1 when kiln_matmul_q on ctx's device rounds each block of 32 activations to int8 first
 * (d = max|x| / 127, q = round(x / d), half to even) and sums integer products, as ggml's
 * CPU backend does: the CPU backend, and Vulkan devices with integer dot products
 * (VK_KHR_shader_integer_dot_product; not in KILN_VK_MIN_LIMITS mode). Each activation then
 * moves by at most half a step, max|x| / 254 in its block. 0 when the product uses the
 * activations as given (other devices). */
int kiln_qmatmul_rounds_activations(const kiln_ctx *ctx);

#ifdef __cplusplus
}
#endif
#endif
