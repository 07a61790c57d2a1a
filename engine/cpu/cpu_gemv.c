/* The CPU GEMM's path for a few rows: C = alpha op(A) op(B) + beta C (+ bias) where C has at
 * most CPU_GEMV_MAX_ROWS rows, as when decoding, where one token's activations meet every
 * weight matrix once.
 *
 * Such a product uses each weight once per row of C, so its time is the time it takes to
 * stream B from memory. The blocked GEMM (cpu_gemm.c) first packs all of B into f32 panels:
 * for one row of C that copy is most of the work, and it writes an f16 B back out at twice
 * its width. Here B is read where it lies, once:
 *   B stored k x n (op(B) = B: the layers' weights, [in, out]): per strip of C's columns,
 *     each row of B is a contiguous run, scaled by x[p] and added into the strip's sums (one
 *     row of C, a decoded token: one strip over the whole width, eight rows of B per pass,
 *     16 lanes on AVX-512, the rows two passes ahead fetched by software);
 *   B stored n x k (op(B) = B^T: the tied output embedding, [vocab, dim]): several rows of B
 *     are read along K together and turned into columns (a register transpose on x86), so
 *     that each output's sum still runs in the order of K.
 * An f16 B is widened as it is read (F16C on x86, an L1-sized buffer elsewhere).
 *
 * The arithmetic is the GEMM's, term for term (cpu_gemm.h): for each element of C, per block
 * of CPU_GEMM_KC terms of K, the products are added in the order of K to a sum that starts
 * at zero, fused where the GEMM's kernel fuses (kn->fused), and each block's sum is folded
 * into C by cpu_gemm_store_tile, inlined into the same kind of function as in the kernels.
 * A row of C thus has the same bits whichever path computed it, and decoding with the KV
 * cache (one row per token, here) gives the tokens of decoding without it (all the rows of
 * the window, in the GEMM). op(A)'s few rows are first gathered into a contiguous f32 copy. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/cpu_features.h"
#include "cpu/cpu_gemm.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include "cpu/cpu_transpose8.h"
#define CPU_GEMV_X86 1
#endif

/* The most columns of C per task when B is stored k x n. Long runs of each row of B keep
 * the hardware prefetchers streaming (with 1 KiB runs a row apart they stopped at every
 * page, and decoding ran at half the speed); the sums, 8 KiB per row of C, stay in L1/L2. */
#define GEMV_STRIP_MAX 2048
/* Outputs (rows of B) per task when B is stored n x k. */
#define GEMV_GROUP 64
/* Below this many multiply-adds a GEMV runs on one thread (an OpenMP fork and join cost
 * microseconds), as the GEMM does. */
#define GEMV_PAR_MIN ((int64_t)1 << 20)

static _Atomic int g_gemv_off;

void cpu_gemm_set_gemv(int enabled) { atomic_store(&g_gemv_off, !enabled); }

typedef struct gemv {
    const float *x;   /* op(A)'s m rows, contiguous: op(A)(i, p) = x[i * k + p] */
    const char *b;    /* B as stored: element (r, c) at r * ldb + c */
    int b_f16;        /* B's elements are f16 (else f32) */
    int64_t ldb;
    float *c;
    int64_t ldc;
    const float *bias;
    int m;
    int64_t n, k;
    int64_t strip;    /* columns of C per task, a multiple of 8 (B stored k x n) */
    int avx512;       /* the CPU has AVX-512F (kn_one_block16) */
    float alpha, beta;
} gemv;

typedef void (*gemv_task_fn)(const gemv *g, int64_t task);

static inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* Folds one K block's sums, tile[i * tile_ld + j] for C's rows [0, m) and columns
 * [j0, j0 + nv), into C: the GEMM kernels' own epilogue. */
static inline void gemv_fold(const gemv *g, const float *tile, int tile_ld, int64_t j0, int nv, int first) {
    const cpu_gemm_epilogue e = {.alpha = g->alpha, .beta = g->beta, .bias = g->bias ? g->bias + j0 : NULL, .first = first};
    cpu_gemm_store_tile(tile, tile_ld, g->c + j0, g->ldc, g->m, nv, &e);
}

