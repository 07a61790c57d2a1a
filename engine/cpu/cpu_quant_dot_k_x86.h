/* The K formats' dot products with Q8_K activations on x86-64 (cpu_quant_dot.h; layouts in
 * cpu_quant_dot_impl.h), written once for two instruction sets: included by
 * cpu_quant_dot_k_avx2.c and cpu_quant_dot_k_avx512.c, which define
 *   K_TARGET         the target attribute's string
 *   K_NAME(f)        the name of exported function f in that instruction set
 *   K_DPWSSD(s,a,b)  s + the 16-bit multiply-add of a and b (AVX2: madd then add; AVX-512
 *                    VNNI: one vpdpwssd)
 *   K_WIDE           defined where 512-bit registers pay (Q4_K's super-block, q4k_block_wide)
 * and include <immintrin.h> and <string.h> first.
 *
 * Per super-block, as ggml's CPU backend: the weights' integers are unpacked to unsigned bytes
 * (Q6_K's with its offset of 32 kept, taken off at the end through the activations' group
 * sums), multiplied with the activations' signed bytes by maddubs into 16-bit pair sums (at
 * most 2 * 63 * 127: no saturation), which a second multiply-add scales by the group's scale
 * into 32-bit sums; one conversion to f32 per super-block. Q4_K's and Q5_K's minimums meet
 * the activations' group sums in 16-bit multiply-adds. */
#define TARGET __attribute__((target(K_TARGET)))
#define INLINE __attribute__((target(K_TARGET), always_inline)) static inline

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

/* Q4_K's and Q5_K's super-block b against xb: its minimums' term, -dmin d_x sum_s m_s (the
 * sum of sub-block s's 32 activations), added to acc_min; returns its 8 scales as 16-bit
 * lanes. */
INLINE __m128i k45_scales(const unsigned char *b, const cpu_q8k *xb, __m128 *acc_min) {
    uint32_t packed[4];
    cpu_k4_scales(b + CPU_K4_SCALES, packed);
    /* 16-bit: scales 0-7 in the low lane, minimums 0-7 in the high one */
    const __m256i sc_mn = _mm256_cvtepu8_epi16(_mm_set_epi32((int)packed[3], (int)packed[2], (int)packed[1], (int)packed[0]));
    const __m128i bsums = _mm_hadd_epi16(_mm_loadu_si128((const __m128i *)(const void *)xb->bsums),
                                         _mm_loadu_si128((const __m128i *)(const void *)(xb->bsums + 8)));
    const __m128i mins = _mm_madd_epi16(_mm256_extracti128_si256(sc_mn, 1), bsums); /* sums of 32 per sub-block */
    *acc_min = _mm_fmadd_ps(_mm_set1_ps(-half(b + 2) * xb->d), _mm_cvtepi32_ps(mins), *acc_min);
    return _mm256_castsi256_si128(sc_mn);
}

/* Q4_K and Q5_K (q5 a constant): one super-block b against the activations xb, added to acc
 * (d d_x times the scaled integer sums) and acc_min. */
INLINE void k45_block(const int q5, const unsigned char *b, const cpu_q8k *xb, __m256 *acc, __m128 *acc_min) {
    const __m256i scales = _mm256_broadcastsi128_si256(k45_scales(b, xb, acc_min));
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
        sum = K_DPWSSD(K_DPWSSD(sum, plo, slo), phi, shi);
    }
    *acc = _mm256_fmadd_ps(_mm256_set1_ps(half(b) * xb->d), _mm256_cvtepi32_ps(sum), *acc);
}

#ifdef K_WIDE
/* Q4_K in 512-bit registers (K_WIDE): each 32 bytes of qs, loaded into both halves of a
 * register, become sub-block 2c's 32 integers (low nibbles) in the lower half and 2c + 1's
 * (high nibbles) in the upper one, the order of the activations' 64 bytes from 64 c: one
 * maddubs and one vpdpwssd per 64 values. */
