/* The GEMM micro-kernels: an MR x NR tile of C held in vector registers while kc rank-1
 * updates stream through it (see cpu_gemm.h for the panel layout).
 *
 * x86-64 gets an AVX-512 and an AVX2+FMA kernel, compiled with per-function target
 * attributes and chosen at run time from the cpuid flags (core/cpu_features.h), so one binary runs on any
 * x86-64. They use intrinsics rather than loops for the auto-vectorizer because kiln
 * builds in ISO C mode, where GCC does not contract a*b+c into an FMA (-ffp-contract=off),
 * and without FMA this loop runs at half speed. Every architecture gets the generic kernel,
 * written with GCC vector extensions (SSE on x86-64, NEON on AArch64).
 *
 * Tile sizes follow the register files: AVX-512 has 32 registers, so 12 x 32 floats is 24
 * accumulators + 2 for the B row + 1 broadcast; AVX2 has 16: 6 x 16 is 12 + 2 + 1.
 *
 * The x86 kernels also bring packing routines for f32 operands (in-register transposes):
 * scalar packing cost a quarter of a 256^3 GEMM. */
#include "core/cpu_features.h"
#include "cpu/cpu_gemm.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include "cpu/cpu_transpose8.h"
#define CPU_GEMM_X86 1
#endif

/* ---- generic: 4 x 8 with 4-wide vectors ---- */

typedef float cpu_v4 __attribute__((vector_size(16)));
#define GENERIC_MR 4
#define GENERIC_NR 8

static void micro_generic(int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
                          int mv, int nv, const cpu_gemm_epilogue *e) {
    cpu_v4 acc[GENERIC_MR][2];
    for (int i = 0; i < GENERIC_MR; i++) acc[i][0] = acc[i][1] = (cpu_v4){0, 0, 0, 0};
    for (int64_t p = 0; p < kc; p++) {
        cpu_v4 b0, b1;
        __builtin_memcpy(&b0, b + p * GENERIC_NR, sizeof b0);
        __builtin_memcpy(&b1, b + p * GENERIC_NR + 4, sizeof b1);
        for (int i = 0; i < GENERIC_MR; i++) {
            float ai = a[p * GENERIC_MR + i];
            acc[i][0] += ai * b0;
            acc[i][1] += ai * b1;
        }
    }
    float tile[GENERIC_MR * GENERIC_NR];
    for (int i = 0; i < GENERIC_MR; i++) {
        __builtin_memcpy(tile + i * GENERIC_NR, &acc[i][0], sizeof acc[i][0]);
        __builtin_memcpy(tile + i * GENERIC_NR + 4, &acc[i][1], sizeof acc[i][1]);
    }
    cpu_gemm_store_tile(tile, GENERIC_NR, c, ldc, mv, nv, e);
}

static const cpu_gemm_kernel k_generic = {
    .name = "generic",
    .mr = GENERIC_MR,
    .nr = GENERIC_NR,
    .run = micro_generic,
    .fused = 0,
    .pack_a = NULL,
    .pack_at = NULL,
    .pack_b = NULL,
    .pack_bt = NULL,
};

#ifdef CPU_GEMM_X86

/* ---- AVX2 + FMA: 6 x 16 ---- */
#define AVX2_MR 6
#define AVX2_NR 16

__attribute__((target("avx2,fma"))) static void
micro_avx2(int64_t kc, const float *a, const float *b, float *c, int64_t ldc, int mv, int nv,
           const cpu_gemm_epilogue *e) {
    __m256 acc[AVX2_MR][2];
#pragma GCC unroll 8
    for (int i = 0; i < AVX2_MR; i++) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
    for (int64_t p = 0; p < kc; p++) {
        __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
#pragma GCC unroll 8
        for (int i = 0; i < AVX2_MR; i++) {
            __m256 ai = _mm256_broadcast_ss(a + i);
            acc[i][0] = _mm256_fmadd_ps(ai, b0, acc[i][0]);
            acc[i][1] = _mm256_fmadd_ps(ai, b1, acc[i][1]);
        }
        a += AVX2_MR;
        b += AVX2_NR;
    }
    float tile[AVX2_MR * AVX2_NR] __attribute__((aligned(32)));
#pragma GCC unroll 8
    for (int i = 0; i < AVX2_MR; i++) {
        _mm256_store_ps(tile + i * AVX2_NR, acc[i][0]);
        _mm256_store_ps(tile + i * AVX2_NR + 8, acc[i][1]);
    }
    cpu_gemm_store_tile(tile, AVX2_NR, c, ldc, mv, nv, e);
}

/* rows rows of src (rows <= 8), 8 columns at a time, transposed into dst with row stride
 * dst_ld: dst[p * dst_ld + i] = src[i * ld + p] for p < kc. */