static inline const void *b_at(const gemv *g, int64_t row, int64_t col) {
    return g->b + (size_t)(row * g->ldb + col) * (g->b_f16 ? sizeof(uint16_t) : sizeof(float));
}

/* ---- generic: 4-wide vectors of GCC's vector extensions, products then sums (as the
 * generic micro-kernel) ---- */

typedef float gemv_v4 __attribute__((vector_size(16)));

/* Row run [col, col + len) of B in f32: in place, or widened into buf. */
static const float *b_run_f32(const gemv *g, int64_t row, int64_t col, int64_t len, float *buf) {
    if (!g->b_f16) return b_at(g, row, col);
    kiln_f16_to_f32_n(b_at(g, row, col), buf, len);
    return buf;
}

/* B stored k x n: one strip of C's columns. */
static void kn_task_generic(const gemv *g, int64_t task) {
    const int m = g->m;
    const int64_t k = g->k, j0 = task * g->strip;
    const int nv = (int)min64(g->n - j0, g->strip);
    float tile[CPU_GEMV_MAX_ROWS * GEMV_STRIP_MAX], wide[GEMV_STRIP_MAX];
    for (int64_t pc = 0; pc < k; pc += CPU_GEMM_KC) {
        const int64_t pe = min64(k, pc + CPU_GEMM_KC);
        memset(tile, 0, sizeof tile);
        for (int64_t p = pc; p < pe; p++) {
            const float *row = b_run_f32(g, p, j0, nv, wide);
            for (int i = 0; i < m; i++) {
                const float xi = g->x[i * k + p];
                float *t = tile + i * GEMV_STRIP_MAX;
                for (int j = 0; j < nv; j++) t[j] += xi * row[j];
            }
        }
        gemv_fold(g, tile, GEMV_STRIP_MAX, j0, nv, pc == 0);
    }
}

/* B stored n x k: GEMV_GROUP outputs, four at a time as the lanes of a vector, each lane
 * summing along its own row of B. */
static void nk_task_generic(const gemv *g, int64_t task) {
    const int m = g->m;
    const int64_t k = g->k, end = min64(g->n, (task + 1) * GEMV_GROUP);
    static const float zeros[CPU_GEMM_KC];
    float wide[4][CPU_GEMM_KC], tile[CPU_GEMV_MAX_ROWS * 4];
    for (int64_t j0 = task * GEMV_GROUP; j0 < end; j0 += 4) {
        const int rows = (int)min64(4, end - j0);
        for (int64_t pc = 0; pc < k; pc += CPU_GEMM_KC) {
            const int64_t kb = min64(k - pc, CPU_GEMM_KC);
            const float *run[4];
            for (int l = 0; l < 4; l++) run[l] = l < rows ? b_run_f32(g, j0 + l, pc, kb, wide[l]) : zeros;
            gemv_v4 acc[CPU_GEMV_MAX_ROWS] = {{0}};
            for (int64_t p = 0; p < kb; p++) {
                const gemv_v4 r = {run[0][p], run[1][p], run[2][p], run[3][p]};
                for (int i = 0; i < m; i++) acc[i] += g->x[i * k + pc + p] * r;
            }
            for (int i = 0; i < m; i++) memcpy(tile + i * 4, &acc[i], sizeof acc[i]);
            gemv_fold(g, tile, 4, j0, rows, pc == 0);
        }
    }
}

#ifdef CPU_GEMV_X86

/* ---- x86-64: AVX2 with fused multiply-adds (for the avx2 and avx512 GEMM kernels) ---- */

/* The first n (< 8) lanes. */
__attribute__((target("avx2,fma,f16c"))) static inline __m256i lanes_below(int n) {
    const __m256i index = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), index);
}

/* Eight f16 values from at, of which the first len (1..8) exist (the others 0). */
__attribute__((target("avx2,fma,f16c"))) static inline __m128i load_halves(const void *at, int len) {
    if (len == 8) return _mm_loadu_si128(at);
    uint16_t h[8] = {0};
    memcpy(h, at, (size_t)len * sizeof h[0]);
    return _mm_loadu_si128((const void *)h);
}

