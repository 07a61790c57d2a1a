/* Integer dot products of the 32-value formats' weight blocks (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1)
 * with int8 activation blocks, and the choice of implementation for every format
 * (cpu_quant_dot.h; the K formats' are in cpu_quant_dot_k*.c). */
#include "cpu/cpu_quant_dot.h"

#include <math.h>
#include <string.h>

#include "core/cpu_features.h"
#include "cpu/cpu_quant_dot_impl.h"
#include "kiln/tensor.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define QDOT_AVX2 1
#endif
#if defined(__aarch64__) && defined(__ARM_NEON)
#include <arm_neon.h>
#define QDOT_NEON 1
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

/* The formats with a minimum (value = d * q + m): their integers are unsigned. */
static int has_min(kiln_qformat format) { return format == KILN_Q4_1 || format == KILN_Q5_1; }
/* The byte offsets of a block's integers (after d, Q4_1's and Q5_1's m, and the Q5 formats'
 * 32 high bits) and of those high bits. */
static size_t quants_offset(kiln_qformat format) {
    return format == KILN_Q5_1 ? 8 : format == KILN_Q5_0 ? 6 : format == KILN_Q4_1 ? 4 : 2;
}
static size_t high_bits_offset(kiln_qformat format) { return format == KILN_Q5_1 ? 4 : 2; }
static int is_q5(kiln_qformat format) { return format == KILN_Q5_0 || format == KILN_Q5_1; }

/* ---- portable C ---- */

/* Block b's 32 integers as int8: Q4_0's less 8 and Q5_0's less 16; Q4_1's 0..15 and Q5_1's
 * 0..31 as they are. Byte j of the 4-bit part holds value j in its low nibble and value
 * j + 16 in its high one; bit j of the Q5 formats' 32-bit qh is value j's fifth bit. */
static void unpack_generic(kiln_qformat format, const unsigned char *b, int8_t *w) {
    const unsigned char *q = b + quants_offset(format);
    if (format == KILN_Q8_0) {
        memcpy(w, q, KILN_QBLOCK);
        return;
    }
    const unsigned char *h = b + high_bits_offset(format);
    const uint32_t qh = is_q5(format) ? (uint32_t)h[0] | (uint32_t)h[1] << 8 | (uint32_t)h[2] << 16 | (uint32_t)h[3] << 24 : 0;
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
        const float dw = load_f16(row), mw = has_min(format) ? load_f16(row + 2) : 0.0f;
        for (int i = 0; i < rows; i++) {
            const cpu_qx *xb = x + i * blocks + b;
            int32_t s = 0;
            for (int j = 0; j < KILN_QBLOCK; j++) s += w[j] * xb->q[j];
            acc[i] += dw * xb->d * (float)s + mw * xb->s;
        }
    }
}

/* ---- x86-64: AVX2 byte multiply-adds ---- */
#ifdef QDOT_AVX2

/* Byte j = 0x10 where bit j of the Q5 formats' qh is set, else 0. */
__attribute__((target("avx2"), always_inline)) static inline __m256i fifth_bits_avx2(const unsigned char *h) {
    uint32_t qh;
    memcpy(&qh, h, 4);
    const __m256i spread = _mm256_shuffle_epi8(_mm256_set1_epi32((int)qh), _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202,
                                                                                            0x0101010101010101, 0));
    const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ull);
    return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit), _mm256_set1_epi8(0x10));
}

/* The block's integers as 32 signed bytes (Q4_1's and Q5_1's unsigned). */
__attribute__((target("avx2"), always_inline)) static inline __m256i unpack_avx2(const kiln_qformat format,
                                                                                const unsigned char *b) {
    const unsigned char *q = b + quants_offset(format);
    if (format == KILN_Q8_0) return _mm256_loadu_si256((const __m256i *)(const void *)q);
    const __m128i packed = _mm_loadu_si128((const __m128i *)(const void *)q), low4 = _mm_set1_epi8(0x0f);
    const __m128i lo = _mm_and_si128(packed, low4), hi = _mm_and_si128(_mm_srli_epi16(packed, 4), low4);
    __m256i w = _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1);
    if (is_q5(format)) w = _mm256_or_si256(w, fifth_bits_avx2(b + high_bits_offset(format)));
    if (format == KILN_Q4_0) return _mm256_sub_epi8(w, _mm256_set1_epi8(8));
    if (format == KILN_Q5_0) return _mm256_sub_epi8(w, _mm256_set1_epi8(16));
    return w;
}

