/* The K formats' dot products with Q8_K activations on AArch64 with NEON (cpu_quant_dot.h;
 * layouts in cpu_quant_dot_impl.h): the weights' integers unpacked to signed bytes 16 at a
 * time, multiplied with the activations' by SDOT where the compiler targets it, else by
 * widening multiplies (cpu_dot16_neon), and summed per group in 32-bit integers with the
 * group's scale, one conversion to f32 per super-block. */
#include "cpu/cpu_quant_dot_impl.h"

#ifdef CPU_QDOT_NEON
#include <string.h>

static float half(const unsigned char *p) {
    __fp16 h;
    memcpy(&h, p, 2);
    return (float)h;
}

/* The sum of the 16 products of w with x, as one integer. */
static int32_t dot16(uint8x16_t w, const int8_t *x) {
    return vaddvq_s32(cpu_dot16_neon(vdupq_n_s32(0), vreinterpretq_s8_u8(w), vld1q_s8(x)));
}

/* Q4_K and Q5_K: super-block b against xb. */
static float k45_block(int q5, const unsigned char *b, const cpu_q8k *xb) {
    uint32_t packed[4];
    cpu_k4_scales(b + CPU_K4_SCALES, packed);
    int32_t sum = 0, mins = 0;
    for (int s = 0; s < 8; s++)
        mins += (int32_t)((packed[2 + s / 4] >> 8 * (s % 4)) & 0xff) * (xb->bsums[2 * s] + xb->bsums[2 * s + 1]);
    const unsigned char *qs = b + (q5 ? CPU_K5_QS : CPU_K4_QS);
    const uint8x16_t low4 = vdupq_n_u8(0x0f), one = vdupq_n_u8(1), two = vdupq_n_u8(2);
    uint8x16_t h0 = q5 ? vld1q_u8(b + CPU_K5_QH) : vdupq_n_u8(0), h1 = q5 ? vld1q_u8(b + CPU_K5_QH + 16) : h0;
    for (int c = 0; c < 4; c++) { /* sub-blocks 2c (low nibbles) and 2c + 1 (high nibbles) */
        const uint8x16_t b0 = vld1q_u8(qs + 32 * c), b1 = vld1q_u8(qs + 32 * c + 16);
        uint8x16_t lo0 = vandq_u8(b0, low4), lo1 = vandq_u8(b1, low4), hi0 = vshrq_n_u8(b0, 4), hi1 = vshrq_n_u8(b1, 4);
        if (q5) { /* bits 2c and 2c + 1 of qh, moved down 2 per c */
            lo0 = vorrq_u8(lo0, vshlq_n_u8(vandq_u8(h0, one), 4)), lo1 = vorrq_u8(lo1, vshlq_n_u8(vandq_u8(h1, one), 4));
            hi0 = vorrq_u8(hi0, vshlq_n_u8(vandq_u8(h0, two), 3)), hi1 = vorrq_u8(hi1, vshlq_n_u8(vandq_u8(h1, two), 3));
            h0 = vshrq_n_u8(h0, 2), h1 = vshrq_n_u8(h1, 2);
        }
        const int8_t *x = xb->q + 64 * c;
        const int32_t sc_lo = (int32_t)((packed[c / 2] >> 8 * (2 * c % 4)) & 0xff);
        const int32_t sc_hi = (int32_t)((packed[c / 2] >> 8 * ((2 * c + 1) % 4)) & 0xff);
        sum += sc_lo * (dot16(lo0, x) + dot16(lo1, x + 16)) + sc_hi * (dot16(hi0, x + 32) + dot16(hi1, x + 48));
    }
    return xb->d * (half(b) * (float)sum - half(b + 2) * (float)mins);
}

/* Q6_K: super-block b against xb. */
static float q6k_block(const unsigned char *b, const cpu_q8k *xb) {
    const int8_t *sc = (const int8_t *)(b + CPU_K6_SCALES);
    const uint8x16_t low4 = vdupq_n_u8(0x0f), low2 = vdupq_n_u8(3);
    const int8x16_t offset = vdupq_n_s8(32);
    int32_t sum = 0;
    for (int h = 0; h < 2; h++)
        for (int l = 0; l < 32; l += 16) { /* values 128 h + l + 32 i, group 8 h + l / 16 + 2 i */
            const unsigned char *ql = b + 64 * h + l;
            const uint8x16_t a = vld1q_u8(ql), c = vld1q_u8(ql + 32), qh = vld1q_u8(b + CPU_K6_QH + 32 * h + l);
            uint8x16_t u[4];
            u[0] = vorrq_u8(vandq_u8(a, low4), vshlq_n_u8(vandq_u8(qh, low2), 4));
            u[1] = vorrq_u8(vandq_u8(c, low4), vshlq_n_u8(vandq_u8(vshrq_n_u8(qh, 2), low2), 4));
            u[2] = vorrq_u8(vshrq_n_u8(a, 4), vshlq_n_u8(vandq_u8(vshrq_n_u8(qh, 4), low2), 4));
            u[3] = vorrq_u8(vshrq_n_u8(c, 4), vshlq_n_u8(vshrq_n_u8(qh, 6), 4));
            for (int i = 0; i < 4; i++) {
                const int8x16_t q = vsubq_s8(vreinterpretq_s8_u8(u[i]), offset);
                const int32_t dot = vaddvq_s32(cpu_dot16_neon(vdupq_n_s32(0), q, vld1q_s8(xb->q + 128 * h + l + 32 * i)));
                sum += sc[8 * h + l / 16 + 2 * i] * dot;
            }
        }
    return xb->d * half(b + CPU_K6_D) * (float)sum;
}

void cpu_qdot_k_neon(kiln_qformat format, const unsigned char *row, size_t block_bytes, int64_t blocks,
                     const void *xv, int rows, float *acc) {
    const cpu_q8k *x = xv;
    for (int i = 0; i < rows; i++) acc[i] = 0.0f;
    for (int64_t b = 0; b < blocks; b++, row += block_bytes)
        for (int i = 0; i < rows; i++) {
            const cpu_q8k *xb = x + i * blocks + b;
            acc[i] += format == KILN_Q6_K ? q6k_block(row, xb) : k45_block(format == KILN_Q5_K, row, xb);
        }
}
#endif
