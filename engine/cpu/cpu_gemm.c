/* The CPU GEMM: C = alpha op(A) op(B) + beta C (+ bias), batched (kiln_gemm_args).
 *
 * The classic Goto/BLIS structure around a register-blocked micro-kernel
 * (cpu_gemm_kernels.c):
 *
 *   for jc over N in blocks of NC            B block: KC x NC, packed once, shared by threads
 *     for pc over K in blocks of KC
 *       pack op(B)[pc:+KC, jc:+NC] into NR-column panels
 *       for each (row block ic, column range) task of this thread
 *         pack op(A)[ic:+MC, pc:+KC] into MR-row panels     (private, stays in L2)
 *         for jr over the range's NR panels                (one B panel stays in L1 ...)
 *           for ir over the block's MR panels              (... while A panels stream by)
 *             micro-kernel: an MR x NR tile of C
 *
 * Packing converts f16 to f32 and resolves both transposes, so the micro-kernels see one
 * layout. The first K block applies beta and the bias; beta == 0 never reads C.
 *
 * Threads: a GEMM large enough is split into tasks over row blocks (and column ranges when
 * there are too few row blocks to keep every thread busy); a batch of small GEMMs instead
 * gives whole GEMMs to threads. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "cpu/cpu_gemm.h"

/* Block sizes (floats). KC x NR floats of B (32 KiB for NR = 32) stay in L1 while MC x KC
 * of A (about 144 KiB) stays in L2; NC bounds the shared B block. */
#define GEMM_KC 256
#define GEMM_MC 144
#define GEMM_NC 2048
/* Below this many multiply-adds a GEMM runs on one thread: forking costs more. */
#define GEMM_PAR_MIN ((int64_t)1 << 17)
/* Batched GEMMs smaller than this (multiply-adds each) are spread over threads whole. */
#define GEMM_BATCH_PAR_MAX ((int64_t)1 << 22)

typedef struct gemm_operand {
    const char *base;
    kiln_dtype dtype;
    int64_t ld;
    int trans;
} gemm_operand;

/* One GEMM of the batch, with its block sizes. */
typedef struct gemm_plan {
    const cpu_gemm_kernel *kn;
    gemm_operand a, b;
    float *c;
    int64_t ldc;
    const float *bias;
    int64_t m, n, k;
    int64_t mc, kc, nc;
    float alpha, beta;
} gemm_plan;

static inline float load_elem(const gemm_operand *o, int64_t idx) {
    if (o->dtype == KILN_F16) return kiln_f16_to_f32(((const uint16_t *)(const void *)o->base)[idx]);
    return ((const float *)(const void *)o->base)[idx];
}

/* Rows [i0, i0 + rows) x [p0, p0 + kc) of op(A) into MR-row panels. Missing rows of the
 * last panel are zero: their results are never stored, but stale memory could hold
 * denormals, which would slow the micro-kernel down. */
static void pack_a(float *dst, const gemm_operand *A, int64_t i0, int64_t rows, int64_t p0,
                   int64_t kc, int mr) {
    for (int64_t r0 = 0; r0 < rows; r0 += mr, dst += (int64_t)mr * kc) {
        int mv = rows - r0 < mr ? (int)(rows - r0) : mr;
        if (mv < mr)
            for (int64_t p = 0; p < kc; p++)
                for (int i = mv; i < mr; i++) dst[p * mr + i] = 0.0f;
        if (A->trans) { /* op(A)(i, p) = A[p, i]: rows of the panel are contiguous */
            for (int64_t p = 0; p < kc; p++) {
                int64_t src = (p0 + p) * A->ld + i0 + r0;
                for (int i = 0; i < mv; i++) dst[p * mr + i] = load_elem(A, src + i);
            }
        } else {
            for (int i = 0; i < mv; i++) {
                int64_t src = (i0 + r0 + i) * A->ld + p0;
                for (int64_t p = 0; p < kc; p++) dst[p * mr + i] = load_elem(A, src + p);
            }
        }
    }
}

/* Columns [j0, j0 + nv) x rows [p0, p0 + kc) of op(B) into one NR-column panel. */
static void pack_b_panel(float *dst, const gemm_operand *B, int64_t p0, int64_t kc, int64_t j0,
                         int nv, int nr) {
    if (nv < nr)
        for (int64_t p = 0; p < kc; p++)
            for (int j = nv; j < nr; j++) dst[p * nr + j] = 0.0f;
    if (B->trans) { /* op(B)(p, j) = B[j, p] */
        for (int j = 0; j < nv; j++) {
            int64_t src = (j0 + j) * B->ld + p0;
            for (int64_t p = 0; p < kc; p++) dst[p * nr + j] = load_elem(B, src + p);
        }
    } else if (B->dtype == KILN_F32) {
        const float *src = (const float *)(const void *)B->base + p0 * B->ld + j0;
        for (int64_t p = 0; p < kc; p++) memcpy(dst + p * nr, src + p * B->ld, (size_t)nv * sizeof(float));
    } else {
        for (int64_t p = 0; p < kc; p++) {
            int64_t src = (p0 + p) * B->ld + j0;
            for (int j = 0; j < nv; j++) dst[p * nr + j] = load_elem(B, src + j);
        }
    }
}