INLINE void q4k_block_wide(const unsigned char *b, const cpu_q8k *xb, __m256 *acc, __m128 *acc_min) {
    const __m512i scales = _mm512_broadcast_i32x4(k45_scales(b, xb, acc_min));
    const __m512i shift = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(4), 1), low4 = _mm512_set1_epi8(0x0f);
    __m512i sum[2] = {_mm512_setzero_si512(), _mm512_setzero_si512()}; /* two chains of vpdpwssd latency, not one */
    for (int c = 0; c < 4; c++) {
        const __m512i bits = _mm512_broadcast_i64x4(load256(b + CPU_K4_QS + 32 * c));
        const __m512i q = _mm512_and_si512(_mm512_srlv_epi16(bits, shift), low4);
        const __m512i p = _mm512_maddubs_epi16(q, _mm512_loadu_si512((const void *)(xb->q + 64 * c)));
        /* sub-block 2c's scale in the lower half's 16-bit lanes, 2c + 1's in the upper */
        const __m512i pick = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set1_epi16((short)(4 * c | (4 * c + 1) << 8))),
                                                _mm256_set1_epi16((short)((4 * c + 2) | (4 * c + 3) << 8)), 1);
        sum[c % 2] = _mm512_dpwssd_epi32(sum[c % 2], p, _mm512_shuffle_epi8(scales, pick));
    }
    const __m512i total = _mm512_add_epi32(sum[0], sum[1]);
    const __m256i sum8 = _mm256_add_epi32(_mm512_castsi512_si256(total), _mm512_extracti64x4_epi64(total, 1));
    *acc = _mm256_fmadd_ps(_mm256_set1_ps(half(b) * xb->d), _mm256_cvtepi32_ps(sum8), *acc);
}
#endif

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
            sum = K_DPWSSD(sum, p, two_scales(sc, 8 * h + 2 * c, 8 * h + 2 * c + 1));
        }
    }
    sum = _mm256_sub_epi32(sum, offset);
    *acc = _mm256_fmadd_ps(_mm256_set1_ps(half(b + CPU_K6_D) * xb->d), _mm256_cvtepi32_ps(sum), *acc);
}

/* One super-block of format (a constant) against xb. */
INLINE void k_block(const kiln_qformat format, const unsigned char *b, const cpu_q8k *xb, __m256 *acc,
                    __m128 *acc_min) {
    if (format == KILN_Q6_K) q6k_block(b, xb, acc);
#ifdef K_WIDE
    else if (format == KILN_Q4_K) q4k_block_wide(b, xb, acc, acc_min);
#endif
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

TARGET void K_NAME(cpu_qdot_k)(kiln_qformat format, const unsigned char *row, size_t block_bytes, int64_t blocks,
                            const void *x, int rows, float *acc) {
    _Static_assert(CPU_QDOT_ROWS == 4, "cpu_qdot_k_avx2's row cases");
    switch (format) {
    case KILN_Q4_K: K_ROWS(KILN_Q4_K)
    case KILN_Q5_K: K_ROWS(KILN_Q5_K)
    default: K_ROWS(KILN_Q6_K)
    }
}

/* Decoding: n weight rows against one activation row, with k_rows' bits for rows = 1. (Two
 * rows at a time, sharing the activations' loads, measured slower: the registers run out.) */
INLINE void k_n(const kiln_qformat format, const unsigned char *w, size_t row_stride, size_t block_bytes,
                int64_t blocks, int64_t n, const cpu_q8k *x, const float *bias, float *y) {
    for (int64_t r = 0; r < n; r++, w += row_stride) {
        float acc;
        k_rows(format, w, block_bytes, blocks, x, 1, &acc);
        y[r] = acc + (bias ? bias[r] : 0.0f);
    }
}

TARGET void K_NAME(cpu_qdot_n_k)(kiln_qformat format, const unsigned char *w, size_t row_stride, size_t block_bytes,
                              int64_t blocks, int64_t n, const void *x, const float *bias, float *y) {
    switch (format) {
    case KILN_Q4_K: k_n(KILN_Q4_K, w, row_stride, block_bytes, blocks, n, x, bias, y); return;
    case KILN_Q5_K: k_n(KILN_Q5_K, w, row_stride, block_bytes, blocks, n, x, bias, y); return;
    default: k_n(KILN_Q6_K, w, row_stride, block_bytes, blocks, n, x, bias, y); return;
    }
}

#undef TARGET
#undef INLINE
