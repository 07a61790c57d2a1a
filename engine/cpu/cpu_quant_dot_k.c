/* The K formats' (Q4_K, Q5_K, Q6_K) integer dot products with Q8_K activations
 * (cpu_quant_dot.h), in portable C, and the choice among their implementations. The layouts
 * are described in cpu_quant_dot_impl.h. Each super-block contributes
 *
 *   d_x (d sum_g sc_g sum_{i in g} q_i x_i  -  dmin sum_g m_g bsums_g)
 *
 * over its groups g (16 values; Q4_K's and Q5_K's sub-blocks of 32 are two groups with the
 * same scale), with the integer sums exact, as ggml's. */
#include <string.h>

#include "cpu/cpu_quant_dot_impl.h"
#include "kiln/tensor.h"

/* A super-block unpacked: value i = d * sc[i / 16] * q[i] - dmin * mn[i / 16]. */
typedef struct k_block {
    float d, dmin;
    int8_t q[KILN_QK_K];
    int16_t sc[KILN_QK_K / 16], mn[KILN_QK_K / 16];
} k_block;

static float load_f16(const unsigned char *p) { return kiln_f16_to_f32((uint16_t)(p[0] | p[1] << 8)); }

/* Q4_K and Q5_K (qh NULL for Q4_K). */
static void unpack_k45(const unsigned char *b, const unsigned char *qs, const unsigned char *qh, k_block *out) {
    uint32_t packed[4];
    cpu_k4_scales(b + CPU_K4_SCALES, packed);
    out->d = load_f16(b), out->dmin = load_f16(b + 2);
    for (int s = 0; s < 8; s++) { /* sub-block s: byte s % 4 of packed[s / 4] (scales), packed[2 + s / 4] */
        const int shift = 8 * (s % 4);
        out->sc[2 * s] = out->sc[2 * s + 1] = (int16_t)((packed[s / 4] >> shift) & 0xff);
        out->mn[2 * s] = out->mn[2 * s + 1] = (int16_t)((packed[2 + s / 4] >> shift) & 0xff);
    }
    for (int c = 0; c < 4; c++)
        for (int l = 0; l < 32; l++) {
            const int lo = qs[32 * c + l] & 0x0f, hi = qs[32 * c + l] >> 4;
            const int h0 = qh ? (qh[l] >> (2 * c)) & 1 : 0, h1 = qh ? (qh[l] >> (2 * c + 1)) & 1 : 0;
            out->q[64 * c + l] = (int8_t)(lo | h0 << 4);
            out->q[64 * c + 32 + l] = (int8_t)(hi | h1 << 4);
        }
}

static void unpack_q6k(const unsigned char *b, k_block *out) {
    out->d = load_f16(b + CPU_K6_D), out->dmin = 0.0f;
    for (int g = 0; g < 16; g++) {
        out->sc[g] = (int8_t)b[CPU_K6_SCALES + g];
        out->mn[g] = 0;
    }
    for (int h = 0; h < 2; h++) {
        const unsigned char *ql = b + 64 * h, *qh = b + CPU_K6_QH + 32 * h;
        int8_t *q = out->q + 128 * h;
        for (int l = 0; l < 32; l++) {
            q[l] = (int8_t)(((ql[l] & 0x0f) | (qh[l] & 3) << 4) - 32);
            q[32 + l] = (int8_t)(((ql[32 + l] & 0x0f) | ((qh[l] >> 2) & 3) << 4) - 32);
            q[64 + l] = (int8_t)(((ql[l] >> 4) | ((qh[l] >> 4) & 3) << 4) - 32);
            q[96 + l] = (int8_t)(((ql[32 + l] >> 4) | ((qh[l] >> 6) & 3) << 4) - 32);
        }
    }
}

static void unpack_k(kiln_qformat format, const unsigned char *b, k_block *out) {
    if (format == KILN_Q6_K) unpack_q6k(b, out);
    else if (format == KILN_Q5_K) unpack_k45(b, b + CPU_K5_QS, b + CPU_K5_QH, out);
    else unpack_k45(b, b + CPU_K4_QS, NULL, out);
}

static void qdot_k_generic(kiln_qformat format, const unsigned char *row, size_t block_bytes, int64_t blocks,
                           const void *xv, int rows, float *acc) {
    const cpu_q8k *x = xv;
    for (int i = 0; i < rows; i++) acc[i] = 0.0f;
    for (int64_t b = 0; b < blocks; b++, row += block_bytes) {
        k_block w;
        unpack_k(format, row, &w);
        for (int i = 0; i < rows; i++) {
            const cpu_q8k *xb = x + i * blocks + b;
            int32_t sum = 0, mins = 0;
            for (int g = 0; g < KILN_QK_K / 16; g++) {
                int32_t s = 0;
                for (int j = 16 * g; j < 16 * g + 16; j++) s += w.q[j] * xb->q[j];
                sum += w.sc[g] * s, mins += w.mn[g] * xb->bsums[g];
            }
            acc[i] += xb->d * (w.d * (float)sum - w.dmin * (float)mins);
        }
    }
}

int cpu_qdot_k_impls(cpu_qdot_impl *out) {
    static const cpu_qdot_family k = {
#ifdef CPU_QDOT_X86
        .avx512 = cpu_qdot_k_avx512, .avx512_n = cpu_qdot_n_k_avx512, .avx2 = cpu_qdot_k_avx2, .avx2_n = cpu_qdot_n_k_avx2,
#endif
#ifdef CPU_QDOT_NEON
        .neon = cpu_qdot_k_neon,
#endif
        .generic = qdot_k_generic};
    return cpu_qdot_pick(&k, out);
}
