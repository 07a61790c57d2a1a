/* The 32-value formats' (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1) dot products with int8 activation blocks
 * on x86-64 (cpu_quant_dot.h), written once for two instruction sets: included by
 * cpu_quant_dot_avx2.c and cpu_quant_dot_avx512.c, which define
 *   B_TARGET       the target attribute's string
 *   B_NAME(f)      the name of exported function f in that instruction set
 *   B_DOTS(u, s)   the 8 lanes of 32-bit sums of 4 products of unsigned bytes u with signed
 *                  bytes s (AVX2: maddubs, whose pair sums of at most 2 * 127 * 127 never
 *                  saturate, then madd with ones; AVX-512 VNNI: one vpdpbusd), the same
 *                  integers either way
 * and include <immintrin.h> and <string.h> first. */
#define B_TARGET_ATTR __attribute__((target(B_TARGET)))
#define B_INLINE __attribute__((target(B_TARGET), always_inline)) static inline


/* Byte j = 0x10 where bit j of the Q5 formats' qh is set, else 0. */
B_INLINE __m256i fifth_bits_avx2(const unsigned char *h) {
    uint32_t qh;
    memcpy(&qh, h, 4);
    const __m256i spread = _mm256_shuffle_epi8(_mm256_set1_epi32((int)qh), _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202,
                                                                                            0x0101010101010101, 0));
    const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ull);
    return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit), _mm256_set1_epi8(0x10));
}

/* The block's integers as 32 signed bytes (Q4_1's and Q5_1's unsigned). */
B_INLINE __m256i unpack_avx2(const kiln_qformat format,
                                                                                const unsigned char *b) {
    const unsigned char *q = b + cpu_b32_quants_offset(format);
    if (format == KILN_Q8_0) return _mm256_loadu_si256((const __m256i *)(const void *)q);
    const __m128i packed = _mm_loadu_si128((const __m128i *)(const void *)q), low4 = _mm_set1_epi8(0x0f);
    const __m128i lo = _mm_and_si128(packed, low4), hi = _mm_and_si128(_mm_srli_epi16(packed, 4), low4);
    __m256i w = _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1);
    if (cpu_b32_is_q5(format)) w = _mm256_or_si256(w, fifth_bits_avx2(b + cpu_b32_high_bits_offset(format)));
    if (format == KILN_Q4_0) return _mm256_sub_epi8(w, _mm256_set1_epi8(8));
    if (format == KILN_Q5_0) return _mm256_sub_epi8(w, _mm256_set1_epi8(16));
    return w;
}

/* One block's integer dot product with x's block, as 8 lanes of f32 partial sums. */
B_INLINE __m256 block_dots_avx2(const kiln_qformat format,
                                                                                  __m256i w, __m256i wa,
                                                                                  const cpu_qx *xb) {
    __m256i xq = _mm256_loadu_si256((const __m256i *)(const void *)xb->q);
    if (!cpu_b32_has_min(format)) xq = _mm256_sign_epi8(xq, w);
    return _mm256_cvtepi32_ps(B_DOTS(wa, xq));
}

/* The block's integers ready for maddubs, which multiplies unsigned by signed bytes: |w| (the
 * formats with a minimum have unsigned w already), to be paired with x carrying w's sign. */
B_INLINE __m256i unsigned_part(const kiln_qformat format, __m256i w) {
    return cpu_b32_has_min(format) ? w : _mm256_sign_epi8(w, w);
}

B_INLINE float half_avx2(const unsigned char *p) {
    uint16_t h;
    memcpy(&h, p, 2);
    return _cvtsh_ss(h);
}