/* Eight elements of B from (row, col), of which the first len (1..8) exist (the others 0). */
__attribute__((target("avx2,fma,f16c"))) static inline __m256 load8(const gemv *g, int64_t row, int64_t col, int len) {
    const void *at = b_at(g, row, col);
    if (g->b_f16) return _mm256_cvtph_ps(load_halves(at, len));
    if (len == 8) return _mm256_loadu_ps(at);
    return _mm256_maskload_ps(at, lanes_below(len));
}

/* One pass of `rows` (1..4) rows of B, from row p, over a strip's sums. Called with
 * constant counts for the common case, so that the vectors stay in registers. */
__attribute__((target("avx2,fma,f16c"), always_inline)) static inline void
kn_pass_avx2(const gemv *g, float *tile, int m, int rows, int64_t p, int64_t j0, int nv) {
    __m256 xv[CPU_GEMV_MAX_ROWS][4];
    for (int i = 0; i < m; i++)
        for (int r = 0; r < rows; r++) xv[i][r] = _mm256_set1_ps(g->x[i * g->k + p + r]);
    for (int j = 0; j < nv; j += 8) {
        const int len = nv - j < 8 ? nv - j : 8;
        __m256 bv[4];
        for (int r = 0; r < rows; r++) bv[r] = load8(g, p + r, j0 + j, len);
        for (int i = 0; i < m; i++) {
            float *t = tile + i * GEMV_STRIP_MAX + j;
            __m256 sum = _mm256_load_ps(t);
            for (int r = 0; r < rows; r++) sum = _mm256_fmadd_ps(xv[i][r], bv[r], sum);
            _mm256_store_ps(t, sum);
        }
    }
}

/* One row of C (decoding a token), a strip of nv (a multiple of 8) columns: KN_ONE_ROWS
 * rows of B per pass over the sums, each row a plain pointer, f16 or f32 as a constant. The
 * generic pass above recomputed every load's address from the gemv and kept its counters in
 * memory: decoding an f16 model ran at half the bandwidth a token's bytes allow. The terms
 * still reach each sum in the order of K, one fused multiply-add each, as in the pass above. */
#define KN_ONE_ROWS 8
__attribute__((target("avx2,fma,f16c"), always_inline)) static inline void
kn_one_pass(const gemv *g, float *tile, int rows, int f16, int64_t p, int64_t j0, int nv) {
    const size_t stride = (size_t)g->ldb * (f16 ? sizeof(uint16_t) : sizeof(float));
    const char *row[KN_ONE_ROWS];
    __m256 xv[KN_ONE_ROWS];
    for (int r = 0; r < rows; r++) row[r] = (const char *)b_at(g, p, j0) + r * stride, xv[r] = _mm256_set1_ps(g->x[p + r]);
    for (int j = 0; j < nv; j += 8) {
        __m256 sum = _mm256_load_ps(tile + j);
        for (int r = 0; r < rows; r++) {
            const __m256 b = f16 ? _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(row[r] + 2 * j)))
                                 : _mm256_loadu_ps((const float *)(const void *)row[r] + j);
            sum = _mm256_fmadd_ps(xv[r], b, sum);
        }
        _mm256_store_ps(tile + j, sum);
    }
}

/* A K block's rows from p to pe through PASS, KN_ONE_ROWS at a time, then one by one; F16 a
 * constant, so that each call is specialized. */
#define KN_ONE_BLOCK(PASS, F16)                                                                  \
    do {                                                                                         \
        for (; p + KN_ONE_ROWS <= pe; p += KN_ONE_ROWS) PASS(g, tile, KN_ONE_ROWS, F16, p, j0, nv); \
        for (; p < pe; p++) PASS(g, tile, 1, F16, p, j0, nv);                                    \
    } while (0)

/* kn_one_pass with 16 lanes (AVX-512): half the instructions for the same products, each
 * lane's sum the same as in 8 lanes. The eight rows read side by side are eight streams,
 * which the hardware prefetchers followed too late: each new cache line of a row fetches
 * the line two passes further down (f16 decoding of a SmolLM2-135M shape took 15.5 ms of
 * CPU per token without, 11.8 with; one pass ahead, 12.3). A prefetch past B's end is
 * harmless: it never faults. */
