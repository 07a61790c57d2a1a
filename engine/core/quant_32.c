/* The 32-value block formats (kiln/quant.h): Q8_0, Q4_0, Q4_1, Q5_0 and Q5_1. Each quantizer
 * repeats ggml's reference (ggml-quants.c, quantize_row_*_ref) operation for operation: the
 * scale from the block's extreme value, its reciprocal (a multiply, not a divide, per value),
 * and ggml's rounding of each kind (roundf for Q8_0, +8.5 or +16.5 and truncation for Q4_0
 * and Q5_0, +0.5 and truncation for Q4_1 and Q5_1). The dequantizers are ggml's
 * dequantize_row_* (its to_float), product then sum, each rounded. */
#include <math.h>

#include "core/quant_blocks.h"
#include "kiln/quant.h"

#define HALF (KILN_QBLOCK / 2)

void kiln_quantize_q8_0(const float *x, unsigned char *b) {
    float amax = 0.0f;
    for (int j = 0; j < KILN_QBLOCK; j++) amax = fmaxf(amax, fabsf(x[j]));
    const float d = amax / ((1 << 7) - 1);
    const float id = d ? 1.0f / d : 0.0f;
    kiln_put_f16(b, d);
    for (int j = 0; j < KILN_QBLOCK; j++) {
        const float x0 = x[j] * id;
        b[2 + j] = (unsigned char)(int8_t)roundf(x0);
    }
}

/* The value of largest magnitude, with its sign (the first of equal magnitudes). */
static float signed_max(const float *x) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < KILN_QBLOCK; j++)
        if (amax < fabsf(x[j])) amax = fabsf(x[j]), max = x[j];
    return max;
}

/* Q4_0 (bits 4, qh NULL) and Q5_0 (bits 5): d = max / -2^(bits-1), q = min(2^bits - 1,
 * trunc(x / d + 2^(bits-1) + 0.5)); Q5_0's fifth bits gathered in qh. */
static void quantize_symmetric(const float *x, int bits, unsigned char *d_at, unsigned char *qh, unsigned char *qs) {
    const int top = (1 << bits) - 1;
    const float offset = bits == 4 ? 8.5f : 16.5f;
    const float d = signed_max(x) / (bits == 4 ? -8 : -16);
    const float id = d ? 1.0f / d : 0.0f;
    kiln_put_f16(d_at, d);
    uint32_t high = 0;
    for (int j = 0; j < HALF; j++) {
        const float x0 = x[j] * id;
        const float x1 = x[HALF + j] * id;
        const int t0 = (int8_t)(x0 + offset), t1 = (int8_t)(x1 + offset);
        const int q0 = t0 < top ? t0 : top, q1 = t1 < top ? t1 : top;
        qs[j] = (unsigned char)((q0 & 0x0f) | (q1 & 0x0f) << 4);
        high |= (uint32_t)((q0 & 0x10) >> 4) << j | (uint32_t)((q1 & 0x10) >> 4) << (j + HALF);
    }
    if (qh) kiln_put_u32(qh, high);
}

/* Q4_1 (bits 4) and Q5_1 (bits 5): d = (max - min) / (2^bits - 1), m = min,
 * q = trunc((x - min) / d + 0.5). */
static void quantize_affine(const float *x, int bits, unsigned char *dm_at, unsigned char *qh, unsigned char *qs) {
    float min = x[0], max = x[0];
    for (int j = 1; j < KILN_QBLOCK; j++) min = x[j] < min ? x[j] : min, max = x[j] > max ? x[j] : max;
    const float d = (max - min) / ((1 << bits) - 1);
    const float id = d ? 1.0f / d : 0.0f;
    kiln_put_f16(dm_at, d);
    kiln_put_f16(dm_at + 2, min);
    uint32_t high = 0;
    for (int j = 0; j < HALF; j++) {
        const float x0 = (x[j] - min) * id;
        const float x1 = (x[HALF + j] - min) * id;
        int q0, q1;
        if (bits == 4) { /* ggml: MIN(15, (int8_t)(x + 0.5f)) */
            const int t0 = (int8_t)(x0 + 0.5f), t1 = (int8_t)(x1 + 0.5f);
            q0 = t0 < 15 ? t0 : 15, q1 = t1 < 15 ? t1 : 15;
        } else { /* ggml: (uint8_t)(x + 0.5f), no clamp */
            q0 = (uint8_t)(x0 + 0.5f), q1 = (uint8_t)(x1 + 0.5f);
        }
        qs[j] = (unsigned char)((q0 & 0x0f) | (q1 & 0x0f) << 4);
        high |= (uint32_t)((q0 & 0x10) >> 4) << j | (uint32_t)((q1 & 0x10) >> 4) << (j + HALF);
    }
    if (qh) kiln_put_u32(qh, high);
}

void kiln_quantize_q4_0(const float *x, unsigned char *b) { quantize_symmetric(x, 4, b, NULL, b + 2); }
void kiln_quantize_q5_0(const float *x, unsigned char *b) { quantize_symmetric(x, 5, b, b + 2, b + 6); }
void kiln_quantize_q4_1(const float *x, unsigned char *b) { quantize_affine(x, 4, b, NULL, b + 4); }
void kiln_quantize_q5_1(const float *x, unsigned char *b) { quantize_affine(x, 5, b, b + 4, b + 8); }

void kiln_dequantize_q8_0(const unsigned char *b, float *y) {
    const float d = kiln_get_f16(b);
    for (int j = 0; j < KILN_QBLOCK; j++) y[j] = d * (float)(int8_t)b[2 + j];
}

/* The nibble formats: q (with its fifth bit from qh, when there is one) times d, less offset
 * steps (8 or 16) or plus m (has_min). */
static void dequantize_nibbles(const unsigned char *b, int has_min, const unsigned char *qh, const unsigned char *qs,
                               int offset, float *y) {
    const float d = kiln_get_f16(b);
    const float m = has_min ? kiln_get_f16(b + 2) : 0.0f;
    const uint32_t high = qh ? kiln_get_u32(qh) : 0;
    for (int j = 0; j < HALF; j++) {
        const int h0 = (int)((high >> j) << 4 & 0x10), h1 = (int)((high >> (j + 12)) & 0x10);
        const int lo = ((qs[j] & 0x0f) | h0) - offset, hi = ((qs[j] >> 4) | h1) - offset;
        if (has_min) {
            y[j] = (float)lo * d + m;
            y[j + HALF] = (float)hi * d + m;
        } else {
            y[j] = (float)lo * d;
            y[j + HALF] = (float)hi * d;
        }
    }
}

void kiln_dequantize_q4_0(const unsigned char *b, float *y) { dequantize_nibbles(b, 0, NULL, b + 2, 8, y); }
void kiln_dequantize_q4_1(const unsigned char *b, float *y) { dequantize_nibbles(b, 1, NULL, b + 4, 0, y); }
void kiln_dequantize_q5_0(const unsigned char *b, float *y) { dequantize_nibbles(b, 0, b + 2, b + 6, 16, y); }
void kiln_dequantize_q5_1(const unsigned char *b, float *y) { dequantize_nibbles(b, 1, b + 4, b + 8, 0, y); }