/* K == 0: C = beta C + bias (rows split over the cooperating threads). */
static void gemm_empty_k(const gemm_plan *g, int tid, int nt) {
    cpu_gemm_epilogue e = {g->alpha, g->beta, g->bias, 1};
    const float zero[1] = {0};
    for (int64_t i = tid; i < g->m; i += nt)
        for (int64_t j = 0; j < g->n; j++) {
            e.bias = g->bias ? g->bias + j : NULL;
            cpu_gemm_store_tile(zero, 1, g->c + i * g->ldc + j, g->ldc, 1, 1, &e);
        }
}

/* Runs one GEMM as thread `tid` of `nt` threads that all call it (nt == 1: alone).
 * bpack is shared by the nt threads, apack is this thread's. */
static void gemm_run(const gemm_plan *g, int tid, int nt, float *bpack, float *apack) {
    const cpu_gemm_kernel *kn = g->kn;
    const int mr = kn->mr, nr = kn->nr;
    if (g->k == 0) {
        gemm_empty_k(g, tid, nt);
        return;
    }
    const int64_t n_ic = (g->m + g->mc - 1) / g->mc;
    for (int64_t jc = 0; jc < g->n; jc += g->nc) {
        const int64_t nb = g->n - jc < g->nc ? g->n - jc : g->nc;
        const int64_t n_panels = (nb + nr - 1) / nr;
        /* When the row blocks do not divide evenly among the threads, cut the columns too. */
        const int64_t n_js = n_ic % nt == 0 ? 1 : (nt < n_panels ? nt : n_panels);
        const int64_t tasks = n_ic * n_js;
        for (int64_t pc = 0; pc < g->k; pc += g->kc) {
            const int64_t kb = g->k - pc < g->kc ? g->k - pc : g->kc;
            for (int64_t q = tid; q < n_panels; q += nt) {
                int64_t j0 = jc + q * nr;
                pack_b_panel(bpack + q * nr * kb, &g->b, pc, kb, j0, g->n - j0 < nr ? (int)(g->n - j0) : nr, nr);
            }
            if (nt > 1) {
#pragma omp barrier
            }
            int64_t packed_ic = -1;
            for (int64_t t = tid * tasks / nt; t < (tid + 1) * tasks / nt; t++) {
                const int64_t ic_idx = t / n_js, js = t % n_js;
                const int64_t ic = ic_idx * g->mc, mb = g->m - ic < g->mc ? g->m - ic : g->mc;
                if (ic_idx != packed_ic) {
                    pack_a(apack, &g->a, ic, mb, pc, kb, mr);
                    packed_ic = ic_idx;
                }
                cpu_gemm_epilogue e = {g->alpha, g->beta, NULL, pc == 0};
                for (int64_t q = js * n_panels / n_js; q < (js + 1) * n_panels / n_js; q++) {
                    const int64_t j = jc + q * nr;
                    const int nv = g->n - j < nr ? (int)(g->n - j) : nr;
                    e.bias = g->bias ? g->bias + j : NULL;
                    const float *bp = bpack + q * nr * kb;
                    for (int64_t r = 0; r < mb; r += mr)
                        kn->run(kb, apack + r * kb, bp, g->c + (ic + r) * g->ldc + j, g->ldc,
                                mb - r < mr ? (int)(mb - r) : mr, nv, &e);
                }
            }
            if (nt > 1) { /* nobody repacks B while another thread still reads it */
#pragma omp barrier
            }
        }
    }
}

/* ---- the kernel in use ---- */

static _Atomic(const cpu_gemm_kernel *) g_kernel;

const cpu_gemm_kernel *cpu_gemm_active_kernel(void) {
    const cpu_gemm_kernel *k = atomic_load(&g_kernel);
    if (k) return k;
    const cpu_gemm_kernel *list[CPU_GEMM_MAX_KERNELS];
    int n = cpu_gemm_kernels(list, CPU_GEMM_MAX_KERNELS);
    k = list[0];
    const char *want = getenv("KILN_CPU_GEMM_KERNEL"); /* for benchmarks and debugging */
    for (int i = 0; want && i < n; i++)
        if (!strcmp(list[i]->name, want)) k = list[i];
    atomic_store(&g_kernel, k);
    return k;
}