__attribute__((target("avx512f"), always_inline)) static inline void
kn_one_pass16(const gemv *g, float *tile, int rows, int f16, int64_t p, int64_t j0, int nv) {
    const size_t stride = (size_t)g->ldb * (f16 ? sizeof(uint16_t) : sizeof(float));
    const char *row[KN_ONE_ROWS];
    __m512 xv[KN_ONE_ROWS];
    for (int r = 0; r < rows; r++) row[r] = (const char *)b_at(g, p, j0) + r * stride, xv[r] = _mm512_set1_ps(g->x[p + r]);
    for (int j = 0; j < nv; j += 16) {
        __m512 sum = _mm512_loadu_ps(tile + j);
        if (!f16 || (j & 16)) /* 64 bytes of each row: a new line */
            for (int r = 0; r < rows; r++) _mm_prefetch(row[r] + 2 * KN_ONE_ROWS * stride + 2 * j, _MM_HINT_T0);
        for (int r = 0; r < rows; r++) {
            const __m512 b = f16 ? _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)(row[r] + 2 * j)))
                                 : _mm512_loadu_ps((const float *)(const void *)row[r] + j);
            sum = _mm512_fmadd_ps(xv[r], b, sum);
        }
        _mm512_storeu_ps(tile + j, sum);
    }
}

/* kn_one_pass16 for an f16 B, 32 columns per step: one whole cache line of each row per
 * step (its prefetch with it, no test), and two independent sums per step. */
__attribute__((target("avx512f"), always_inline)) static inline void
kn_one_pass32_f16(const gemv *g, float *tile, int rows, int f16, int64_t p, int64_t j0, int nv) {
    (void)f16;
    const size_t stride = (size_t)g->ldb * sizeof(uint16_t);
    const char *row[KN_ONE_ROWS];
    __m512 xv[KN_ONE_ROWS];
    for (int r = 0; r < rows; r++) row[r] = (const char *)b_at(g, p, j0) + r * stride, xv[r] = _mm512_set1_ps(g->x[p + r]);
    for (int j = 0; j < nv; j += 32) {
        __m512 lo = _mm512_loadu_ps(tile + j), hi = _mm512_loadu_ps(tile + j + 16);
        for (int r = 0; r < rows; r++) _mm_prefetch(row[r] + 2 * KN_ONE_ROWS * stride + 2 * j, _MM_HINT_T0);
        for (int r = 0; r < rows; r++) {
            const __m512i b = _mm512_loadu_si512((const void *)(row[r] + 2 * j));
            lo = _mm512_fmadd_ps(xv[r], _mm512_cvtph_ps(_mm512_castsi512_si256(b)), lo);
            hi = _mm512_fmadd_ps(xv[r], _mm512_cvtph_ps(_mm512_extracti64x4_epi64(b, 1)), hi);
        }
        _mm512_storeu_ps(tile + j, lo);
        _mm512_storeu_ps(tile + j + 16, hi);
    }
}

/* kn_one_block for nv a multiple of 16, on a CPU with AVX-512. */
__attribute__((target("avx512f"))) static void kn_one_block16(const gemv *g, float *tile, int64_t pc, int64_t pe,
                                                                int64_t j0, int nv) {
    int64_t p = pc;
    if (g->b_f16 && nv % 32 == 0) {
        KN_ONE_BLOCK(kn_one_pass32_f16, 1);
    } else if (g->b_f16) {
        KN_ONE_BLOCK(kn_one_pass16, 1);
    } else {
        KN_ONE_BLOCK(kn_one_pass16, 0);
    }
}

/* The rows [pc, pe) of one K block into the strip's sums, for one row of C. */
__attribute__((target("avx2,fma,f16c"))) static void kn_one_block(const gemv *g, float *tile, int64_t pc, int64_t pe,
                                                                   int64_t j0, int nv) {
    int64_t p = pc;
    if (g->avx512 && nv % 16 == 0) {
        kn_one_block16(g, tile, pc, pe, j0, nv);
        return;
    }
    if (g->b_f16) {
        KN_ONE_BLOCK(kn_one_pass, 1);
    } else {
        KN_ONE_BLOCK(kn_one_pass, 0);
    }
}

