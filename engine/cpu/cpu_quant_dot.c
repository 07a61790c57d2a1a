/* Integer dot products of the 32-value formats' weight blocks (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1)
 * with int8 activation blocks, and the choice of implementation for every format
 * (cpu_quant_dot.h; the K formats' are in cpu_quant_dot_k*.c). */
#include "cpu/cpu_quant_dot.h"

#include <math.h>
#include <string.h>

#include "core/cpu_features.h"
#include "cpu/cpu_quant_dot_impl.h"
#include "kiln/tensor.h"

#ifdef CPU_QDOT_NEON
#include <arm_neon.h>
#endif

/* Q8_0-style rounding (with Q8_1's s) of `blocks` blocks of 32 values. */
static void qx_quantize(const float *x, int64_t blocks, cpu_qx *out) {
    for (int64_t b = 0; b < blocks; b++, x += KILN_QBLOCK) {
        float amax = 0.0f;
        for (int j = 0; j < KILN_QBLOCK; j++) amax = fmaxf(amax, fabsf(x[j]));
        const float d = amax / 127.0f, id = d > 0.0f ? 1.0f / d : 0.0f;
        int sum = 0;
        for (int j = 0; j < KILN_QBLOCK; j++) {
            int q = (int)lrintf(x[j] * id); /* |q| <= 127: never -128, which the AVX2 sign trick cannot negate */
            out[b].q[j] = (int8_t)q;
            sum += q;
        }
        out[b].d = d;
        out[b].s = d * (float)sum;
    }
}

/* ---- portable C ---- */

/* Block b's 32 integers as int8: Q4_0's less 8 and Q5_0's less 16; Q4_1's 0..15 and Q5_1's
 * 0..31 as they are. Byte j of the 4-bit part holds value j in its low nibble and value
 * j + 16 in its high one; bit j of the Q5 formats' 32-bit qh is value j's fifth bit. */
static void unpack_generic(kiln_qformat format, const unsigned char *b, int8_t *w) {
    const unsigned char *q = b + cpu_b32_quants_offset(format);
    if (format == KILN_Q8_0) {
        memcpy(w, q, KILN_QBLOCK);
        return;
    }
    const unsigned char *h = b + cpu_b32_high_bits_offset(format);
    const uint32_t qh = cpu_b32_is_q5(format) ? (uint32_t)h[0] | (uint32_t)h[1] << 8 | (uint32_t)h[2] << 16 | (uint32_t)h[3] << 24 : 0;
    const int offset = format == KILN_Q4_0 ? 8 : format == KILN_Q5_0 ? 16 : 0;
    for (int j = 0; j < KILN_QBLOCK / 2; j++) {
        w[j] = (int8_t)(((q[j] & 0x0f) | ((qh >> j) & 1) << 4) - offset);
        w[j + KILN_QBLOCK / 2] = (int8_t)(((q[j] >> 4) | ((qh >> (j + 16)) & 1) << 4) - offset);
    }
}

static float load_f16(const unsigned char *p) { return kiln_f16_to_f32((uint16_t)(p[0] | p[1] << 8)); }

static void qdot_generic(kiln_qformat format, const unsigned char *row, size_t block_bytes, int64_t blocks,
                         const void *xv, int rows, float *acc) {
    const cpu_qx *x = xv;
    for (int i = 0; i < rows; i++) acc[i] = 0.0f;
    for (int64_t b = 0; b < blocks; b++, row += block_bytes) {
        int8_t w[KILN_QBLOCK];
        unpack_generic(format, row, w);
        const float dw = load_f16(row), mw = cpu_b32_has_min(format) ? load_f16(row + 2) : 0.0f;
        for (int i = 0; i < rows; i++) {
            const cpu_qx *xb = x + i * blocks + b;
            int32_t s = 0;
            for (int j = 0; j < KILN_QBLOCK; j++) s += w[j] * xb->q[j];
            acc[i] += dw * xb->d * (float)s + mw * xb->s;
        }
    }
}

/* ---- AArch64: NEON ---- */
#ifdef CPU_QDOT_NEON