B_INLINE float hsum_avx(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

/* The block loops, always inlined into cpu_qdot_b32 with the format and the row count as
 * constants: the accumulators then live in registers (with a run-time row count they sat in
 * memory, and every block's FMA waited for a store to reach the next load), and the format's
 * branches disappear. One row (decoding a token) takes two blocks per step into two
 * accumulators, so consecutive blocks' FMAs do not wait for each other. */
B_INLINE void
qdot_avx2_one(const kiln_qformat format, const unsigned char *row, size_t block_bytes, int64_t blocks,
              const cpu_qx *x, float *acc) {
    __m256 sum0 = _mm256_setzero_ps(), sum1 = _mm256_setzero_ps();
    float min_sum = 0.0f;
    int64_t b = 0;
    for (; b + 2 <= blocks; b += 2, row += 2 * block_bytes) {
        const unsigned char *row1 = row + block_bytes;
        const __m256i w0 = unpack_avx2(format, row), w1 = unpack_avx2(format, row1);
        const __m256 d0 = block_dots_avx2(format, w0, unsigned_part(format, w0), x + b);
        const __m256 d1 = block_dots_avx2(format, w1, unsigned_part(format, w1), x + b + 1);
        sum0 = _mm256_fmadd_ps(d0, _mm256_set1_ps(half_avx2(row) * x[b].d), sum0);
        sum1 = _mm256_fmadd_ps(d1, _mm256_set1_ps(half_avx2(row1) * x[b + 1].d), sum1);
        if (cpu_b32_has_min(format)) min_sum += half_avx2(row + 2) * x[b].s + half_avx2(row1 + 2) * x[b + 1].s;
    }
    if (b < blocks) {
        const __m256i w = unpack_avx2(format, row);
        sum0 = _mm256_fmadd_ps(block_dots_avx2(format, w, unsigned_part(format, w), x + b),
                               _mm256_set1_ps(half_avx2(row) * x[b].d), sum0);
        if (cpu_b32_has_min(format)) min_sum += half_avx2(row + 2) * x[b].s;
    }
    acc[0] = hsum_avx(_mm256_add_ps(sum0, sum1)) + min_sum;
}

B_INLINE void
qdot_avx2_rows(const kiln_qformat format, const unsigned char *row, size_t block_bytes, int64_t blocks,
               const cpu_qx *x, const int rows, float *acc) {
    if (rows == 1) {
        qdot_avx2_one(format, row, block_bytes, blocks, x, acc);
        return;
    }
    __m256 sum[CPU_QDOT_ROWS];
    float min_sum[CPU_QDOT_ROWS] = {0};
    for (int i = 0; i < rows; i++) sum[i] = _mm256_setzero_ps();
    for (int64_t b = 0; b < blocks; b++, row += block_bytes) {
        const __m256i w = unpack_avx2(format, row), wa = unsigned_part(format, w);
        const float dw = half_avx2(row), mw = cpu_b32_has_min(format) ? half_avx2(row + 2) : 0.0f;
        for (int i = 0; i < rows; i++) {
            const cpu_qx *xb = x + i * blocks + b;
            sum[i] = _mm256_fmadd_ps(block_dots_avx2(format, w, wa, xb), _mm256_set1_ps(dw * xb->d), sum[i]);
            if (cpu_b32_has_min(format)) min_sum[i] += mw * xb->s;
        }
    }
    for (int i = 0; i < rows; i++) acc[i] = hsum_avx(sum[i]) + min_sum[i];
}

/* Decoding's one activation row against n weight rows, one after another, each by
 * qdot_avx2_one: the call through a pointer, the format's and the row count's branches and
 * the caller's loop leave the path of every row. */
B_INLINE void
qdot_n_avx2_rows(const kiln_qformat format, const unsigned char *w, size_t row_stride, size_t block_bytes,
                 int64_t blocks, int64_t n, const cpu_qx *x, const float *bias, float *y) {
    for (int64_t r = 0; r < n; r++, w += row_stride) {
        float acc;
        qdot_avx2_one(format, w, block_bytes, blocks, x, &acc);
        y[r] = acc + (bias ? bias[r] : 0.0f);
    }
}

/* The functions below for each format as a constant. */
#define QDOT_AVX2_FORMATS(call)      \
    switch (format) {                \
    case KILN_Q8_0: call(KILN_Q8_0); \
    case KILN_Q4_0: call(KILN_Q4_0); \
    case KILN_Q4_1: call(KILN_Q4_1); \
    case KILN_Q5_0: call(KILN_Q5_0); \
    default: call(KILN_Q5_1);        \
    }

B_TARGET_ATTR void B_NAME(cpu_qdot_n_b32)(kiln_qformat format, const unsigned char *w,
                                                                  size_t row_stride, size_t block_bytes, int64_t blocks,
                                                                  int64_t n, const void *x, const float *bias,
                                                                  float *y) {
#define QDOT_N_CALL(f)                                                    \
    qdot_n_avx2_rows(f, w, row_stride, block_bytes, blocks, n, x, bias, y); \
    return
    QDOT_AVX2_FORMATS(QDOT_N_CALL)
#undef QDOT_N_CALL
}

/* qdot_avx2_rows for each format and row count, as constants. */
#define QDOT_AVX2_ROWS(format)                                                                  \
    switch (rows) {                                                                             \
    case 1: qdot_avx2_rows(format, row, block_bytes, blocks, x, 1, acc); return;                \
    case 2: qdot_avx2_rows(format, row, block_bytes, blocks, x, 2, acc); return;                \
    case 3: qdot_avx2_rows(format, row, block_bytes, blocks, x, 3, acc); return;                \
    default: qdot_avx2_rows(format, row, block_bytes, blocks, x, CPU_QDOT_ROWS, acc); return;   \
    }

B_TARGET_ATTR void B_NAME(cpu_qdot_b32)(kiln_qformat format, const unsigned char *row,
                                                                 size_t block_bytes, int64_t blocks, const void *x,
                                                                 int rows, float *acc) {
    _Static_assert(CPU_QDOT_ROWS == 4, "cpu_qdot_b32's row cases");
    QDOT_AVX2_FORMATS(QDOT_AVX2_ROWS)
}

#undef B_TARGET_ATTR
#undef B_INLINE