/* B stored k x n: one strip of C's columns. Four rows of B per pass over the strip's sums
 * (four streams for the prefetchers, a quarter of the sums' loads and stores), each sum
 * still taking its terms in the order of K; one row of C takes kn_one_block. */
__attribute__((target("avx2,fma,f16c"))) static void kn_task_avx2(const gemv *g, int64_t task) {
    const int m = g->m;
    const int64_t k = g->k, j0 = task * g->strip;
    const int nv = (int)min64(g->n - j0, g->strip);
    float tile[CPU_GEMV_MAX_ROWS * GEMV_STRIP_MAX] __attribute__((aligned(32)));
    for (int64_t pc = 0; pc < k; pc += CPU_GEMM_KC) {
        const int64_t pe = min64(k, pc + CPU_GEMM_KC);
        memset(tile, 0, sizeof(float) * (size_t)(m == 1 ? nv : m * GEMV_STRIP_MAX));
        if (m == 1 && nv % 8 == 0) {
            kn_one_block(g, tile, pc, pe, j0, nv);
        } else {
            for (int64_t p = pc; p < pe; p += 4) kn_pass_avx2(g, tile, m, (int)min64(4, pe - p), p, j0, nv);
        }
        gemv_fold(g, tile, GEMV_STRIP_MAX, j0, nv, pc == 0);
    }
}

/* An f16 B's rows [j, j + rows) x columns [p, p + len) as eight columns: col[q] lane l =
 * B[j + l][p + q] (0 beyond). The 8 x 8 transpose runs on the 16-bit values in 128-bit
 * registers, then each column widens once: a third of the shuffle work of widening the rows
 * and transposing floats in 256-bit registers. */
__attribute__((target("avx2,fma,f16c"), always_inline)) static inline void
load_columns_f16(const gemv *g, __m256 col[8], int64_t j, int rows, int64_t p, int len) {
    __m128i r[8];
#pragma GCC unroll 8
    for (int l = 0; l < 8; l++) r[l] = l < rows ? load_halves(b_at(g, j + l, p), len) : _mm_setzero_si128();
    __m128i t[8], u[8];
    for (int i = 0; i < 4; i++) { /* pairs of rows interleaved */
        t[2 * i] = _mm_unpacklo_epi16(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm_unpackhi_epi16(r[2 * i], r[2 * i + 1]);
    }
    for (int h = 0; h < 2; h++) { /* four rows, two columns per register */
        u[4 * h + 0] = _mm_unpacklo_epi32(t[4 * h + 0], t[4 * h + 2]);
        u[4 * h + 1] = _mm_unpackhi_epi32(t[4 * h + 0], t[4 * h + 2]);
        u[4 * h + 2] = _mm_unpacklo_epi32(t[4 * h + 1], t[4 * h + 3]);
        u[4 * h + 3] = _mm_unpackhi_epi32(t[4 * h + 1], t[4 * h + 3]);
    }
    for (int c = 0; c < 4; c++) { /* eight rows, one column per register */
        col[2 * c] = _mm256_cvtph_ps(_mm_unpacklo_epi64(u[c], u[c + 4]));
        col[2 * c + 1] = _mm256_cvtph_ps(_mm_unpackhi_epi64(u[c], u[c + 4]));
    }
}

/* Eight rows of B from j (of which `rows` exist), eight columns from p (of which `len`
 * exist), into acc: sums along each row, lane l for row j + l. */
__attribute__((target("avx2,fma,f16c"), always_inline)) static inline void
nk_block_avx2(const gemv *g, __m256 *acc, int acc_stride, int m, int64_t j, int rows, int64_t p, int len) {
    __m256 r[8]; /* r[q] lane l = B[j + l][p + q] */
    if (g->b_f16) {
        load_columns_f16(g, r, j, rows, p, len);
    } else {
#pragma GCC unroll 8
        for (int l = 0; l < 8; l++) r[l] = l < rows ? load8(g, j + l, p, len) : _mm256_setzero_ps();
        cpu_transpose8(r);
    }
    for (int q = 0; q < len; q++)
        for (int i = 0; i < m; i++)
            acc[i * acc_stride] = _mm256_fmadd_ps(_mm256_set1_ps(g->x[i * g->k + p + q]), r[q], acc[i * acc_stride]);
}

/* An f16 B's rows [j, j + 16) x columns [p, p + 8) as eight columns of 16 lanes: col[q]
 * lane l = B[j + l][p + q]. Rows j + l and j + 8 + l share a 256-bit register, so one 8 x 8
 * transpose of 16-bit values in 256-bit unpacks serves both halves (half the shuffles of
 * two 128-bit transposes), and each column then widens once to 16 floats. */
__attribute__((target("avx512f,avx2,fma,f16c"), always_inline)) static inline void
load_columns16_f16(const gemv *g, __m512 col[8], int64_t j, int64_t p) {
    const size_t stride = (size_t)g->ldb * sizeof(uint16_t);
    const char *at = b_at(g, j, p);
    __m256i r[8], t[8], u[8];
#pragma GCC unroll 8
    for (int l = 0; l < 8; l++)
        r[l] = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const void *)(at + l * stride))),
                                       _mm_loadu_si128((const void *)(at + (l + 8) * stride)), 1);
    for (int i = 0; i < 4; i++) { /* pairs of rows interleaved */
        t[2 * i] = _mm256_unpacklo_epi16(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_epi16(r[2 * i], r[2 * i + 1]);
    }
    for (int h = 0; h < 2; h++) { /* four rows, two columns per 128-bit lane */
        u[4 * h + 0] = _mm256_unpacklo_epi32(t[4 * h + 0], t[4 * h + 2]);
        u[4 * h + 1] = _mm256_unpackhi_epi32(t[4 * h + 0], t[4 * h + 2]);
        u[4 * h + 2] = _mm256_unpacklo_epi32(t[4 * h + 1], t[4 * h + 3]);
        u[4 * h + 3] = _mm256_unpackhi_epi32(t[4 * h + 1], t[4 * h + 3]);
    }
    for (int c = 0; c < 4; c++) { /* eight rows, one column per 128-bit lane */
        col[2 * c] = _mm512_cvtph_ps(_mm256_unpacklo_epi64(u[c], u[c + 4]));
        col[2 * c + 1] = _mm512_cvtph_ps(_mm256_unpackhi_epi64(u[c], u[c + 4]));
    }
}

