/* The implementations of cpu_quant_dot.h, per family of formats: what cpu_qdot_impls picks
 * from. Internal to cpu_quant_dot*.c. */
#ifndef KILN_CPU_QUANT_DOT_IMPL_H
#define KILN_CPU_QUANT_DOT_IMPL_H

#include <stdint.h>

#include "cpu/cpu_quant_dot.h"

/* The instruction sets this build has code for. */
#if defined(__x86_64__) && defined(__GNUC__)
#define CPU_QDOT_X86 1 /* AVX2 and AVX-512 VNNI, chosen at run time */
#endif
#if defined(__aarch64__) && defined(__ARM_NEON)
#define CPU_QDOT_NEON 1
#endif

/* One family's implementations by instruction set (NULL where this build has none). */
typedef struct cpu_qdot_family {
    cpu_qdot_fn *avx512, *avx2, *neon, *generic;
    cpu_qdot_n_fn *avx512_n, *avx2_n;
} cpu_qdot_family;
/* Those of `family` this CPU runs, best first, "generic" last, into out; returns how many (at
 * most CPU_QDOT_IMPLS). */
int cpu_qdot_pick(const cpu_qdot_family *family, cpu_qdot_impl *out);

/* The 32-value formats' (cpu_quant_dot.c) and the K formats' (cpu_quant_dot_k.c)
 * implementations, as cpu_qdot_pick gives them. */
int cpu_qdot_b32_impls(cpu_qdot_impl *out);
int cpu_qdot_k_impls(cpu_qdot_impl *out);

/* ---- the 32-value formats' blocks (kiln/quant.h) ---- */
/* The formats with a minimum (value = d * q + m): their integers are unsigned. */
static inline int cpu_b32_has_min(kiln_qformat format) { return format == KILN_Q4_1 || format == KILN_Q5_1; }
/* The byte offsets of a block's integers (after d, Q4_1's and Q5_1's m, and the Q5 formats'
 * 32 high bits) and of those high bits. */
static inline size_t cpu_b32_quants_offset(kiln_qformat format) {
    return format == KILN_Q5_1 ? 8 : format == KILN_Q5_0 ? 6 : format == KILN_Q4_1 ? 4 : 2;
}
static inline size_t cpu_b32_high_bits_offset(kiln_qformat format) { return format == KILN_Q5_1 ? 4 : 2; }
static inline int cpu_b32_is_q5(kiln_qformat format) { return format == KILN_Q5_0 || format == KILN_Q5_1; }

/* The 32-value formats' implementations for x86-64 (cpu_quant_dot_avx2.c, _avx512.c). */
#ifdef CPU_QDOT_X86
cpu_qdot_fn cpu_qdot_b32_avx2, cpu_qdot_b32_avx512;
cpu_qdot_n_fn cpu_qdot_n_b32_avx2, cpu_qdot_n_b32_avx512;
#endif

/* ---- the K formats' super-blocks of 256 values (ggml-common.h) ----
 *   Q4_K 144 bytes: d, dmin (f16), scales[12], qs[128]           value = d sc q - dmin m
 *   Q5_K 176 bytes: d, dmin, scales[12], qh[32], qs[128]         (q with a fifth bit)
 *   Q6_K 210 bytes: ql[128], qh[64], scales[16] (int8), d (f16)  value = d sc (q - 32)
 * Q4_K and Q5_K: 8 sub-blocks of 32 values, each with a 6-bit scale sc and minimum m packed
 * in scales[12]; byte l of qs[32 c .. 32 c + 31] holds value 64 c + l in its low nibble and
 * 64 c + 32 + l in its high one; bit 2 c (2 c + 1) of qh[l] is the fifth bit of value
 * 64 c + l (64 c + 32 + l). Q6_K: 16 sub-blocks of 16, each with an int8 scale; in half h
 * (values 128 h ..) byte l < 32 of ql[64 h ..] holds values l (low nibble) and 64 + l (high),
 * byte 32 + l values 32 + l and 96 + l, and qh[32 h + l] their two high bits, in that order
 * (bits 0-1: l, 2-3: 32 + l, 4-5: 64 + l, 6-7: 96 + l). */
enum {
    CPU_K4_SCALES = 4, CPU_K4_QS = 16,              /* Q4_K */
    CPU_K5_QH = 16, CPU_K5_QS = 48,                 /* Q5_K (scales as Q4_K) */
    CPU_K6_QH = 128, CPU_K6_SCALES = 192, CPU_K6_D = 208 /* Q6_K (ql at 0) */
};

/* Q4_K's and Q5_K's 8 scales and 8 minimums from their 12 packed bytes: sub-blocks 0-3 keep
 * theirs in the low 6 bits of bytes 0-3 (scales) and 4-7 (minimums); 4-7 keep their low 4
 * bits in the nibbles of bytes 8-11 and their high 2 bits in the top bits of bytes 0-3 and
 * 4-7. Four sub-blocks at a time in 32-bit words: out[0] = scales 0-3, out[1] scales 4-7,
 * out[2] minimums 0-3, out[3] minimums 4-7, one per byte. */
static inline void cpu_k4_scales(const unsigned char *packed, uint32_t out[4]) {
    uint32_t w[3];
    for (int i = 0; i < 3; i++)
        w[i] = (uint32_t)packed[4 * i] | (uint32_t)packed[4 * i + 1] << 8 | (uint32_t)packed[4 * i + 2] << 16 |
               (uint32_t)packed[4 * i + 3] << 24;
    out[0] = w[0] & 0x3f3f3f3fu;
    out[1] = (w[2] & 0x0f0f0f0fu) | ((w[0] >> 6) & 0x03030303u) << 4;
    out[2] = w[1] & 0x3f3f3f3fu;
    out[3] = ((w[2] >> 4) & 0x0f0f0f0fu) | ((w[1] >> 6) & 0x03030303u) << 4;
}

/* The K formats' implementations for x86-64 (cpu_quant_dot_k_avx2.c, _avx512.c) and AArch64
 * (cpu_quant_dot_k_neon.c). */
#ifdef CPU_QDOT_X86
cpu_qdot_fn cpu_qdot_k_avx2, cpu_qdot_k_avx512;
cpu_qdot_n_fn cpu_qdot_n_k_avx2, cpu_qdot_n_k_avx512;
#endif
#ifdef CPU_QDOT_NEON
cpu_qdot_fn cpu_qdot_k_neon;

#include <arm_neon.h>
/* acc + the products w[j] * x[j] of 16 int8 lanes, summed four by four into acc's lanes (|w|,
 * |x| <= 127: the widening path's 16-bit pair sums stay below 2^15). */
static inline int32x4_t cpu_dot16_neon(int32x4_t acc, int8x16_t w, int8x16_t x) {
#ifdef __ARM_FEATURE_DOTPROD
    return vdotq_s32(acc, w, x);
#else
    return vpadalq_s16(acc, vmlal_s8(vmull_s8(vget_low_s8(w), vget_low_s8(x)), vget_high_s8(w), vget_high_s8(x)));
#endif
}
#endif

#endif
