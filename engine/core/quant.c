/* ggml's block formats (kiln/quant.h). Each quantizer repeats ggml's reference
 * (ggml-quants.c, quantize_row_*_ref) operation for operation: the scale from the block's
 * extreme value, its reciprocal (a multiply, not a divide, per value), and ggml's rounding of
 * each kind (roundf for Q8_0, +8.5 and truncation for Q4_0, +0.5 and truncation for Q4_1);
 * separate statements, so that no compiler fuses a multiply and an add that ggml rounds
 * apart. */
#include <math.h>
#include <string.h>

#include "core/internal.h"
#include "kiln/quant.h"

static const struct {
    const char *name;
    size_t block_bytes;
} formats[KILN_QFORMAT_COUNT] = {
    [KILN_Q8_0] = {.name = "q8_0", .block_bytes = 2 + KILN_QBLOCK},
    [KILN_Q4_0] = {.name = "q4_0", .block_bytes = 2 + KILN_QBLOCK / 2},
    [KILN_Q4_1] = {.name = "q4_1", .block_bytes = 4 + KILN_QBLOCK / 2},
};

_Static_assert(KILN_Q8_0 == KILN_ABI_Q8_0 && KILN_Q4_0 == KILN_ABI_Q4_0 && KILN_Q4_1 == KILN_ABI_Q4_1,
               "kiln_qformat and the kernels' KILN_ABI_Q* must agree");

static int known(kiln_qformat f) { return (int)f >= 0 && f < KILN_QFORMAT_COUNT; }

const char *kiln_qformat_name(kiln_qformat format) { return known(format) ? formats[format].name : "?"; }

int kiln_qformat_from_name(const char *name) {
    for (int f = 0; name && f < KILN_QFORMAT_COUNT; f++)
        if (!strcmp(name, formats[f].name)) return f;
    return -1;
}

size_t kiln_qformat_block_bytes(kiln_qformat format) { return known(format) ? formats[format].block_bytes : 0; }

size_t kiln_qformat_row_bytes(kiln_qformat format, int64_t n) {
    return n > 0 ? (size_t)(n / KILN_QBLOCK) * kiln_qformat_block_bytes(format) : 0;
}

static void put_f16(unsigned char *at, float v) {
    uint16_t h = kiln_f32_to_f16(v);
    at[0] = (unsigned char)(h & 0xff), at[1] = (unsigned char)(h >> 8); /* little-endian, as GGUF */
}

static float get_f16(const unsigned char *at) { return kiln_f16_to_f32((uint16_t)(at[0] | at[1] << 8)); }

static void quantize_q8_0(const float *x, unsigned char *b) {
    float amax = 0.0f;
    for (int j = 0; j < KILN_QBLOCK; j++) amax = fmaxf(amax, fabsf(x[j]));
    const float d = amax / ((1 << 7) - 1);
    const float id = d ? 1.0f / d : 0.0f;
    put_f16(b, d);
    for (int j = 0; j < KILN_QBLOCK; j++) {
        const float x0 = x[j] * id;
        b[2 + j] = (unsigned char)(int8_t)roundf(x0);
    }
}

static void quantize_q4_0(const float *x, unsigned char *b) {
    float amax = 0.0f, max = 0.0f; /* the value of largest magnitude, with its sign */
    for (int j = 0; j < KILN_QBLOCK; j++)
        if (amax < fabsf(x[j])) amax = fabsf(x[j]), max = x[j];
    const float d = max / -8;
    const float id = d ? 1.0f / d : 0.0f;
    put_f16(b, d);
    for (int j = 0; j < KILN_QBLOCK / 2; j++) {
        const float x0 = x[j] * id;
        const float x1 = x[KILN_QBLOCK / 2 + j] * id;
        const int q0 = (int8_t)(x0 + 8.5f), q1 = (int8_t)(x1 + 8.5f);
        b[2 + j] = (unsigned char)((q0 < 15 ? q0 : 15) | (q1 < 15 ? q1 : 15) << 4);
    }
}

static void quantize_q4_1(const float *x, unsigned char *b) {
    float min = x[0], max = x[0];
    for (int j = 1; j < KILN_QBLOCK; j++) min = x[j] < min ? x[j] : min, max = x[j] > max ? x[j] : max;
    const float d = (max - min) / ((1 << 4) - 1);
    const float id = d ? 1.0f / d : 0.0f;
    put_f16(b, d);
    put_f16(b + 2, min);
    for (int j = 0; j < KILN_QBLOCK / 2; j++) {
        const float x0 = (x[j] - min) * id;
        const float x1 = (x[KILN_QBLOCK / 2 + j] - min) * id;
        const int q0 = (int8_t)(x0 + 0.5f), q1 = (int8_t)(x1 + 0.5f);
        b[4 + j] = (unsigned char)((q0 < 15 ? q0 : 15) | (q1 < 15 ? q1 : 15) << 4);
    }
}

static kiln_status check_row(kiln_qformat format, const void *a, const void *b, int64_t n, const char *what) {
    if (!known(format)) return kiln_set_error(KILN_ERR_ARGUMENT, "%s: unknown quantization format %d", what, (int)format);
    if (!a || !b) return kiln_set_error(KILN_ERR_ARGUMENT, "%s: NULL buffer", what);
    if (n < 0 || n % KILN_QBLOCK)
        return kiln_set_error(KILN_ERR_SHAPE, "%s: a row of %lld values is not a whole number of %d-value blocks",
                              what, (long long)n, KILN_QBLOCK);
    return KILN_OK;
}

kiln_status kiln_quantize_row(kiln_qformat format, const float *x, int64_t n, void *out) {
    kiln_status s = check_row(format, x, out, n, "kiln_quantize_row");
    if (s) return s;
    unsigned char *b = out;
    size_t step = formats[format].block_bytes;
    for (int64_t i = 0; i < n / KILN_QBLOCK; i++, b += step, x += KILN_QBLOCK) {
        if (format == KILN_Q8_0) quantize_q8_0(x, b);
        else if (format == KILN_Q4_0) quantize_q4_0(x, b);
        else quantize_q4_1(x, b);
    }
    return KILN_OK;
}

kiln_status kiln_dequantize_row(kiln_qformat format, const void *in, int64_t n, float *out) {
    kiln_status s = check_row(format, in, out, n, "kiln_dequantize_row");
    if (s) return s;
    const unsigned char *b = in;
    size_t step = formats[format].block_bytes;
    for (int64_t i = 0; i < n / KILN_QBLOCK; i++, b += step, out += KILN_QBLOCK) {
        const float d = get_f16(b);
        if (format == KILN_Q8_0) {
            for (int j = 0; j < KILN_QBLOCK; j++) out[j] = d * (float)(int8_t)b[2 + j];
        } else {
            const float m = format == KILN_Q4_1 ? get_f16(b + 2) : 0.0f;
            const unsigned char *q = b + (format == KILN_Q4_1 ? 4 : 2);
            const int offset = format == KILN_Q4_0 ? 8 : 0;
            for (int j = 0; j < KILN_QBLOCK / 2; j++) {
                const int lo = (q[j] & 0x0f) - offset, hi = (q[j] >> 4) - offset;
                out[j] = format == KILN_Q4_1 ? (float)lo * d + m : (float)lo * d;
                out[j + KILN_QBLOCK / 2] = format == KILN_Q4_1 ? (float)hi * d + m : (float)hi * d;
            }
        }
    }
    return KILN_OK;
}
