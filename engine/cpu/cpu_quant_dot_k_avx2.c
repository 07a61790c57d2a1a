/* The K formats' dot products with Q8_K activations on x86-64 with AVX2 (cpu_quant_dot.h;
 * layouts in cpu_quant_dot_impl.h). Per super-block, as ggml's CPU backend: the weights'
 * integers are unpacked to unsigned bytes (Q6_K's with its offset of 32 kept, taken off at
 * the end through the activations' group sums), multiplied with the activations' signed
 * bytes by maddubs into 16-bit pair sums (at most 2 * 63 * 127: no saturation), which a
 * second multiply-add (madd) scales by the group's scale into 32-bit sums; one conversion to
 * f32 per super-block. Q4_K's and Q5_K's minimums meet the activations' group sums in
 * 16-bit multiply-adds. */
#include "cpu/cpu_quant_dot_impl.h"

#ifdef CPU_QDOT_K_AVX2
#include <immintrin.h>
#include <string.h>

#define TARGET __attribute__((target("avx2,fma,f16c")))
#define INLINE __attribute__((target("avx2,fma,f16c"), always_inline)) static inline

INLINE float half(const unsigned char *p) {
    uint16_t h;
    memcpy(&h, p, 2);
    return _cvtsh_ss(h);
}

INLINE __m256i load256(const void *p) { return _mm256_loadu_si256((const __m256i *)p); }

/* 16 lanes of 16 bits: 8 of byte lo of v, then 8 of byte hi (v's bytes sign-extended). */
INLINE __m256i two_scales(__m128i v, int lo, int hi) {
    const __m128i pick = _mm_set_epi64x((long long)(0x0101010101010101ull * (unsigned)hi),
                                        (long long)(0x0101010101010101ull * (unsigned)lo));
    return _mm256_cvtepi8_epi16(_mm_shuffle_epi8(v, pick));
}

/* Q4_K and Q5_K (q5 a constant): one super-block b against the activations xb, added to acc
 * (d d_x times the scaled integer sums) and acc_min (-dmin d_x times the minimums' sums). */
INLINE void k45_block(const int q5, const unsigned char *b, const cpu_q8k *xb, __m256 *acc, __m128 *acc_min) {
    uint32_t packed[4];
    cpu_k4_scales(b + 4, packed);
    /* 16-bit: scales 0-7 in the low lane, minimums 0-7 in the high one */
    const __m256i sc_mn = _mm256_cvtepu8_epi16(_mm_set_epi32((int)packed[3], (int)packed[2], (int)packed[1], (int)packed[0]));
    const __m128i bsums = _mm_hadd_epi16(_mm_loadu_si128((const __m128i *)(const void *)xb->bsums),
                                         _mm_loadu_si128((const __m128i *)(const void *)(xb->bsums + 8)));
    const __m128i mins = _mm_madd_epi16(_mm256_extracti128_si256(sc_mn, 1), bsums); /* sums of 32 per sub-block */
    *acc_min = _mm_fmadd_ps(_mm_set1_ps(-half(b + 2) * xb->d), _mm_cvtepi32_ps(mins), *acc_min);
    const __m256i scales = _mm256_broadcastsi128_si256(_mm256_castsi256_si128(sc_mn));
    const unsigned char *qs = b + (q5 ? CPU_K5_QS : CPU_K4_QS);
    const __m256i low4 = _mm256_set1_epi8(0x0f);
    __m256i high = q5 ? load256(b + CPU_K5_QH) : _mm256_setzero_si256(), sum = _mm256_setzero_si256();
    for (int c = 0; c < 4; c++) {
        const __m256i bits = load256(qs + 32 * c);
        __m256i lo = _mm256_and_si256(bits, low4), hi = _mm256_and_si256(_mm256_srli_epi16(bits, 4), low4);
        if (q5) { /* bits 2c and 2c + 1 of qh, moved down 2 per c */
            lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(high, _mm256_set1_epi8(1)), 4));
            hi = _mm256_or_si256(hi, _mm256_slli_epi16(_mm256_and_si256(high, _mm256_set1_epi8(2)), 3));
            high = _mm256_srli_epi16(high, 2);
        }
        const __m256i plo = _mm256_maddubs_epi16(lo, load256(xb->q + 64 * c));
        const __m256i phi = _mm256_maddubs_epi16(hi, load256(xb->q + 64 * c + 32));
        /* the 16-bit scale of sub-blocks 2c and 2c + 1 in every lane */
        const __m256i slo = _mm256_shuffle_epi8(scales, _mm256_set1_epi16((short)(4 * c | (4 * c + 1) << 8)));
        const __m256i shi = _mm256_shuffle_epi8(scales, _mm256_set1_epi16((short)((4 * c + 2) | (4 * c + 3) << 8)));
        sum = _mm256_add_epi32(sum, _mm256_add_epi32(_mm256_madd_epi16(plo, slo), _mm256_madd_epi16(phi, shi)));
    }
    *acc = _mm256_fmadd_ps(_mm256_set1_ps(half(b) * xb->d), _mm256_cvtepi32_ps(sum), *acc);
}