int cpu_gemm_use_kernel(const char *name) {
    const cpu_gemm_kernel *list[CPU_GEMM_MAX_KERNELS];
    int n = cpu_gemm_kernels(list, CPU_GEMM_MAX_KERNELS);
    for (int i = 0; i < n; i++)
        if (!strcmp(list[i]->name, name)) {
            atomic_store(&g_kernel, list[i]);
            return 1;
        }
    return 0;
}

/* ---- the entry point ---- */

static int max_threads(void) {
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

static int thread_id(void) {
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}

static int team_size(void) {
#ifdef _OPENMP
    return omp_get_num_threads();
#else
    return 1;
#endif
}

static int64_t round_up(int64_t x, int64_t to) { return (x + to - 1) / to * to; }

/* The plan of batch entry b. */
static gemm_plan plan_of(const gemm_plan *base, const kiln_gemm_args *a, int64_t b) {
    gemm_plan g = *base;
    g.a.base += (size_t)(b * a->stride_a) * kiln_dtype_size(a->a_dtype);
    g.b.base += (size_t)(b * a->stride_b) * kiln_dtype_size(a->b_dtype);
    g.c += b * a->stride_c;
    return g;
}

kiln_status cpu_gemm(void *dev, const kiln_gemm_args *a) {
    (void)dev;
    if (a->c_dtype != KILN_F32) return kiln_set_error(KILN_ERR_DTYPE, "cpu gemm: output must be f32");
    if ((a->a_dtype != KILN_F32 && a->a_dtype != KILN_F16) || (a->b_dtype != KILN_F32 && a->b_dtype != KILN_F16))
        return kiln_set_error(KILN_ERR_DTYPE, "cpu gemm: inputs must be f32 or f16, got %s and %s",
                              kiln_dtype_name(a->a_dtype), kiln_dtype_name(a->b_dtype));
    if (a->m <= 0 || a->n <= 0 || a->batch <= 0) return KILN_OK;
    const cpu_gemm_kernel *kn = cpu_gemm_active_kernel();
    const int64_t m = a->m, n = a->n, k = a->k;

    gemm_plan base = {kn,
                      {CPU_PTR(a->a, char), a->a_dtype, a->lda, a->trans_a},
                      {CPU_PTR(a->b, char), a->b_dtype, a->ldb, a->trans_b},
                      CPU_PTR(a->c, float), a->ldc,
                      CPU_HAS(a->bias) ? CPU_PTR(a->bias, float) : NULL,
                      m, n, k, 0, 0, 0, a->alpha, a->beta};
    /* even row blocks of about GEMM_MC rows, whole MR panels */
    int64_t n_ic = (m + GEMM_MC - 1) / GEMM_MC;
    base.mc = round_up((m + n_ic - 1) / n_ic, kn->mr);
    base.kc = k < GEMM_KC ? (k > 0 ? k : 1) : GEMM_KC;
    base.nc = n < GEMM_NC ? round_up(n, kn->nr) : GEMM_NC;

    const int64_t work = m * n * (k > 0 ? k : 1);
    int nt = max_threads();
    if (work * a->batch < GEMM_PAR_MIN) nt = 1;
    /* whole GEMMs per thread when there are enough small ones whose outputs do not overlap */
    const int by_batch = nt > 1 && a->batch >= nt && work < GEMM_BATCH_PAR_MAX &&
                         a->stride_c >= (m - 1) * a->ldc + n;
    const int n_bpacks = by_batch ? nt : 1;
    const size_t bpack_floats = (size_t)(base.kc * base.nc);
    const size_t apack_floats = (size_t)(base.kc * base.mc);
    size_t bytes = ((size_t)n_bpacks * bpack_floats + (size_t)nt * apack_floats) * sizeof(float);
    float *buf = aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!buf) return kiln_set_error(KILN_ERR_MEMORY, "cpu gemm: out of memory for %zu bytes of packing buffers", bytes);
    float *apacks = buf + (size_t)n_bpacks * bpack_floats;

    if (nt == 1) {
        for (int64_t b = 0; b < a->batch; b++) {
            gemm_plan g = plan_of(&base, a, b);
            gemm_run(&g, 0, 1, buf, apacks);
        }
    } else if (by_batch) {
#pragma omp parallel num_threads(nt)
        {
            int tid = thread_id();
#pragma omp for schedule(dynamic)
            for (int64_t b = 0; b < a->batch; b++) {
                gemm_plan g = plan_of(&base, a, b);
                gemm_run(&g, 0, 1, buf + (size_t)tid * bpack_floats, apacks + (size_t)tid * apack_floats);
            }
        }
    } else {
#pragma omp parallel num_threads(nt)
        {
            int tid = thread_id(), team = team_size();
            for (int64_t b = 0; b < a->batch; b++) {
                gemm_plan g = plan_of(&base, a, b);
                gemm_run(&g, tid, team, buf, apacks + (size_t)tid * apack_floats);
            }
        }
    }
    free(buf);
    return KILN_OK;
}
