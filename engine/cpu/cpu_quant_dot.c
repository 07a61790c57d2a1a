/* Integer dot products of weight blocks with int8 activation blocks (cpu_quant_dot.h). */
#include "cpu/cpu_quant_dot.h"

#include <math.h>
#include <string.h>

#include "core/cpu_features.h"
#include "kiln/tensor.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define QDOT_AVX2 1
#endif
#if defined(__aarch64__) && defined(__ARM_NEON)
#include <arm_neon.h>
#define QDOT_NEON 1
#endif

void cpu_qx_quantize(const float *x, int64_t blocks, cpu_qx *out) {
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

/* The byte offsets of a block's scale, minimum (Q4_1) and integers. */
static size_t quants_offset(kiln_qformat format) { return format == KILN_Q4_1 ? 4 : 2; }

/* ---- portable C ---- */

/* Block b's 32 integers as int8 (Q4_0 with its offset of 8 taken off; Q4_1's are 0..15). */
static void unpack_generic(kiln_qformat format, const unsigned char *b, int8_t *w) {
    const unsigned char *q = b + quants_offset(format);
    if (format == KILN_Q8_0) {
        memcpy(w, q, KILN_QBLOCK);
        return;
    }
    const int offset = format == KILN_Q4_0 ? 8 : 0;
    for (int j = 0; j < KILN_QBLOCK / 2; j++) {
        w[j] = (int8_t)((q[j] & 0x0f) - offset);
        w[j + KILN_QBLOCK / 2] = (int8_t)((q[j] >> 4) - offset);
    }
}

static float load_f16(const unsigned char *p) { return kiln_f16_to_f32((uint16_t)(p[0] | p[1] << 8)); }

static void qdot_generic(kiln_qformat format, const unsigned char *row, size_t block_bytes, int64_t blocks,
                         const cpu_qx *x, int rows, float *acc) {
    for (int i = 0; i < rows; i++) acc[i] = 0.0f;
    for (int64_t b = 0; b < blocks; b++, row += block_bytes) {
        int8_t w[KILN_QBLOCK];
        unpack_generic(format, row, w);
        const float dw = load_f16(row), mw = format == KILN_Q4_1 ? load_f16(row + 2) : 0.0f;
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

/* The block's integers as 32 signed bytes (Q4_1's as 0..15). */
__attribute__((target("avx2"))) static __m256i unpack_avx2(kiln_qformat format, const unsigned char *b) {
    const unsigned char *q = b + quants_offset(format);
    if (format == KILN_Q8_0) return _mm256_loadu_si256((const __m256i *)(const void *)q);
    const __m128i packed = _mm_loadu_si128((const __m128i *)(const void *)q), low4 = _mm_set1_epi8(0x0f);
    const __m128i lo = _mm_and_si128(packed, low4), hi = _mm_and_si128(_mm_srli_epi16(packed, 4), low4);
    __m256i w = _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1);
    return format == KILN_Q4_0 ? _mm256_sub_epi8(w, _mm256_set1_epi8(8)) : w;
}

/* One block's integer dot product with x's block, as 8 lanes of f32 partial sums. */
__attribute__((target("avx2"), always_inline)) static inline __m256 block_dots_avx2(const kiln_qformat format,
                                                                                  __m256i w, __m256i wa,
                                                                                  const cpu_qx *xb) {
    __m256i xq = _mm256_loadu_si256((const __m256i *)(const void *)xb->q);
    if (format != KILN_Q4_1) xq = _mm256_sign_epi8(xq, w);
    const __m256i pairs = _mm256_maddubs_epi16(wa, xq); /* |sums| <= 2 * 127 * 127: no saturation */
    return _mm256_cvtepi32_ps(_mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
}

/* The block's integers ready for maddubs, which multiplies unsigned by signed bytes: |w| (Q4_1's
 * w is already unsigned), to be paired with x carrying w's sign. */
__attribute__((target("avx2"), always_inline)) static inline __m256i unsigned_part(const kiln_qformat format, __m256i w) {
    return format == KILN_Q4_1 ? w : _mm256_sign_epi8(w, w);
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
        if (format == KILN_Q4_1) min_sum += half_avx2(row + 2) * x[b].s + half_avx2(row1 + 2) * x[b + 1].s;
    }
    if (b < blocks) {
        const __m256i w = unpack_avx2(format, row);
        sum0 = _mm256_fmadd_ps(block_dots_avx2(format, w, unsigned_part(format, w), x + b),
                               _mm256_set1_ps(half_avx2(row) * x[b].d), sum0);
        if (format == KILN_Q4_1) min_sum += half_avx2(row + 2) * x[b].s;
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
        const float dw = half_avx2(row), mw = format == KILN_Q4_1 ? half_avx2(row + 2) : 0.0f;
        for (int i = 0; i < rows; i++) {
            const cpu_qx *xb = x + i * blocks + b;
            sum[i] = _mm256_fmadd_ps(block_dots_avx2(format, w, wa, xb), _mm256_set1_ps(dw * xb->d), sum[i]);
            if (format == KILN_Q4_1) min_sum[i] += mw * xb->s;
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

__attribute__((target("avx2,fma,f16c"))) static void qdot_n_avx2(kiln_qformat format, const unsigned char *w,
                                                                  size_t row_stride, size_t block_bytes, int64_t blocks,
                                                                  int64_t n, const cpu_qx *x, const float *bias,
                                                                  float *y) {
    switch (format) {
    case KILN_Q8_0: qdot_n_avx2_rows(KILN_Q8_0, w, row_stride, block_bytes, blocks, n, x, bias, y); return;
    case KILN_Q4_0: qdot_n_avx2_rows(KILN_Q4_0, w, row_stride, block_bytes, blocks, n, x, bias, y); return;
    default: qdot_n_avx2_rows(KILN_Q4_1, w, row_stride, block_bytes, blocks, n, x, bias, y); return;
    }
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
                                                                 size_t block_bytes, int64_t blocks, const cpu_qx *x,
                                                                 int rows, float *acc) {
    _Static_assert(CPU_QDOT_ROWS == 4, "qdot_avx2's row cases");
    switch (format) {
    case KILN_Q8_0: QDOT_AVX2_ROWS(KILN_Q8_0)
    case KILN_Q4_0: QDOT_AVX2_ROWS(KILN_Q4_0)
    default: QDOT_AVX2_ROWS(KILN_Q4_1)
    }
}
#endif

/* ---- AArch64: NEON ---- */
#ifdef QDOT_NEON

/* The block's integers as two vectors of 16 signed bytes (values 0..15 and 16..31). */
static void unpack_neon(kiln_qformat format, const unsigned char *b, int8x16_t *w0, int8x16_t *w1) {
    const unsigned char *q = b + quants_offset(format);
    if (format == KILN_Q8_0) {
        *w0 = vld1q_s8((const int8_t *)q), *w1 = vld1q_s8((const int8_t *)q + 16);
        return;
    }
    const uint8x16_t packed = vld1q_u8(q);
    int8x16_t lo = vreinterpretq_s8_u8(vandq_u8(packed, vdupq_n_u8(0x0f)));
    int8x16_t hi = vreinterpretq_s8_u8(vshrq_n_u8(packed, 4));
    if (format == KILN_Q4_0) lo = vsubq_s8(lo, vdupq_n_s8(8)), hi = vsubq_s8(hi, vdupq_n_s8(8));
    *w0 = lo, *w1 = hi;
}

static int32_t dot32_neon(int8x16_t w0, int8x16_t w1, const int8_t *x) {
    const int8x16_t x0 = vld1q_s8(x), x1 = vld1q_s8(x + 16);
#ifdef __ARM_FEATURE_DOTPROD
    return vaddvq_s32(vdotq_s32(vdotq_s32(vdupq_n_s32(0), w0, x0), w1, x1));
#else
    /* two products of at most 127 * 127 per 16-bit lane: no overflow */
    int16x8_t p0 = vmlal_s8(vmull_s8(vget_low_s8(w0), vget_low_s8(x0)), vget_high_s8(w0), vget_high_s8(x0));
    int16x8_t p1 = vmlal_s8(vmull_s8(vget_low_s8(w1), vget_low_s8(x1)), vget_high_s8(w1), vget_high_s8(x1));
    return vaddvq_s32(vaddq_s32(vpaddlq_s16(p0), vpaddlq_s16(p1)));
#endif
}

static float load_f16_neon(const unsigned char *p) {
    __fp16 h;
    memcpy(&h, p, 2);
    return (float)h;
}

static void qdot_neon(kiln_qformat format, const unsigned char *row, size_t block_bytes, int64_t blocks,
                      const cpu_qx *x, int rows, float *acc) {
    for (int i = 0; i < rows; i++) acc[i] = 0.0f;
    for (int64_t b = 0; b < blocks; b++, row += block_bytes) {
        int8x16_t w0, w1;
        unpack_neon(format, row, &w0, &w1);
        const float dw = load_f16_neon(row), mw = format == KILN_Q4_1 ? load_f16_neon(row + 2) : 0.0f;
        for (int i = 0; i < rows; i++) {
            const cpu_qx *xb = x + i * blocks + b;
            acc[i] += dw * xb->d * (float)dot32_neon(w0, w1, xb->q) + mw * xb->s;
        }
    }
}
#endif

cpu_qdot_n_fn *cpu_qdot_n_select(void) {
#ifdef QDOT_AVX2
    const kiln_cpu_features *cpu = kiln_cpu();
    if (cpu->avx2 && cpu->fma && cpu->f16c) return qdot_n_avx2;
#endif
    return NULL;
}

cpu_qdot_fn *cpu_qdot_select(const char **name) {
#ifdef QDOT_AVX2
    const kiln_cpu_features *cpu = kiln_cpu();
    if (cpu->avx2 && cpu->fma && cpu->f16c) {
        if (name) *name = "avx2";
        return qdot_avx2;
    }
#endif
#ifdef QDOT_NEON
#ifdef __ARM_FEATURE_DOTPROD
    if (name) *name = "neon-dotprod";
#else
    if (name) *name = "neon";
#endif
    return qdot_neon;
#endif
    if (name) *name = "generic";
    return qdot_generic;
}