__attribute__((target("avx2,fma"))) static void
transpose_rows_avx2(float *dst, int64_t dst_ld, const float *src, int rows, int64_t ld, int64_t kc) {
    const __m256i keep = _mm256_setr_epi32(0 < rows ? -1 : 0, 1 < rows ? -1 : 0, 2 < rows ? -1 : 0, 3 < rows ? -1 : 0,
                                           4 < rows ? -1 : 0, 5 < rows ? -1 : 0, 6 < rows ? -1 : 0, 7 < rows ? -1 : 0);
    int64_t p0 = 0;
    for (; p0 + 8 <= kc; p0 += 8) {
        __m256 r[8];
        for (int i = 0; i < 8; i++) r[i] = i < rows ? _mm256_loadu_ps(src + i * ld + p0) : _mm256_setzero_ps();
        cpu_transpose8(r);
        for (int q = 0; q < 8; q++) _mm256_maskstore_ps(dst + (p0 + q) * dst_ld, keep, r[q]);
    }
    for (; p0 < kc; p0++)
        for (int i = 0; i < rows; i++) dst[p0 * dst_ld + i] = src[i * ld + p0];
}

__attribute__((target("avx2,fma"))) static void pack_a_avx2(float *dst, const float *src, int64_t ld, int64_t kc) {
    transpose_rows_avx2(dst, AVX2_MR, src, AVX2_MR, ld, kc);
}

__attribute__((target("avx2,fma"))) static void pack_b_avx2(float *dst, const float *src, int64_t ld, int64_t kc) {
    for (int64_t p = 0; p < kc; p++, dst += AVX2_NR, src += ld) {
        _mm256_storeu_ps(dst, _mm256_loadu_ps(src));
        _mm256_storeu_ps(dst + 8, _mm256_loadu_ps(src + 8));
    }
}

__attribute__((target("avx2,fma"))) static void pack_bt_avx2(float *dst, const float *src, int64_t ld, int64_t kc) {
    transpose_rows_avx2(dst, AVX2_NR, src, 8, ld, kc);
    transpose_rows_avx2(dst + 8, AVX2_NR, src + 8 * ld, 8, ld, kc);
}

__attribute__((target("avx2,fma"))) static void pack_at_avx2(float *dst, const float *src, int64_t ld, int64_t kc) {
    const __m256i six = _mm256_setr_epi32(-1, -1, -1, -1, -1, -1, 0, 0);
    for (int64_t p = 0; p < kc; p++, dst += AVX2_MR, src += ld)
        _mm256_maskstore_ps(dst, six, _mm256_maskload_ps(src, six));
}

static const cpu_gemm_kernel k_avx2 = {
    .name = "avx2",
    .mr = AVX2_MR,
    .nr = AVX2_NR,
    .run = micro_avx2,
    .fused = 1,
    .pack_a = pack_a_avx2,
    .pack_at = pack_at_avx2,
    .pack_b = pack_b_avx2,
    .pack_bt = pack_bt_avx2,
};

/* ---- AVX-512: 12 x 32 ---- */
#define AVX512_MR 12
#define AVX512_NR 32

__attribute__((target("avx512f"))) static void
micro_avx512(int64_t kc, const float *a, const float *b, float *c, int64_t ldc, int mv, int nv,
             const cpu_gemm_epilogue *e) {
    __m512 acc[AVX512_MR][2];
#pragma GCC unroll 16
    for (int i = 0; i < AVX512_MR; i++) {
        acc[i][0] = acc[i][1] = _mm512_setzero_ps();
        /* C rows lie a stride apart and collide in L1 sets: start fetching them now */
        if (i < mv) _mm_prefetch((const char *)(c + i * ldc), _MM_HINT_T0), _mm_prefetch((const char *)(c + i * ldc + 16), _MM_HINT_T0);
    }
    for (int64_t p = 0; p < kc; p++) {
        __m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16);
#pragma GCC unroll 16
        for (int i = 0; i < AVX512_MR; i++) {
            __m512 ai = _mm512_set1_ps(a[i]);
            acc[i][0] = _mm512_fmadd_ps(ai, b0, acc[i][0]);
            acc[i][1] = _mm512_fmadd_ps(ai, b1, acc[i][1]);
        }
        a += AVX512_MR;
        b += AVX512_NR;
    }
    if (mv == AVX512_MR && nv == AVX512_NR) { /* a whole tile: straight from the registers */
        const __m512 alpha = _mm512_set1_ps(e->alpha), beta = _mm512_set1_ps(e->beta);
        const int add = !e->first, scale = e->first && e->beta != 0.0f;
        __m512 bias0 = _mm512_setzero_ps(), bias1 = _mm512_setzero_ps();
        if (e->first && e->bias) bias0 = _mm512_loadu_ps(e->bias), bias1 = _mm512_loadu_ps(e->bias + 16);
#pragma GCC unroll 16
        for (int i = 0; i < AVX512_MR; i++) {
            float *row = c + i * ldc;
            __m512 c0 = bias0, c1 = bias1;
            if (add) c0 = _mm512_loadu_ps(row), c1 = _mm512_loadu_ps(row + 16);
            if (scale) c0 = _mm512_fmadd_ps(beta, _mm512_loadu_ps(row), c0), c1 = _mm512_fmadd_ps(beta, _mm512_loadu_ps(row + 16), c1);
            _mm512_storeu_ps(row, _mm512_fmadd_ps(alpha, acc[i][0], c0));
            _mm512_storeu_ps(row + 16, _mm512_fmadd_ps(alpha, acc[i][1], c1));
        }
        return;
    }
    float tile[AVX512_MR * AVX512_NR] __attribute__((aligned(64)));
