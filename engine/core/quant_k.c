/* The K formats' super-blocks of KILN_QK_K values (kiln/quant.h): Q4_K, Q5_K, Q6_K and the
 * activation format Q8_K. The quantizers are ggml's reference ones without an importance
 * matrix (ggml-quants.c: quantize_row_q4_K_ref, q5_K_ref, q6_K_ref, q8_K_ref and their
 * helpers make_qkx2_quants, make_qx_quants and nearest_int), transcribed operation for
 * operation: the same float expressions in the same order, the same ties, the same integer
 * narrowing, so that they write the same bytes. The dequantizers are ggml's to_float. */
#include <math.h>

#include "core/quant_blocks.h"
#include "kiln/quant.h"

#define SUB 32 /* Q4_K / Q5_K sub-block */
#define N_SUB (KILN_QK_K / SUB)
#define SUB6 16 /* Q6_K sub-block */
#define N_SUB6 (KILN_QK_K / SUB6)
#define GROUP_MAX_EPS 1e-15f

static int min_i(int a, int b) { return a < b ? a : b; }
static int max_i(int a, int b) { return a > b ? a : b; }

/* ggml's nearest_int: round to nearest, ties to even, through the float sum with 1.5 * 2^23
 * (valid for |v| <= 4194303, as ggml asserts); the bits of that sum, not a library call, so
 * that the result is ggml's whatever the rounding functions do. */
static int nearest_int(float v) {
    float sum = v + 12582912.f;
    int32_t i;
    memcpy(&i, &sum, sizeof i);
    return (i & 0x007fffff) - 0x00400000;
}

/* make_qkx2_quants with its nstep >= 1 path (the only one the K quantizers take): the scale
 * and minimum of n values on levels 0..nmax, trying nstep + 1 grids around max - min and
 * keeping the one of least weighted squared error. L gets the levels; *the_min is -min. */
