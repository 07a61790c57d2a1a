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

#ifdef __cplusplus
}
#endif
#endif