/* Sixteen rows of B read along K together are sixteen streams inside one block of memory,
 * which the hardware prefetchers do not follow well (an f16 B streamed at half the speed
 * of an f32 B, element for element). So while the rows before `next` are read, the rows
 * from `next` on are fetched ahead, a share for each step p of eight along K. */
__attribute__((target("avx2,fma,f16c"), always_inline)) static inline void prefetch_rows(const gemv *g, int64_t next, int64_t rows,
                                                                                       int64_t p) {
    const int64_t bytes = rows * g->ldb * (g->b_f16 ? 2 : 4), share = bytes / ((g->k + 7) / 8);
    const char *from = (const char *)b_at(g, next, 0) + p / 8 * share;
    for (int64_t o = 0; o < share + 64; o += 64) _mm_prefetch(from + o, _MM_HINT_T0);
}

/* One row of C from an f16 B stored n x k (the tied output head), on a CPU with AVX-512:
 * NK16_SUMS groups of 16 rows at a time, each group's sums one 16-lane chain of fused
 * multiply-adds along K (lane l, row j + l; the order of K as in nk_task_avx2). With the
 * 8-lane path's two chains, each waiting on its previous add, the head read half the bytes
 * per second of the [in, out] matrices. Rows [j, end) with k a multiple of 8 and end - j a
 * multiple of 16 * NK16_SUMS; the rows after `j` are fetched ahead as in nk_task_avx2. */