static float make_qkx2_quants(int n, int nmax, const float *x, const float *weights, uint8_t *L, float *the_min,
                              uint8_t *Laux, float rmin, float rdelta, int nstep) {
    float min = x[0], max = x[0];
    float sum_w = weights[0];
    float sum_x = sum_w * x[0];
    for (int i = 1; i < n; ++i) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        float w = weights[i];
        sum_w += w;
        sum_x += w * x[i];
    }
    if (min > 0) min = 0;
    if (max == min) {
        for (int i = 0; i < n; ++i) L[i] = 0;
        *the_min = -min;
        return 0.f;
    }
    float iscale = nmax / (max - min);
    float scale = 1 / iscale;
    float best_error = 0;
    for (int i = 0; i < n; ++i) {
        int l = nearest_int(iscale * (x[i] - min));
        L[i] = (uint8_t)max_i(0, min_i(nmax, l));
        float diff = scale * L[i] + min - x[i];
        diff = diff * diff;
        float w = weights[i];
        best_error += w * diff;
    }
    for (int is = 0; is <= nstep; ++is) {
        iscale = (rmin + rdelta * is + nmax) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; ++i) {
            int l = nearest_int(iscale * (x[i] - min));
            l = max_i(0, min_i(nmax, l));
            Laux[i] = (uint8_t)l;
            float w = weights[i];
            sum_l += w * l;
            sum_l2 += w * l * l;
            sum_xl += w * l * x[i];
        }
        float D = sum_w * sum_l2 - sum_l * sum_l;
        if (D > 0) {
            float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
            float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
            if (this_min > 0) {
                this_min = 0;
                this_scale = sum_xl / sum_l2;
            }
            float cur_error = 0;
            for (int i = 0; i < n; ++i) {
                float diff = this_scale * Laux[i] + this_min - x[i];
                diff = diff * diff;
                float w = weights[i];
                cur_error += w * diff;
            }
            if (cur_error < best_error) {
                for (int i = 0; i < n; ++i) L[i] = Laux[i];
                best_error = cur_error;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    *the_min = -min;
    return scale;
}

/* make_qx_quants with rmse_type 1 and no weights (Q6_K's use): the signed scale of n values
 * on levels -nmax..nmax-1, from 19 grids around the extreme value, least x^2-weighted error.
 * L gets the levels plus nmax. */
static float make_qx_quants(int n, int nmax, const float *x, int8_t *L) {
    float max = 0, amax = 0;
    for (int i = 0; i < n; ++i) {
        float ax = fabsf(x[i]);
        if (ax > amax) amax = ax, max = x[i];
    }
    if (amax < GROUP_MAX_EPS) { /* all zero */
        for (int i = 0; i < n; ++i) L[i] = 0;
        return 0.f;
    }
    float iscale = -nmax / max;
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; ++i) {
        int l = nearest_int(iscale * x[i]);
        l = max_i(-nmax, min_i(nmax - 1, l));
        L[i] = (int8_t)(l + nmax);
        float w = x[i] * x[i];
        sumlx += w * x[i] * l;
        suml2 += w * l * l;
    }
    float scale = suml2 ? sumlx / suml2 : 0.0f;
    float best = scale * sumlx;
    for (int is = -9; is <= 9; ++is) {
        if (is == 0) continue;
        iscale = -(nmax + 0.1f * is) / max;
        sumlx = suml2 = 0;
        for (int i = 0; i < n; ++i) {
            int l = nearest_int(iscale * x[i]);
            l = max_i(-nmax, min_i(nmax - 1, l));
            float w = x[i] * x[i];
            sumlx += w * x[i] * l;
            suml2 += w * l * l;
        }
        if (suml2 > 0 && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; ++i) {
                int l = nearest_int(iscale * x[i]);
                L[i] = (int8_t)(nmax + max_i(-nmax, min_i(nmax - 1, l)));
            }
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

/* Sub-block j's 6-bit scale and min in Q4_K's and Q5_K's 12 bytes (get_scale_min_k4). */
static void scale_min(int j, const unsigned char *q, int *sc, int *m) {
    if (j < 4) {
        *sc = q[j] & 63, *m = q[j + 4] & 63;
    } else {
        *sc = (q[j + 4] & 0xF) | (q[j - 4] >> 6) << 4;
        *m = (q[j + 4] >> 4) | (q[j] >> 6) << 4;
    }
}

/* Q4_K (nmax 15) and Q5_K (nmax 31): the levels L of the super-block, with d, dmin and the
 * packed scales written at b (b + 4: the scales). The steps of quantize_row_q4_K_ref and
 * quantize_row_q5_K_ref before they pack L, which is all that differs between them. */
static void quantize_k_levels(const float *x, int nmax, float rmin, int nstep, unsigned char *b, uint8_t *L) {
    uint8_t Laux[SUB];
    float weights[SUB], mins[N_SUB], scales[N_SUB];
    float max_scale = 0, max_min = 0; /* as the min is deducted, scales are always positive */
    for (int j = 0; j < N_SUB; ++j) {
        float sum_x2 = 0;
        for (int l = 0; l < SUB; ++l) sum_x2 += x[SUB * j + l] * x[SUB * j + l];
        float av_x = sqrtf(sum_x2 / 32);
        for (int l = 0; l < SUB; ++l) weights[l] = av_x + fabsf(x[SUB * j + l]);
        scales[j] = make_qkx2_quants(SUB, nmax, x + SUB * j, weights, L + SUB * j, &mins[j], Laux, rmin, 0.1f, nstep);
        if (scales[j] > max_scale) max_scale = scales[j];
        if (mins[j] > max_min) max_min = mins[j];
    }
    unsigned char *packed = b + 4;
    memset(packed, 0, 12);
    float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
    float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
    for (int j = 0; j < N_SUB; ++j) {
        uint8_t ls = (uint8_t)nearest_int(inv_scale * scales[j]);
        uint8_t lm = (uint8_t)nearest_int(inv_min * mins[j]);
        ls = ls < 63 ? ls : 63;
        lm = lm < 63 ? lm : 63;
        if (j < 4) {
            packed[j] = ls;
            packed[j + 4] = lm;
        } else {
            packed[j + 4] = (unsigned char)((ls & 0xF) | (lm & 0xF) << 4);
            packed[j - 4] |= (unsigned char)((ls >> 4) << 6);
            packed[j] |= (unsigned char)((lm >> 4) << 6);
        }
    }
    kiln_put_f16(b, max_scale / 63.f);
    kiln_put_f16(b + 2, max_min / 63.f);
    for (int j = 0; j < N_SUB; ++j) {
        int sc, m;
        scale_min(j, packed, &sc, &m);
        const float d = kiln_get_f16(b) * sc;
        if (!d) continue;
        const float dm = kiln_get_f16(b + 2) * m;
        for (int ii = 0; ii < SUB; ++ii) {
            int l = nearest_int((x[SUB * j + ii] + dm) / d);
            L[SUB * j + ii] = (uint8_t)max_i(0, min_i(nmax, l));
        }
    }
}

void kiln_quantize_q4_k(const float *x, unsigned char *b) {
    uint8_t L[KILN_QK_K];
    quantize_k_levels(x, 15, -1.f, 20, b, L);
    unsigned char *q = b + 16;
    for (int j = 0; j < KILN_QK_K; j += 64, q += 32)
        for (int l = 0; l < 32; ++l) q[l] = (unsigned char)(L[j + l] | L[j + l + 32] << 4);
}

void kiln_quantize_q5_k(const float *x, unsigned char *b) {
    uint8_t L[KILN_QK_K];
    quantize_k_levels(x, 31, -0.5f, 15, b, L);
    unsigned char *qh = b + 16, *ql = b + 48;
    memset(qh, 0, KILN_QK_K / 8);
    uint8_t m1 = 1, m2 = 2;
    for (int n = 0; n < KILN_QK_K; n += 64, ql += 32, m1 = (uint8_t)(m1 << 2), m2 = (uint8_t)(m2 << 2)) {
        for (int j = 0; j < 32; ++j) {
            int l1 = L[n + j], l2 = L[n + j + 32];
            if (l1 > 15) l1 -= 16, qh[j] |= m1;
            if (l2 > 15) l2 -= 16, qh[j] |= m2;
            ql[j] = (unsigned char)(l1 | l2 << 4);
        }
    }
}

/* Q6_K: ql at b, qh at b + 128, scales at b + 192, d at b + 208. */
void kiln_quantize_q6_k(const float *x, unsigned char *b) {
    int8_t L[KILN_QK_K];
    float scales[N_SUB6];
    float max_scale = 0, max_abs_scale = 0;
    for (int ib = 0; ib < N_SUB6; ++ib) {
        const float scale = make_qx_quants(SUB6, 32, x + SUB6 * ib, L + SUB6 * ib);
        scales[ib] = scale;
        const float abs_scale = fabsf(scale);
        if (abs_scale > max_abs_scale) max_abs_scale = abs_scale, max_scale = scale;
    }
    memset(b, 0, 210);
    if (max_abs_scale < GROUP_MAX_EPS) return; /* all zero, d = 0 */
    int8_t *sc = (int8_t *)(b + 192);
    float iscale = -128.f / max_scale;
    kiln_put_f16(b + 208, 1 / iscale);
    for (int ib = 0; ib < N_SUB6; ++ib) sc[ib] = (int8_t)min_i(127, nearest_int(iscale * scales[ib]));
    for (int j = 0; j < N_SUB6; ++j) {
        float d = kiln_get_f16(b + 208) * sc[j];
        if (!d) continue;
        for (int ii = 0; ii < SUB6; ++ii) {
            int l = nearest_int(x[SUB6 * j + ii] / d);
            L[SUB6 * j + ii] = (int8_t)(max_i(-32, min_i(31, l)) + 32);
        }
    }
    unsigned char *ql = b, *qh = b + 128;
    for (int j = 0; j < KILN_QK_K; j += 128, ql += 64, qh += 32) {
        for (int l = 0; l < 32; ++l) {
            const int q1 = L[j + l] & 0xF, q2 = L[j + l + 32] & 0xF, q3 = L[j + l + 64] & 0xF, q4 = L[j + l + 96] & 0xF;
            ql[l] = (unsigned char)(q1 | q3 << 4);
            ql[l + 32] = (unsigned char)(q2 | q4 << 4);
            qh[l] = (unsigned char)((L[j + l] >> 4) | (L[j + l + 32] >> 4) << 2 | (L[j + l + 64] >> 4) << 4 |
                                    (L[j + l + 96] >> 4) << 6);
        }
    }
}

/* Q8_K: d (f32) at b, qs at b + 4, bsums (int16) at b + 260. An all-zero block writes d = 0
 * and zeros throughout (ggml leaves its bsums as they were). */
void kiln_quantize_q8_k(const float *x, unsigned char *b) {
    float max = 0, amax = 0;
    for (int j = 0; j < KILN_QK_K; ++j) {
        float ax = fabsf(x[j]);
        if (ax > amax) amax = ax, max = x[j];
    }
    memset(b, 0, 292);
    if (!amax) return;
    const float iscale = -127.f / max;
    int8_t *qs = (int8_t *)(b + 4);
    for (int j = 0; j < KILN_QK_K; ++j) qs[j] = (int8_t)min_i(127, nearest_int(iscale * x[j]));
    for (int j = 0; j < KILN_QK_K / 16; ++j) {
        int sum = 0;
        for (int ii = 0; ii < 16; ++ii) sum += qs[j * 16 + ii];
        const uint16_t bsum = (uint16_t)sum; /* int16, little-endian */
        b[260 + 2 * j] = (unsigned char)(bsum & 0xff), b[261 + 2 * j] = (unsigned char)(bsum >> 8);
    }
    const float d = 1 / iscale;
    uint32_t bits;
    memcpy(&bits, &d, sizeof bits);
    kiln_put_u32(b, bits);
}

/* Q4_K (bits 4, qh NULL) and Q5_K (bits 5): value = d * sc * q - dmin * m per sub-block. */
static void dequantize_k(const unsigned char *b, const unsigned char *qh, const unsigned char *qs, float *y) {
    const float d = kiln_get_f16(b), min = kiln_get_f16(b + 2);
    int is = 0, sc, m;
    unsigned u1 = 1, u2 = 2;
    for (int j = 0; j < KILN_QK_K; j += 64, qs += 32, is += 2, u1 <<= 2, u2 <<= 2) {
        scale_min(is, b + 4, &sc, &m);
        const float d1 = d * sc, m1 = min * m;
        scale_min(is + 1, b + 4, &sc, &m);
        const float d2 = d * sc, m2 = min * m;
        for (int l = 0; l < 32; ++l) *y++ = d1 * ((qs[l] & 0xF) + (qh && qh[l] & u1 ? 16 : 0)) - m1;
        for (int l = 0; l < 32; ++l) *y++ = d2 * ((qs[l] >> 4) + (qh && qh[l] & u2 ? 16 : 0)) - m2;
    }
}

void kiln_dequantize_q4_k(const unsigned char *b, float *y) { dequantize_k(b, NULL, b + 16, y); }
void kiln_dequantize_q5_k(const unsigned char *b, float *y) { dequantize_k(b, b + 16, b + 48, y); }

void kiln_dequantize_q6_k(const unsigned char *b, float *y) {
    const float d = kiln_get_f16(b + 208);
    const unsigned char *ql = b, *qh = b + 128;
    const int8_t *sc = (const int8_t *)(b + 192);
    for (int n = 0; n < KILN_QK_K; n += 128, y += 128, ql += 64, qh += 32, sc += 8) {
        for (int l = 0; l < 32; ++l) {
            int is = l / 16;
            const int q1 = (int8_t)((ql[l] & 0xF) | ((qh[l] >> 0) & 3) << 4) - 32;
            const int q2 = (int8_t)((ql[l + 32] & 0xF) | ((qh[l] >> 2) & 3) << 4) - 32;
            const int q3 = (int8_t)((ql[l] >> 4) | ((qh[l] >> 4) & 3) << 4) - 32;
            const int q4 = (int8_t)((ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4) - 32;
            y[l] = d * sc[is] * q1;
            y[l + 32] = d * sc[is + 2] * q2;
            y[l + 64] = d * sc[is + 4] * q3;
            y[l + 96] = d * sc[is + 6] * q4;
        }
    }
}

void kiln_dequantize_q8_k(const unsigned char *b, float *y) {
    uint32_t bits = kiln_get_u32(b);
    float d;
    memcpy(&d, &bits, sizeof d);
    const int8_t *qs = (const int8_t *)(b + 4);
    for (int j = 0; j < KILN_QK_K; ++j) y[j] = d * qs[j];
}