/* Lanes j of (lo, hi) = 0x10 where bit j (lo) or j + 16 (hi) of the Q5 formats' qh is set. */
static void fifth_bits_neon(const unsigned char *h, uint8x16_t *lo, uint8x16_t *hi) {
    static const uint8_t bits[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
    const uint8x16_t bit = vld1q_u8(bits), sixteen = vdupq_n_u8(0x10);
    const uint8x16_t b01 = vcombine_u8(vdup_n_u8(h[0]), vdup_n_u8(h[1]));
    const uint8x16_t b23 = vcombine_u8(vdup_n_u8(h[2]), vdup_n_u8(h[3]));
    *lo = vandq_u8(vtstq_u8(b01, bit), sixteen);
    *hi = vandq_u8(vtstq_u8(b23, bit), sixteen);
}

/* The block's integers as two vectors of 16 signed bytes (values 0..15 and 16..31). */
static void unpack_neon(kiln_qformat format, const unsigned char *b, int8x16_t *w0, int8x16_t *w1) {
    const unsigned char *q = b + cpu_b32_quants_offset(format);
    if (format == KILN_Q8_0) {
        *w0 = vld1q_s8((const int8_t *)q), *w1 = vld1q_s8((const int8_t *)q + 16);
        return;
    }
    const uint8x16_t packed = vld1q_u8(q);
    uint8x16_t lo = vandq_u8(packed, vdupq_n_u8(0x0f)), hi = vshrq_n_u8(packed, 4);
    if (cpu_b32_is_q5(format)) {
        uint8x16_t h0, h1;
        fifth_bits_neon(b + cpu_b32_high_bits_offset(format), &h0, &h1);
        lo = vorrq_u8(lo, h0), hi = vorrq_u8(hi, h1);
    }
    int8x16_t slo = vreinterpretq_s8_u8(lo), shi = vreinterpretq_s8_u8(hi);
    const int offset = format == KILN_Q4_0 ? 8 : format == KILN_Q5_0 ? 16 : 0;
    if (offset) slo = vsubq_s8(slo, vdupq_n_s8((int8_t)offset)), shi = vsubq_s8(shi, vdupq_n_s8((int8_t)offset));
    *w0 = slo, *w1 = shi;
}

static int32_t dot32_neon(int8x16_t w0, int8x16_t w1, const int8_t *x) {
    return vaddvq_s32(cpu_dot16_neon(cpu_dot16_neon(vdupq_n_s32(0), w0, vld1q_s8(x)), w1, vld1q_s8(x + 16)));
}

static float load_f16_neon(const unsigned char *p) {
    __fp16 h;
    memcpy(&h, p, 2);
    return (float)h;
}

static void qdot_neon(kiln_qformat format, const unsigned char *row, size_t block_bytes, int64_t blocks,
                      const void *xv, int rows, float *acc) {
    const cpu_qx *x = xv;
    for (int i = 0; i < rows; i++) acc[i] = 0.0f;
    for (int64_t b = 0; b < blocks; b++, row += block_bytes) {
        int8x16_t w0, w1;
        unpack_neon(format, row, &w0, &w1);
        const float dw = load_f16_neon(row), mw = cpu_b32_has_min(format) ? load_f16_neon(row + 2) : 0.0f;
        for (int i = 0; i < rows; i++) {
            const cpu_qx *xb = x + i * blocks + b;
            acc[i] += dw * xb->d * (float)dot32_neon(w0, w1, xb->q) + mw * xb->s;
        }
    }
}
#endif

int cpu_qdot_b32_impls(cpu_qdot_impl *out) {
    static const cpu_qdot_family b32 = {
#ifdef CPU_QDOT_X86
        .avx512 = cpu_qdot_b32_avx512, .avx512_n = cpu_qdot_n_b32_avx512, .avx2 = cpu_qdot_b32_avx2,
        .avx2_n = cpu_qdot_n_b32_avx2,
#endif
#ifdef CPU_QDOT_NEON
        .neon = qdot_neon,
#endif
        .generic = qdot_generic};
    return cpu_qdot_pick(&b32, out);
}

int cpu_qdot_pick(const cpu_qdot_family *family, cpu_qdot_impl *out) {
    int n = 0;
#ifdef CPU_QDOT_X86
    const kiln_cpu_features *cpu = kiln_cpu();
    const int avx2 = cpu->avx2 && cpu->fma && cpu->f16c;
    if (family->avx512 && avx2 && cpu->avx512vl && cpu->avx512bw && cpu->avx512vnni)
        out[n++] = (cpu_qdot_impl){"avx512", family->avx512, family->avx512_n};
    if (family->avx2 && avx2) out[n++] = (cpu_qdot_impl){"avx2", family->avx2, family->avx2_n};
#endif
#ifdef __ARM_FEATURE_DOTPROD
    if (family->neon) out[n++] = (cpu_qdot_impl){"neon-dotprod", family->neon, NULL};
#else
    if (family->neon) out[n++] = (cpu_qdot_impl){"neon", family->neon, NULL};
#endif
    out[n++] = (cpu_qdot_impl){"generic", family->generic, NULL};
    return n;
}

static int is_k(kiln_qformat format) { return kiln_qformat_block_values(format) == KILN_QK_K; }

size_t cpu_qact_bytes(kiln_qformat format) { return is_k(format) ? sizeof(cpu_q8k) : sizeof(cpu_qx); }

void cpu_qact_quantize(kiln_qformat format, const float *x, int64_t k, void *out) {
    _Static_assert(sizeof(cpu_q8k) == 292, "cpu_q8k is ggml's block_q8_K");
    if (is_k(format)) /* ggml's quantize_row_q8_K_ref, which its x86 CPU backend calls too */
        kiln_quantize_row(KILN_Q8_K, x, k, out);
    else
        qx_quantize(x, k / KILN_QBLOCK, out);
}

int cpu_qdot_impls(kiln_qformat format, cpu_qdot_impl *out) {
    return is_k(format) ? cpu_qdot_k_impls(out) : cpu_qdot_b32_impls(out);
}

cpu_qdot_impl cpu_qdot_select(kiln_qformat format) {
    cpu_qdot_impl impls[CPU_QDOT_IMPLS];
    cpu_qdot_impls(format, impls);
    return impls[0];
}