#define NK16_SUMS 4
__attribute__((target("avx512f,avx2,fma,f16c"))) static void nk_rows16_f16(const gemv *g, int64_t j, int64_t end) {
    const int64_t k = g->k, rows = 16 * NK16_SUMS;
    float tile[16 * NK16_SUMS] __attribute__((aligned(64)));
    for (; j < end; j += rows) {
        for (int64_t pc = 0; pc < k; pc += CPU_GEMM_KC) {
            const int64_t pe = min64(k, pc + CPU_GEMM_KC);
            __m512 acc[NK16_SUMS];
            for (int s = 0; s < NK16_SUMS; s++) acc[s] = _mm512_setzero_ps();
            for (int64_t p = pc; p < pe; p += 8) {
                if (j + 2 * rows <= g->n) prefetch_rows(g, j + rows, rows, p);
                __m512 xb[8];
                for (int q = 0; q < 8; q++) xb[q] = _mm512_set1_ps(g->x[p + q]);
                for (int s = 0; s < NK16_SUMS; s++) {
                    __m512 col[8];
                    load_columns16_f16(g, col, j + 16 * s, p);
                    for (int q = 0; q < 8; q++) acc[s] = _mm512_fmadd_ps(xb[q], col[q], acc[s]);
                }
            }
            for (int s = 0; s < NK16_SUMS; s++) _mm512_store_ps(tile + 16 * s, acc[s]);
            gemv_fold(g, tile, (int)rows, j, (int)rows, pc == 0);
        }
    }
}

/* B stored n x k: GEMV_GROUP outputs, 16 rows of B at a time, read eight along K and
 * transposed so that lane l of a sum runs along its own row. The two groups of eight rows
 * are two independent chains of multiply-adds (one chain waits on every add; with four, the
 * 32 rows read at once were more streams than the prefetchers follow: 0.9x as fast). */
#define NK_GROUPS 2
_Static_assert(NK_GROUPS == 2, "nk_task_avx2's common case names its two sums");
__attribute__((target("avx2,fma,f16c"))) static void nk_task_avx2(const gemv *g, int64_t task) {
    const int m = g->m;
    const int64_t k = g->k, end = min64(g->n, (task + 1) * GEMV_GROUP);
    float tile[CPU_GEMV_MAX_ROWS * 8 * NK_GROUPS] __attribute__((aligned(32)));
    int64_t start = task * GEMV_GROUP;
    if (g->avx512 && m == 1 && g->b_f16 && k % 8 == 0) {
        const int64_t whole = (end - start) / (16 * NK16_SUMS) * (16 * NK16_SUMS);
        nk_rows16_f16(g, start, start + whole);
        start += whole;
    }
    for (int64_t j0 = start; j0 < end; j0 += 8 * NK_GROUPS) {
        const int rows = (int)min64(8 * NK_GROUPS, end - j0);
        for (int64_t pc = 0; pc < k; pc += CPU_GEMM_KC) {
            const int64_t pe = min64(k, pc + CPU_GEMM_KC);
            __m256 acc[CPU_GEMV_MAX_ROWS * NK_GROUPS];
            for (int i = 0; i < CPU_GEMV_MAX_ROWS * NK_GROUPS; i++) acc[i] = _mm256_setzero_ps();
            int64_t p = pc;
            if (m == 1 && rows == 8 * NK_GROUPS) { /* the common case, its sums in registers */
                __m256 sum0 = acc[0], sum1 = acc[1];
                for (; p + 8 <= pe; p += 8) {
                    if (j0 + 32 <= g->n) prefetch_rows(g, j0 + 16, 16, p); /* (the next task's rows too) */
                    nk_block_avx2(g, &sum0, 1, 1, j0, 8, p, 8);
                    nk_block_avx2(g, &sum1, 1, 1, j0 + 8, 8, p, 8);
                }
                acc[0] = sum0, acc[1] = sum1;
            }
            for (; p < pe; p += 8) {
                const int len = (int)min64(8, pe - p);
                for (int grp = 0; grp < NK_GROUPS && grp * 8 < rows; grp++)
                    nk_block_avx2(g, acc + grp, NK_GROUPS, m, j0 + grp * 8, rows - grp * 8 < 8 ? rows - grp * 8 : 8, p, len);
            }
            for (int i = 0; i < m * NK_GROUPS; i++) _mm256_store_ps(tile + i * 8, acc[i]);
            gemv_fold(g, tile, 8 * NK_GROUPS, j0, rows, pc == 0);
        }
    }
}

#endif /* CPU_GEMV_X86 */

/* ---- the driver ---- */