/* Q6_K: one super-block b against xb, added to acc. */
INLINE void q6k_block(const unsigned char *b, const cpu_q8k *xb, __m256 *acc) {
    const __m128i sc = _mm_loadu_si128((const __m128i *)(const void *)(b + CPU_K6_SCALES));
    /* the offset of 32: 32 * sum_g sc_g bsums_g, taken off the unsigned products' sums */
    const __m256i offset = _mm256_slli_epi32(_mm256_madd_epi16(load256(xb->bsums), _mm256_cvtepi8_epi16(sc)), 5);
    const __m256i low4 = _mm256_set1_epi8(0x0f), low2 = _mm256_set1_epi8(3);
    __m256i sum = _mm256_setzero_si256();
    for (int h = 0; h < 2; h++) {
        const __m256i ql0 = load256(b + 64 * h), ql1 = load256(b + 64 * h + 32), qh = load256(b + CPU_K6_QH + 32 * h);
        __m256i u[4];
        u[0] = _mm256_or_si256(_mm256_and_si256(ql0, low4), _mm256_slli_epi16(_mm256_and_si256(qh, low2), 4));
        u[1] = _mm256_or_si256(_mm256_and_si256(ql1, low4),
                               _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2), low2), 4));
        u[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), low4),
                               _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 4), low2), 4));
        u[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), low4),
                               _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 6), low2), 4));
        for (int c = 0; c < 4; c++) { /* values 128 h + 32 c ..: groups 8 h + 2 c and the next */
            const __m256i p = _mm256_maddubs_epi16(u[c], load256(xb->q + 128 * h + 32 * c));
            sum = _mm256_add_epi32(sum, _mm256_madd_epi16(p, two_scales(sc, 8 * h + 2 * c, 8 * h + 2 * c + 1)));
        }
    }
    sum = _mm256_sub_epi32(sum, offset);
    *acc = _mm256_fmadd_ps(_mm256_set1_ps(half(b + CPU_K6_D) * xb->d), _mm256_cvtepi32_ps(sum), *acc);
}

/* One super-block of format (a constant) against xb. */
INLINE void k_block(const kiln_qformat format, const unsigned char *b, const cpu_q8k *xb, __m256 *acc,
                    __m128 *acc_min) {
    if (format == KILN_Q6_K) q6k_block(b, xb, acc);
    else k45_block(format == KILN_Q5_K, b, xb, acc, acc_min);
}

INLINE float k_result(__m256 acc, __m128 acc_min) {
    __m128 s = _mm_add_ps(acc_min, _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1)));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

/* Rows (a constant, at most CPU_QDOT_ROWS) of activations against one weight row: each
 * super-block is read once and met by every row while it is in L1. */
INLINE void k_rows(const kiln_qformat format, const unsigned char *row, size_t block_bytes, int64_t blocks,
                   const cpu_q8k *x, const int rows, float *out) {
    __m256 acc[CPU_QDOT_ROWS];
    __m128 acc_min[CPU_QDOT_ROWS];
    for (int i = 0; i < rows; i++) acc[i] = _mm256_setzero_ps(), acc_min[i] = _mm_setzero_ps();
    for (int64_t b = 0; b < blocks; b++, row += block_bytes)
        for (int i = 0; i < rows; i++) k_block(format, row, x + i * blocks + b, &acc[i], &acc_min[i]);
    for (int i = 0; i < rows; i++) out[i] = k_result(acc[i], acc_min[i]);
}

#define K_ROWS(f)                                                             \
    switch (rows) {                                                           \
    case 1: k_rows(f, row, block_bytes, blocks, x, 1, acc); return;           \
    case 2: k_rows(f, row, block_bytes, blocks, x, 2, acc); return;           \
    case 3: k_rows(f, row, block_bytes, blocks, x, 3, acc); return;           \
    default: k_rows(f, row, block_bytes, blocks, x, CPU_QDOT_ROWS, acc); return; \
    }

TARGET void cpu_qdot_k_avx2(kiln_qformat format, const unsigned char *row, size_t block_bytes, int64_t blocks,
                            const void *x, int rows, float *acc) {
    _Static_assert(CPU_QDOT_ROWS == 4, "cpu_qdot_k_avx2's row cases");
    switch (format) {
    case KILN_Q4_K: K_ROWS(KILN_Q4_K)
    case KILN_Q5_K: K_ROWS(KILN_Q5_K)
    default: K_ROWS(KILN_Q6_K)
    }
}

/* Decoding: n weight rows against one activation row, with k_rows' bits for rows = 1. */
INLINE void k_n(const kiln_qformat format, const unsigned char *w, size_t row_stride, size_t block_bytes,
                int64_t blocks, int64_t n, const cpu_q8k *x, const float *bias, float *y) {
    for (int64_t r = 0; r < n; r++, w += row_stride) {
        float acc;
        k_rows(format, w, block_bytes, blocks, x, 1, &acc);
        y[r] = acc + (bias ? bias[r] : 0.0f);
    }
}

TARGET void cpu_qdot_n_k_avx2(kiln_qformat format, const unsigned char *w, size_t row_stride, size_t block_bytes,
                              int64_t blocks, int64_t n, const void *x, const float *bias, float *y) {
    switch (format) {
    case KILN_Q4_K: k_n(KILN_Q4_K, w, row_stride, block_bytes, blocks, n, x, bias, y); return;
    case KILN_Q5_K: k_n(KILN_Q5_K, w, row_stride, block_bytes, blocks, n, x, bias, y); return;
    default: k_n(KILN_Q6_K, w, row_stride, block_bytes, blocks, n, x, bias, y); return;
    }
}
#endif
