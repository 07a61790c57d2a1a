/* ggml's block formats (kiln/quant.h): their names and sizes, and whole rows cut into blocks
 * for the quantizers and dequantizers of core/quant_32.c and core/quant_k.c. */
#include <string.h>

#include "core/internal.h"
#include "core/quant_blocks.h"
#include "kiln/quant.h"

static const struct {
    const char *name;
    size_t block_values, block_bytes;
    kiln_quant_block_fn *quantize;
    kiln_dequant_block_fn *dequantize;
} formats[KILN_QFORMAT_COUNT] = {
    [KILN_Q8_0] = {"q8_0", KILN_QBLOCK, 2 + KILN_QBLOCK, kiln_quantize_q8_0, kiln_dequantize_q8_0},
    [KILN_Q4_0] = {"q4_0", KILN_QBLOCK, 2 + KILN_QBLOCK / 2, kiln_quantize_q4_0, kiln_dequantize_q4_0},
    [KILN_Q4_1] = {"q4_1", KILN_QBLOCK, 4 + KILN_QBLOCK / 2, kiln_quantize_q4_1, kiln_dequantize_q4_1},
    [KILN_Q5_0] = {"q5_0", KILN_QBLOCK, 2 + 4 + KILN_QBLOCK / 2, kiln_quantize_q5_0, kiln_dequantize_q5_0},
    [KILN_Q5_1] = {"q5_1", KILN_QBLOCK, 4 + 4 + KILN_QBLOCK / 2, kiln_quantize_q5_1, kiln_dequantize_q5_1},
    /* d, dmin, 12 bytes of scales and mins, (Q5_K: 32 bytes of fifth bits,) 4-bit values */
    [KILN_Q4_K] = {"q4_k", KILN_QK_K, 4 + 12 + KILN_QK_K / 2, kiln_quantize_q4_k, kiln_dequantize_q4_k},
    [KILN_Q5_K] = {"q5_k", KILN_QK_K, 4 + 12 + KILN_QK_K / 8 + KILN_QK_K / 2, kiln_quantize_q5_k, kiln_dequantize_q5_k},
    /* low nibbles, top two bits, 16 int8 scales, d */
    [KILN_Q6_K] = {"q6_k", KILN_QK_K, KILN_QK_K / 2 + KILN_QK_K / 4 + KILN_QK_K / 16 + 2, kiln_quantize_q6_k,
                   kiln_dequantize_q6_k},
    /* f32 d, int8 values, 16 int16 sums */
    [KILN_Q8_K] = {"q8_k", KILN_QK_K, 4 + KILN_QK_K + 2 * KILN_QK_K / 16, kiln_quantize_q8_k, kiln_dequantize_q8_k},
};

_Static_assert(KILN_Q8_0 == KILN_ABI_Q8_0 && KILN_Q4_0 == KILN_ABI_Q4_0 && KILN_Q4_1 == KILN_ABI_Q4_1 &&
                   KILN_Q5_0 == KILN_ABI_Q5_0 && KILN_Q5_1 == KILN_ABI_Q5_1 && KILN_Q4_K == KILN_ABI_Q4_K &&
                   KILN_Q5_K == KILN_ABI_Q5_K && KILN_Q6_K == KILN_ABI_Q6_K,
               "kiln_qformat and the kernels' KILN_ABI_Q* must agree");

static int known(kiln_qformat f) { return (int)f >= 0 && f < KILN_QFORMAT_COUNT; }

const char *kiln_qformat_name(kiln_qformat format) { return known(format) ? formats[format].name : "?"; }

int kiln_qformat_from_name(const char *name) {
    for (int f = 0; name && f < KILN_QFORMAT_COUNT; f++)
        if (!strcmp(name, formats[f].name)) return f;
    return -1;
}

size_t kiln_qformat_block_values(kiln_qformat format) { return known(format) ? formats[format].block_values : 0; }

size_t kiln_qformat_block_bytes(kiln_qformat format) { return known(format) ? formats[format].block_bytes : 0; }

size_t kiln_qformat_row_bytes(kiln_qformat format, int64_t n) {
    return n > 0 && known(format) ? (size_t)n / formats[format].block_values * formats[format].block_bytes : 0;
}

static kiln_status check_row(kiln_qformat format, const void *a, const void *b, int64_t n, const char *what) {
    if (!known(format))
        return kiln_set_error(KILN_ERR_ARGUMENT, "%s: unknown quantization format %d", what, (int)format);
    if (!a || !b) return kiln_set_error(KILN_ERR_ARGUMENT, "%s: NULL buffer", what);
    const int64_t block = (int64_t)formats[format].block_values;
    if (n < 0 || n % block)
        return kiln_set_error(KILN_ERR_SHAPE,
                              "%s: a row of %lld values is not a whole number of %s's %lld-value blocks", what, (long long)n, formats[format].name, (long long)block);
    return KILN_OK;
}

kiln_status kiln_quantize_row(kiln_qformat format, const float *x, int64_t n, void *out) {
    kiln_status s = check_row(format, x, out, n, "kiln_quantize_row");
    if (s) return s;
    unsigned char *b = out;
    const size_t values = formats[format].block_values, step = formats[format].block_bytes;
    for (int64_t i = 0; i < n / (int64_t)values; i++, b += step, x += values) formats[format].quantize(x, b);
    return KILN_OK;
}

kiln_status kiln_dequantize_row(kiln_qformat format, const void *in, int64_t n, float *out) {
    kiln_status s = check_row(format, in, out, n, "kiln_dequantize_row");
    if (s) return s;
    const unsigned char *b = in;
    const size_t values = formats[format].block_values, step = formats[format].block_bytes;
    for (int64_t i = 0; i < n / (int64_t)values; i++, b += step, out += values) formats[format].dequantize(b, out);
    return KILN_OK;
}