int cpu_gemv_applies(const kiln_gemm_args *a, const cpu_gemm_kernel *kn) {
    if (atomic_load(&g_gemv_off) || a->m > CPU_GEMV_MAX_ROWS || a->k <= 0 || a->c_dtype != KILN_F32) return 0;
    if (!kn->fused) return 1;
#ifdef CPU_GEMV_X86
    const kiln_cpu_features *cpu = kiln_cpu();
    return cpu->avx2 && cpu->fma && (a->b_dtype == KILN_F32 || cpu->f16c);
#else
    return 0; /* no fused kernel to match */
#endif
}

/* op(A)'s rows of batch entry at `base` into x (m x k, contiguous f32). */
static void gather_rows(const kiln_gemm_args *a, const char *base, float *x) {
    const int64_t m = a->m, k = a->k;
    const int f16 = a->a_dtype == KILN_F16;
    for (int64_t i = 0; i < m; i++) {
        if (!a->trans_a) { /* a row of A */
            const size_t at = (size_t)(i * a->lda);
            if (f16) kiln_f16_to_f32_n((const uint16_t *)(const void *)base + at, x + i * k, k);
            else memcpy(x + i * k, (const float *)(const void *)base + at, (size_t)k * sizeof(float));
            continue;
        }
        for (int64_t p = 0; p < k; p++) { /* a column of A */
            const size_t at = (size_t)(p * a->lda + i);
            x[i * k + p] = f16 ? kiln_f16_to_f32(((const uint16_t *)(const void *)base)[at])
                               : ((const float *)(const void *)base)[at];
        }
    }
}

kiln_status cpu_gemv(const kiln_gemm_args *a, const cpu_gemm_kernel *kn) {
    const int64_t m = a->m, n = a->n, k = a->k;
    float *x = malloc((size_t)(m * k) * sizeof *x);
    if (!x) return kiln_set_error(KILN_ERR_MEMORY, "cpu gemm: out of memory for %lld floats of rows", (long long)(m * k));
    int nt = cpu_max_threads();
    if (m * n * k < GEMV_PAR_MIN || (nt > 1 && cpu_threads_contended())) nt = 1;
    /* strips of at most GEMV_STRIP_MAX columns, as many as a multiple of the threads; one
     * row of C in the fused kernels' path fills the whole tile, all its rows' sums: one strip
     * then reads B from end to end, in order */
    const int64_t strip_max = m == 1 && kn->fused ? CPU_GEMV_MAX_ROWS * GEMV_STRIP_MAX : GEMV_STRIP_MAX;
    int64_t strips = (n + strip_max - 1) / strip_max;
    strips = (strips + nt - 1) / nt * nt;
    gemv g = {
        .x = x,
        .b_f16 = a->b_dtype == KILN_F16,
        .ldb = a->ldb,
        .ldc = a->ldc,
        .bias = CPU_HAS(a->bias) ? CPU_PTR(a->bias, float) : NULL,
        .m = (int)m,
        .n = n,
        .k = k,
        .strip = kiln_round_up((n + strips - 1) / strips, 8),
        .alpha = a->alpha,
        .beta = a->beta,
    };
    const int64_t tasks = a->trans_b ? (n + GEMV_GROUP - 1) / GEMV_GROUP : (n + g.strip - 1) / g.strip;
    gemv_task_fn task = a->trans_b ? nk_task_generic : kn_task_generic;
#ifdef CPU_GEMV_X86
    if (kn->fused) task = a->trans_b ? nk_task_avx2 : kn_task_avx2;
    g.avx512 = kiln_cpu()->avx512f;
#else
    (void)kn; /* only the generic kernel elsewhere */
#endif
    const size_t a_size = kiln_dtype_size(a->a_dtype), b_size = kiln_dtype_size(a->b_dtype);
    for (int64_t b = 0; b < a->batch; b++) {
        gather_rows(a, CPU_PTR(a->a, char) + (size_t)(b * a->stride_a) * a_size, x);
        g.b = CPU_PTR(a->b, char) + (size_t)(b * a->stride_b) * b_size;
        g.c = CPU_PTR(a->c, float) + b * a->stride_c;
        if (nt == 1) {
            for (int64_t t = 0; t < tasks; t++) task(&g, t);
            continue;
        }
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1)
        for (int64_t t = 0; t < tasks; t++) task(&g, t);
    }
    free(x);
    return KILN_OK;
}