/* One block's integer dot product with x's block, as 8 lanes of f32 partial sums. */
__attribute__((target("avx2"), always_inline)) static inline __m256 block_dots_avx2(const kiln_qformat format,
                                                                                  __m256i w, __m256i wa,
                                                                                  const cpu_qx *xb) {
    __m256i xq = _mm256_loadu_si256((const __m256i *)(const void *)xb->q);
    if (!has_min(format)) xq = _mm256_sign_epi8(xq, w);
    const __m256i pairs = _mm256_maddubs_epi16(wa, xq); /* |sums| <= 2 * 127 * 127: no saturation */
    return _mm256_cvtepi32_ps(_mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
}

/* The block's integers ready for maddubs, which multiplies unsigned by signed bytes: |w| (the
 * formats with a minimum have unsigned w already), to be paired with x carrying w's sign. */
__attribute__((target("avx2"), always_inline)) static inline __m256i unsigned_part(const kiln_qformat format, __m256i w) {
    return has_min(format) ? w : _mm256_sign_epi8(w, w);
}

__attribute__((target("avx2,f16c"), always_inline)) static inline float half_avx2(const unsigned char *p) {
    uint16_t h;
    memcpy(&h, p, 2);
    return _cvtsh_ss(h);
}

__attribute__((target("avx"), always_inline)) static inline float hsum_avx(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

/* The block loops, always inlined into qdot_avx2 with the format and the row count as
 * constants: the accumulators then live in registers (with a run-time row count they sat in
 * memory, and every block's FMA waited for a store to reach the next load), and the format's
 * branches disappear. One row (decoding a token) takes two blocks per step into two
 * accumulators, so consecutive blocks' FMAs do not wait for each other. */
__attribute__((target("avx2,fma,f16c"), always_inline)) static inline void
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
        if (has_min(format)) min_sum += half_avx2(row + 2) * x[b].s + half_avx2(row1 + 2) * x[b + 1].s;
    }
    if (b < blocks) {
        const __m256i w = unpack_avx2(format, row);
        sum0 = _mm256_fmadd_ps(block_dots_avx2(format, w, unsigned_part(format, w), x + b),
                               _mm256_set1_ps(half_avx2(row) * x[b].d), sum0);
        if (has_min(format)) min_sum += half_avx2(row + 2) * x[b].s;
    }
    acc[0] = hsum_avx(_mm256_add_ps(sum0, sum1)) + min_sum;
}

__attribute__((target("avx2,fma,f16c"), always_inline)) static inline void
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
        const float dw = half_avx2(row), mw = has_min(format) ? half_avx2(row + 2) : 0.0f;
        for (int i = 0; i < rows; i++) {
            const cpu_qx *xb = x + i * blocks + b;
            sum[i] = _mm256_fmadd_ps(block_dots_avx2(format, w, wa, xb), _mm256_set1_ps(dw * xb->d), sum[i]);
            if (has_min(format)) min_sum[i] += mw * xb->s;
        }
    }
    for (int i = 0; i < rows; i++) acc[i] = hsum_avx(sum[i]) + min_sum[i];
}

/* Decoding's one activation row against n weight rows, one after another, each by
 * qdot_avx2_one: the call through a pointer, the format's and the row count's branches and
 * the caller's loop leave the path of every row. */
__attribute__((target("avx2,fma,f16c"), always_inline)) static inline void
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

__attribute__((target("avx2,fma,f16c"))) static void qdot_n_avx2(kiln_qformat format, const unsigned char *w,
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

__attribute__((target("avx2,fma,f16c"))) static void qdot_avx2(kiln_qformat format, const unsigned char *row,
                                                                 size_t block_bytes, int64_t blocks, const void *x,
                                                                 int rows, float *acc) {
    _Static_assert(CPU_QDOT_ROWS == 4, "qdot_avx2's row cases");
    QDOT_AVX2_FORMATS(QDOT_AVX2_ROWS)
}
#endif

/* ---- AArch64: NEON ---- */
#ifdef QDOT_NEON

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
    const unsigned char *q = b + quants_offset(format);
    if (format == KILN_Q8_0) {
        *w0 = vld1q_s8((const int8_t *)q), *w1 = vld1q_s8((const int8_t *)q + 16);
        return;
    }
    const uint8x16_t packed = vld1q_u8(q);
    uint8x16_t lo = vandq_u8(packed, vdupq_n_u8(0x0f)), hi = vshrq_n_u8(packed, 4);
    if (is_q5(format)) {
        uint8x16_t h0, h1;
        fifth_bits_neon(b + high_bits_offset(format), &h0, &h1);
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
        const float dw = load_f16_neon(row), mw = has_min(format) ? load_f16_neon(row + 2) : 0.0f;
        for (int i = 0; i < rows; i++) {
            const cpu_qx *xb = x + i * blocks + b;
            acc[i] += dw * xb->d * (float)dot32_neon(w0, w1, xb->q) + mw * xb->s;
        }
    }
}
#endif

int cpu_qdot_b32_impls(cpu_qdot_impl *out) {
    int n = 0;
#ifdef QDOT_AVX2
    const kiln_cpu_features *cpu = kiln_cpu();
    if (cpu->avx2 && cpu->fma && cpu->f16c) out[n++] = (cpu_qdot_impl){"avx2", qdot_avx2, qdot_n_avx2};
#endif
#ifdef QDOT_NEON
#ifdef __ARM_FEATURE_DOTPROD
    out[n++] = (cpu_qdot_impl){"neon-dotprod", qdot_neon, NULL};
#else
    out[n++] = (cpu_qdot_impl){"neon", qdot_neon, NULL};
#endif
#endif
    out[n++] = (cpu_qdot_impl){"generic", qdot_generic, NULL};
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