#pragma GCC unroll 16
    for (int i = 0; i < AVX512_MR; i++) {
        _mm512_store_ps(tile + i * AVX512_NR, acc[i][0]);
        _mm512_store_ps(tile + i * AVX512_NR + 16, acc[i][1]);
    }
    cpu_gemm_store_tile(tile, AVX512_NR, c, ldc, mv, nv, e);
}

/* 16 x 16 transpose in registers: r[i] lane j becomes r[j] lane i. */
__attribute__((target("avx512f"))) static inline void transpose16(__m512 r[16]) {
    __m512 t[16];
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 4; i++) {
        r[4 * i + 0] = _mm512_shuffle_ps(t[4 * i + 0], t[4 * i + 2], _MM_SHUFFLE(1, 0, 1, 0));
        r[4 * i + 1] = _mm512_shuffle_ps(t[4 * i + 0], t[4 * i + 2], _MM_SHUFFLE(3, 2, 3, 2));
        r[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(1, 0, 1, 0));
        r[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    for (int h = 0; h < 2; h++)
        for (int i = 0; i < 4; i++) {
            t[8 * h + i] = _mm512_shuffle_f32x4(r[8 * h + i], r[8 * h + i + 4], 0x88);
            t[8 * h + i + 4] = _mm512_shuffle_f32x4(r[8 * h + i], r[8 * h + i + 4], 0xdd);
        }
    for (int i = 0; i < 8; i++) {
        r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
        r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xdd);
    }
}

/* rows rows of src (rows <= 16), 16 columns at a time, transposed into dst with row stride
 * dst_ld: dst[p * dst_ld + i] = src[i * ld + p] for p < kc. */
__attribute__((target("avx512f"))) static void
transpose_rows_avx512(float *dst, int64_t dst_ld, const float *src, int rows, int64_t ld, int64_t kc) {
    const __mmask16 keep = (__mmask16)((1u << rows) - 1);
    int64_t p0 = 0;
    for (; p0 + 16 <= kc; p0 += 16) {
        __m512 r[16];
        for (int i = 0; i < 16; i++) r[i] = i < rows ? _mm512_loadu_ps(src + i * ld + p0) : _mm512_setzero_ps();
        transpose16(r);
        for (int q = 0; q < 16; q++) _mm512_mask_storeu_ps(dst + (p0 + q) * dst_ld, keep, r[q]);
    }
    for (; p0 < kc; p0++)
        for (int i = 0; i < rows; i++) dst[p0 * dst_ld + i] = src[i * ld + p0];
}

__attribute__((target("avx512f"))) static void pack_a_avx512(float *dst, const float *src, int64_t ld, int64_t kc) {
    transpose_rows_avx512(dst, AVX512_MR, src, AVX512_MR, ld, kc);
}

__attribute__((target("avx512f"))) static void pack_b_avx512(float *dst, const float *src, int64_t ld, int64_t kc) {
    for (int64_t p = 0; p < kc; p++, dst += AVX512_NR, src += ld) {
        _mm512_storeu_ps(dst, _mm512_loadu_ps(src));
        _mm512_storeu_ps(dst + 16, _mm512_loadu_ps(src + 16));
    }
}

__attribute__((target("avx512f"))) static void pack_bt_avx512(float *dst, const float *src, int64_t ld, int64_t kc) {
    transpose_rows_avx512(dst, AVX512_NR, src, 16, ld, kc);
    transpose_rows_avx512(dst + 16, AVX512_NR, src + 16 * ld, 16, ld, kc);
}

__attribute__((target("avx512f"))) static void pack_at_avx512(float *dst, const float *src, int64_t ld, int64_t kc) {
    const __mmask16 twelve = (__mmask16)((1u << AVX512_MR) - 1);
    for (int64_t p = 0; p < kc; p++, dst += AVX512_MR, src += ld)
        _mm512_mask_storeu_ps(dst, twelve, _mm512_maskz_loadu_ps(twelve, src));
}

static const cpu_gemm_kernel k_avx512 = {
    .name = "avx512",
    .mr = AVX512_MR,
    .nr = AVX512_NR,
    .run = micro_avx512,
    .fused = 1,
    .pack_a = pack_a_avx512,
    .pack_at = pack_at_avx512,
    .pack_b = pack_b_avx512,
    .pack_bt = pack_bt_avx512,
};

#endif /* CPU_GEMM_X86 */

int cpu_gemm_kernels(const cpu_gemm_kernel **out, int cap) {
    const cpu_gemm_kernel *all[3];
    int n = 0;
#ifdef CPU_GEMM_X86
    const kiln_cpu_features *cpu = kiln_cpu();
    if (cpu->avx512f) all[n++] = &k_avx512;
    if (cpu->avx2 && cpu->fma) all[n++] = &k_avx2;
#endif
    all[n++] = &k_generic;
    for (int i = 0; i < n && i < cap; i++) out[i] = all[i];
    return n < cap ? n : cap;
}
