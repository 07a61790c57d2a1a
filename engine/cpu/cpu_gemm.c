/* The CPU GEMM: C = alpha op(A) op(B) + beta C (+ bias), batched (kiln_gemm_args).
 *
 * The Goto/BLIS structure around a register-blocked micro-kernel (cpu_gemm_kernels.c):
 *
 *   for each chunk of rows (i0) and columns (jc) of C     (usually the whole of C)
 *     pack op(A)[i0 rows, all K] into MR-row panels and op(B)[all K, jc columns] into
 *       NR-column panels, in f32, shared by the threads
 *     for each task (a block of MC rows x a range of B panels):
 *       for pc over K in blocks of KC
 *         for each B panel of the range                   (its KC x NR slice stays in L1 ...)
 *           for each MR-row panel of the block            (... while the A slices stream by
 *             micro-kernel: an MR x NR tile of C            from L2, where MC x KC fits)
 *
 * Packing converts f16 to f32 and resolves both transposes, so the micro-kernels see one
 * layout. The first K block applies beta and the bias; beta == 0 never reads C. An f16 C
 * is computed into an f32 copy and rounded once at the end (gemm_f16_output).
 *
 * Threads. Two cores shared with other processes is the common case here, and waiting at
 * a barrier for a partner thread that the OS has preempted costs a whole time slice: with
 * libgomp's spinning barriers at every K block, a 512^3 GEMM ran 10x slower under load.
 * So inside the OpenMP region there is no barrier: panels and tasks are numbered work
 * items taken from an atomic ticket, each waits only until the items it depends on have
 * completed (see the team below), and packing all of K at once keeps those dependencies
 * to two per chunk. A batch of small GEMMs instead gives whole GEMMs to threads. */
#define _POSIX_C_SOURCE 200809L /* sched_yield, clock_gettime */
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "cpu/cpu_gemm.h"

/* Block sizes, in floats: with CPU_GEMM_KC (cpu_gemm.h), an MC x KC block of A (about
 * 144 KiB) stays in L2. */
#define GEMM_MC 144
/* The most floats one operand's pack may hold (16 MiB): beyond, C is done in chunks. */
#define GEMM_PACK_MAX ((int64_t)1 << 22)
/* Below this many multiply-adds (about 10 us on one core) a GEMM runs on one thread: an
 * OpenMP fork and join cost a few microseconds even on an idle machine. */
#define GEMM_PAR_MIN ((int64_t)1 << 20)
/* Batched GEMMs smaller than this (multiply-adds each) are spread over threads whole. */
#define GEMM_BATCH_PAR_MAX ((int64_t)1 << 22)

/* One GEMM of the batch, with its block sizes. */
typedef struct gemm_plan {
    const cpu_gemm_kernel *kn;
    cpu_gemm_operand a, b;
    float *c;
    int64_t ldc;
    const float *bias;
    int64_t m, n, k;
    int64_t mb, nb; /* rows and columns of C per chunk (what one pair of packs covers) */
    int64_t mc, kc; /* rows per task, K per micro-kernel call */
    float alpha, beta;
} gemm_plan;

/* ---- the team: work items handed out by ticket, ordered by a completion count ----
 *
 * A GEMM is a sequence of phases (per chunk of C: pack its panels, then run its tasks).
 * Every item of every phase has a number, in order; threads take numbers from one atomic
 * ticket, and an item may start once every item before its phase has completed. Nobody
 * waits for a thread that has taken nothing: a helper thread the OS has not scheduled yet
 * simply finds fewer items left when it arrives. Only items in flight are waited for. */

typedef struct gemm_team {
    _Atomic int64_t ticket;       /* the next item to hand out */
    _Atomic int64_t done;         /* items completed */
    _Atomic int64_t last_done_ns; /* when the latest item completed (see gemm_contended) */
} gemm_team;

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline void cpu_pause(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static inline int64_t team_take(gemm_team *t) {
    return atomic_fetch_add_explicit(&t->ticket, 1, memory_order_relaxed);
}

/* Waits until items [0, count) have completed; their writes are then visible. */
static void team_wait(gemm_team *t, int64_t count) {
    /* an item in flight on a running thread completes within microseconds; one on a
     * preempted thread needs a core, which sched_yield offers it */
    for (int spin = 0; atomic_load_explicit(&t->done, memory_order_acquire) < count; spin++) {
        if (spin < 256)
            cpu_pause();
        else
            sched_yield();
    }
}

static inline void team_done(gemm_team *t) {
    atomic_store_explicit(&t->last_done_ns, now_ns(), memory_order_relaxed);
    atomic_fetch_add_explicit(&t->done, 1, memory_order_release);
}

/* ---- backing off when the machine is oversubscribed ----
 * An OpenMP region ends with a join: the calling thread waits until every thread of the
 * team has arrived, including one the OS has not even started yet, which on a loaded
 * machine takes a scheduler period (~20 ms) even when the caller did all the work itself.
 * With other processes busy, that made a 256^3 GEMM 100x slower than on one thread. So
 * the time from the last completed item to the end of the region is watched; when it is
 * that long three times in a row, GEMMs run on the calling thread alone for a while
 * (100 ms, doubling while the condition persists, up to 2 s), then threads are tried
 * again. Fewer slow joins are forgiven: after an idle spell the first regions pay for
 * waking the helper thread (on this VM a halted virtual CPU takes a few milliseconds to
 * come back), which says nothing about the regions after them. */
#define GEMM_JOIN_SLOW_NS ((int64_t)2000000)
#define GEMM_SLOW_JOINS 3
#define GEMM_BACKOFF_MIN_NS ((int64_t)100000000)
#define GEMM_BACKOFF_MAX_NS ((int64_t)2000000000)

static _Atomic int64_t g_serial_until_ns; /* single-threaded until this time */
static _Atomic int64_t g_backoff_ns;      /* the length of the last backoff, 0 when healthy */
static _Atomic int g_slow_joins;          /* consecutive slow joins */
static _Atomic int g_backoff_off;         /* tests turn the backoff off */

int cpu_threads_contended(void) { return now_ns() < atomic_load(&g_serial_until_ns); }

void cpu_gemm_set_backoff(int enabled) {
    atomic_store(&g_backoff_off, !enabled);
    if (!enabled) atomic_store(&g_serial_until_ns, 0);
}

/* Called after a parallel region with the time its last work item completed. */
static void gemm_note_join(int64_t last_done_ns) {
    int64_t now = now_ns();
    if (now - last_done_ns < GEMM_JOIN_SLOW_NS || atomic_load(&g_backoff_off)) {
        atomic_store(&g_backoff_ns, 0);
        atomic_store(&g_slow_joins, 0);
        return;
    }
    if (atomic_fetch_add(&g_slow_joins, 1) + 1 < GEMM_SLOW_JOINS) return;
    atomic_store(&g_slow_joins, 0); /* the next backoff needs fresh evidence */
    int64_t b = atomic_load(&g_backoff_ns);
    b = b == 0 ? GEMM_BACKOFF_MIN_NS : (2 * b < GEMM_BACKOFF_MAX_NS ? 2 * b : GEMM_BACKOFF_MAX_NS);
    atomic_store(&g_backoff_ns, b);
    atomic_store(&g_serial_until_ns, now + b);
}

/* ---- packing ---- */

/* Transposing packs move this many values of K per pass: the panel rows they write (at
 * most 32 x 32 floats) stay in L1 until they are complete. */
#define PACK_STEP 32

/* f16 panels: runs of f16 are widened with the vector conversions (kiln_f16_to_f32_n), the
 * transposing packs through a small f32 block and the kernel's fast f32 pack, so an f16
 * GEMM pays little more than the f32 one. PACK_F16_STEP values of K per block: at most
 * 32 x 128 floats (16 KiB) on the stack. */
#define PACK_F16_STEP 128

static inline const uint16_t *f16_base(const cpu_gemm_operand *o) {
    return (const uint16_t *)(const void *)o->base;
}

/* A full panel of f16 op(A) rows [i0, i0 + MR) x [p0, p0 + kc): true when done here. */
static int pack_a_panel_f16(float *dst, const cpu_gemm_operand *A, int64_t i0, int64_t p0, int64_t kc,
                            const cpu_gemm_kernel *kn) {
    const int mr = kn->mr;
    const uint16_t *src = f16_base(A);
    if (A->trans) { /* op(A)(i, p) = A[p, i]: each panel row is a contiguous run of A */
        for (int64_t p = 0; p < kc; p++) kiln_f16_to_f32_n(src + (p0 + p) * A->ld + i0, dst + p * mr, mr);
        return 1;
    }
    if (!kn->pack_a) return 0;
    float block[32 * PACK_F16_STEP];
    for (int64_t pb = 0; pb < kc; pb += PACK_F16_STEP) {
        const int64_t len = kc - pb < PACK_F16_STEP ? kc - pb : PACK_F16_STEP;
        for (int i = 0; i < mr; i++) kiln_f16_to_f32_n(src + (i0 + i) * A->ld + p0 + pb, block + i * len, len);
        kn->pack_a(dst + pb * mr, block, len, len);
    }
    return 1;
}

/* A full panel of f16 op(B) columns [j0, j0 + NR) x rows [p0, p0 + kc): true when done here. */
static int pack_b_panel_f16(float *dst, const cpu_gemm_operand *B, int64_t p0, int64_t kc, int64_t j0,
                            const cpu_gemm_kernel *kn) {
    const int nr = kn->nr;
    const uint16_t *src = f16_base(B);
    if (!B->trans) { /* each panel row is a contiguous run of B */
        for (int64_t p = 0; p < kc; p++) kiln_f16_to_f32_n(src + (p0 + p) * B->ld + j0, dst + p * nr, nr);
        return 1;
    }
    if (!kn->pack_bt) return 0;
    float block[32 * PACK_F16_STEP];
    for (int64_t pb = 0; pb < kc; pb += PACK_F16_STEP) {
        const int64_t len = kc - pb < PACK_F16_STEP ? kc - pb : PACK_F16_STEP;
        for (int j = 0; j < nr; j++) kiln_f16_to_f32_n(src + (j0 + j) * B->ld + p0 + pb, block + j * len, len);
        kn->pack_bt(dst + pb * nr, block, len, len);
    }
    return 1;
}

static inline float load_elem(const cpu_gemm_operand *o, int64_t idx) {
    if (o->dtype == KILN_F16) return kiln_f16_to_f32(((const uint16_t *)(const void *)o->base)[idx]);
    return ((const float *)(const void *)o->base)[idx];
}

/* Rows [i0, i0 + mv) x [p0, p0 + kc) of op(A) into one MR-row panel. Rows past mv are
 * zero: their results are never stored, but stale memory could hold denormals, which
 * would slow the micro-kernel down. */
void cpu_gemm_pack_a_panel(float *dst, const cpu_gemm_operand *A, int64_t i0, int mv, int64_t p0, int64_t kc,
                           const cpu_gemm_kernel *kn) {
    const int mr = kn->mr;
    if (mv == mr && A->dtype == KILN_F16 && mr <= 32 && pack_a_panel_f16(dst, A, i0, p0, kc, kn)) return;
    if (mv == mr && A->dtype == KILN_F32) {
        const float *src = (const float *)(const void *)A->base;
        if (!A->trans && kn->pack_a) {
            kn->pack_a(dst, src + i0 * A->ld + p0, A->ld, kc);
            return;
        }
        if (A->trans && kn->pack_at) {
            kn->pack_at(dst, src + p0 * A->ld + i0, A->ld, kc);
            return;
        }
    }
    if (mv < mr)
        for (int64_t p = 0; p < kc; p++)
            for (int i = mv; i < mr; i++) dst[p * mr + i] = 0.0f;
    if (A->trans) { /* op(A)(i, p) = A[p, i]: the panel's rows are contiguous in memory */
        for (int64_t p = 0; p < kc; p++) {
            int64_t src = (p0 + p) * A->ld + i0;
            for (int i = 0; i < mv; i++) dst[p * mr + i] = load_elem(A, src + i);
        }
    } else { /* a transpose, PACK_STEP values of K at a time so the writes stay in L1 */
        for (int64_t pb = 0; pb < kc; pb += PACK_STEP) {
            const int64_t pe = kc - pb < PACK_STEP ? kc : pb + PACK_STEP;
            for (int i = 0; i < mv; i++) {
                int64_t src = (i0 + i) * A->ld + p0;
                for (int64_t p = pb; p < pe; p++) dst[p * mr + i] = load_elem(A, src + p);
            }
        }
    }
}

/* Columns [j0, j0 + nv) x rows [p0, p0 + kc) of op(B) into one NR-column panel. */
void cpu_gemm_pack_b_panel(float *dst, const cpu_gemm_operand *B, int64_t p0, int64_t kc, int64_t j0, int nv,
                           const cpu_gemm_kernel *kn) {
    const int nr = kn->nr;
    if (nv == nr && B->dtype == KILN_F16 && nr <= 32 && pack_b_panel_f16(dst, B, p0, kc, j0, kn)) return;
    if (nv == nr && B->dtype == KILN_F32) {
        const float *src = (const float *)(const void *)B->base;
        if (B->trans && kn->pack_bt) {
            kn->pack_bt(dst, src + j0 * B->ld + p0, B->ld, kc);
            return;
        }
        if (!B->trans && kn->pack_b) {
            kn->pack_b(dst, src + p0 * B->ld + j0, B->ld, kc);
            return;
        }
    }
    if (nv < nr)
        for (int64_t p = 0; p < kc; p++)
            for (int j = nv; j < nr; j++) dst[p * nr + j] = 0.0f;
    if (B->trans) { /* op(B)(p, j) = B[j, p]: a transpose, PACK_STEP values of K at a time */
        for (int64_t pb = 0; pb < kc; pb += PACK_STEP) {
            const int64_t pe = kc - pb < PACK_STEP ? kc : pb + PACK_STEP;
            for (int j = 0; j < nv; j++) {
                int64_t src = (j0 + j) * B->ld + p0;
                for (int64_t p = pb; p < pe; p++) dst[p * nr + j] = load_elem(B, src + p);
            }
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

/* K == 0: C = beta C + bias. */
static void gemm_empty_k(const gemm_plan *g) {
    cpu_gemm_epilogue e = {.alpha = g->alpha, .beta = g->beta, .bias = g->bias, .first = 1};
    const float zero[1] = {0};
    for (int64_t i = 0; i < g->m; i++)
        for (int64_t j = 0; j < g->n; j++) {
            e.bias = g->bias ? g->bias + j : NULL;
            cpu_gemm_store_tile(zero, 1, g->c + i * g->ldc + j, g->ldc, 1, 1, &e);
        }
}

/* One chunk of C: rows [i0, i0 + rows), columns [jc, jc + b_panels * NR) clipped to N.
 * Its tasks are row blocks of MC rows x n_js ranges of B panels. */
typedef struct gemm_chunk {
    int64_t i0, rows, jc, b_panels, n_js;
} gemm_chunk;

/* Packs panel q of a chunk over all of K: the B panels first, then the A panels. */
static void pack_panel(const gemm_plan *g, const gemm_chunk *ch, float *bpack, float *apack,
                       int64_t q) {
    const int mr = g->kn->mr, nr = g->kn->nr;
    if (q < ch->b_panels) {
        const int64_t j0 = ch->jc + q * nr;
        cpu_gemm_pack_b_panel(bpack + q * nr * g->k, &g->b, 0, g->k, j0, g->n - j0 < nr ? (int)(g->n - j0) : nr, g->kn);
    } else {
        const int64_t r0 = (q - ch->b_panels) * mr;
        cpu_gemm_pack_a_panel(apack + r0 * g->k, &g->a, ch->i0 + r0, ch->rows - r0 < mr ? (int)(ch->rows - r0) : mr,
                     0, g->k, g->kn);
    }
}

/* Task t of a chunk: one block of rows against one range of B panels, all of K. */
static void gemm_task(const gemm_plan *g, const gemm_chunk *ch, const float *apack,
                      const float *bpack, int64_t t) {
    const cpu_gemm_kernel *kn = g->kn;
    const int mr = kn->mr, nr = kn->nr;
    const int64_t k = g->k;
    const int64_t r0 = t / ch->n_js * g->mc, js = t % ch->n_js;
    const int64_t mb = ch->rows - r0 < g->mc ? ch->rows - r0 : g->mc;
    const int64_t q0 = js * ch->b_panels / ch->n_js, q1 = (js + 1) * ch->b_panels / ch->n_js;
    float *c = g->c + (ch->i0 + r0) * g->ldc;
    for (int64_t pc = 0; pc < k; pc += g->kc) {
        const int64_t kb = k - pc < g->kc ? k - pc : g->kc;
        cpu_gemm_epilogue e = {.alpha = g->alpha, .beta = g->beta, .bias = NULL, .first = pc == 0};
        for (int64_t q = q0; q < q1; q++) { /* this B slice stays in L1 ... */
            const int64_t j = ch->jc + q * nr;
            const int nv = g->n - j < nr ? (int)(g->n - j) : nr;
            e.bias = g->bias ? g->bias + j : NULL;
            const float *bp = bpack + q * nr * k + pc * nr;
            for (int64_t r = 0; r < mb; r += mr) /* ... while the A slices stream past it */
                kn->run(kb, apack + (r0 + r) * k + pc * mr, bp, c + r * g->ldc + j, g->ldc,
                        mb - r < mr ? (int)(mb - r) : mr, nv, &e);
        }
    }
}

/* Works on one GEMM as one of the threads of `team` (planned for nt threads; alone when
 * nt == 1). The GEMMs of a batch continue one numbering of items: this GEMM's items start
 * at *base, which advances past them, and *item is the ticket the thread holds (take the
 * first with team_take before the first GEMM). The packs are shared by the team. */
static void gemm_run(const gemm_plan *g, gemm_team *team, int nt, int64_t *base_io,
                     int64_t *item_io, float *bpack, float *apack) {
    const int mr = g->kn->mr, nr = g->kn->nr;
    int64_t base = *base_io, item = *item_io;
    for (int64_t i0 = 0; i0 < g->m; i0 += g->mb) {
        const int64_t rows = g->m - i0 < g->mb ? g->m - i0 : g->mb;
        const int64_t a_panels = (rows + mr - 1) / mr;
        const int64_t n_ic = (rows + g->mc - 1) / g->mc;
        for (int64_t jc = 0; jc < g->n; jc += g->nb) {
            const int64_t cols = g->n - jc < g->nb ? g->n - jc : g->nb;
            gemm_chunk ch = {.i0 = i0, .rows = rows, .jc = jc, .b_panels = (cols + nr - 1) / nr, .n_js = 1};
            /* with few row blocks, cut the columns too, so that every thread has work */
            if (nt > 1) ch.n_js = (2 * nt + n_ic - 1) / n_ic;
            if (ch.n_js > ch.b_panels) ch.n_js = ch.b_panels;
            const int64_t panels = ch.b_panels + a_panels, tasks = n_ic * ch.n_js;
            /* phase 1: pack, once the previous chunk's tasks no longer read the packs */
            for (; item < base + panels; item = team_take(team)) {
                team_wait(team, base);
                pack_panel(g, &ch, bpack, apack, item - base);
                team_done(team);
            }
            base += panels;
            /* phase 2: the tiles, once everything is packed */
            for (; item < base + tasks; item = team_take(team)) {
                team_wait(team, base);
                gemm_task(g, &ch, apack, bpack, item - base);
                team_done(team);
            }
            base += tasks;
        }
    }
    *base_io = base;
    *item_io = item; /* past this GEMM: an item of the next one in the batch */
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

/* ---- the packing buffer (and an f16 C's f32 copy), kept between calls ----
 * A training step makes hundreds of GEMMs with the same few sizes; allocating their packs
 * each time costs page faults (fresh pages from the OS) that show at small sizes. One
 * buffer of each kind is kept; a GEMM running at the same time as another (two contexts on
 * two threads) simply allocates its own. */

typedef struct gemm_scratch {
    size_t bytes;
    float *data; /* 64-byte aligned */
} gemm_scratch;

static _Atomic(gemm_scratch *) g_scratch, g_scratch_c32;

static void scratch_free(gemm_scratch *s) {
    if (s) free(s->data);
    free(s);
}

static gemm_scratch *scratch_take(_Atomic(gemm_scratch *) *slot, size_t bytes) {
    gemm_scratch *s = atomic_exchange(slot, NULL);
    if (s && s->bytes >= bytes) return s;
    scratch_free(s);
    s = malloc(sizeof *s);
    if (!s) return NULL;
    s->bytes = (bytes + 63) / 64 * 64;
    s->data = aligned_alloc(64, s->bytes);
    if (!s->data) {
        free(s);
        return NULL;
    }
    return s;
}

/* Keeps the larger of this buffer and one another GEMM may have put back meanwhile. */
static void scratch_give(_Atomic(gemm_scratch *) *slot, gemm_scratch *s) {
    gemm_scratch *other = atomic_exchange(slot, s);
    if (other && other->bytes > s->bytes) other = atomic_exchange(slot, other);
    scratch_free(other);
}

/* ---- the entry point ---- */

static int thread_id(void) {
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}


/* The plan of batch entry b. */
static gemm_plan plan_of(const gemm_plan *base, const kiln_gemm_args *a, int64_t b) {
    gemm_plan g = *base;
    g.a.base += (size_t)(b * a->stride_a) * kiln_dtype_size(a->a_dtype);
    g.b.base += (size_t)(b * a->stride_b) * kiln_dtype_size(a->b_dtype);
    g.c += b * a->stride_c;
    return g;
}

/* An f16 C: the whole product (with beta's "+=" when beta != 0) is formed in an f32 copy
 * of C, packed [batch][m][n], and rounded once into C row by row, so that the gaps of a C
 * with ldc > n, and C's old contents when beta == 0, are never touched. The copy is at
 * most GEMM_C32_MAX floats: a wider C (logits over a large vocabulary) is done in column
 * chunks, each repacking A, which costs little next to the chunk's multiply-adds. Batches
 * whose C regions overlap cannot be copied apart: they run one after another. */
#define GEMM_C32_MAX ((int64_t)1 << 23)

static kiln_status gemm_f16_output(void *dev, const kiln_gemm_args *a) {
    const int64_t m = a->m, n = a->n, batch = a->batch;
    if (batch > 1 && a->stride_c < (m - 1) * a->ldc + n) {
        for (int64_t b = 0; b < batch; b++) {
            kiln_gemm_args one = *a;
            one.batch = 1;
            one.a.off += (size_t)(b * a->stride_a) * kiln_dtype_size(a->a_dtype);
            one.b.off += (size_t)(b * a->stride_b) * kiln_dtype_size(a->b_dtype);
            one.c.off += (size_t)(b * a->stride_c) * sizeof(uint16_t);
            kiln_status s = gemm_f16_output(dev, &one);
            if (s) return s;
        }
        return KILN_OK;
    }
    int64_t chunk = GEMM_C32_MAX / (batch * m);
    if (chunk < 64) chunk = 64;
    if (n > chunk) {
        for (int64_t j0 = 0; j0 < n; j0 += chunk) {
            kiln_gemm_args part = *a;
            part.n = n - j0 < chunk ? n - j0 : chunk;
            part.b.off += (size_t)(a->trans_b ? j0 * a->ldb : j0) * kiln_dtype_size(a->b_dtype);
            part.c.off += (size_t)j0 * sizeof(uint16_t);
            if (part.bias.buf) part.bias.off += (size_t)j0 * sizeof(float);
            kiln_status s = gemm_f16_output(dev, &part);
            if (s) return s;
        }
        return KILN_OK;
    }
    const size_t bytes = (size_t)(batch * m * n) * sizeof(float);
    gemm_scratch *scratch = scratch_take(&g_scratch_c32, bytes);
    if (!scratch) return kiln_set_error(KILN_ERR_MEMORY, "cpu gemm: out of memory for %zu bytes of f32 output", bytes);
    float *c32 = scratch->data;
    uint16_t *c16 = CPU_PTR(a->c, uint16_t);
    if (a->beta != 0.0f)
        for (int64_t b = 0; b < batch; b++)
            for (int64_t i = 0; i < m; i++)
                kiln_f16_to_f32_n(c16 + b * a->stride_c + i * a->ldc, c32 + (b * m + i) * n, n);
    struct kiln_buf buf = {.ptr = c32, .size = scratch->bytes};
    kiln_gemm_args w = *a;
    w.c = (kiln_ref){&buf, 0};
    w.c_dtype = KILN_F32;
    w.ldc = n;
    w.stride_c = m * n;
    kiln_status s = cpu_gemm(dev, &w);
    if (s == KILN_OK)
        for (int64_t b = 0; b < batch; b++)
            for (int64_t i = 0; i < m; i++)
                kiln_f32_to_f16_n(c32 + (b * m + i) * n, c16 + b * a->stride_c + i * a->ldc, n);
    scratch_give(&g_scratch_c32, scratch);
    return s;
}

kiln_status cpu_gemm(void *dev, const kiln_gemm_args *a) {
    (void)dev;
    if (a->c_dtype != KILN_F32 && a->c_dtype != KILN_F16)
        return kiln_set_error(KILN_ERR_DTYPE, "cpu gemm: output must be f32 or f16, got %s", kiln_dtype_name(a->c_dtype));
    if ((a->a_dtype != KILN_F32 && a->a_dtype != KILN_F16) || (a->b_dtype != KILN_F32 && a->b_dtype != KILN_F16))
        return kiln_set_error(KILN_ERR_DTYPE, "cpu gemm: inputs must be f32 or f16, got %s and %s",
                              kiln_dtype_name(a->a_dtype), kiln_dtype_name(a->b_dtype));
    if (a->m <= 0 || a->n <= 0 || a->batch <= 0) return KILN_OK;
    if (a->c_dtype == KILN_F16) return gemm_f16_output(dev, a);
    const cpu_gemm_kernel *kn = cpu_gemm_active_kernel();
    if (cpu_gemv_applies(a, kn)) return cpu_gemv(a, kn); /* a few rows: B read in place */
    const int64_t m = a->m, n = a->n, k = a->k;

    gemm_plan base_plan = {
        .kn = kn,
        .a = {.base = CPU_PTR(a->a, char), .dtype = a->a_dtype, .ld = a->lda, .trans = a->trans_a},
        .b = {.base = CPU_PTR(a->b, char), .dtype = a->b_dtype, .ld = a->ldb, .trans = a->trans_b},
        .c = CPU_PTR(a->c, float),
        .ldc = a->ldc,
        .bias = CPU_HAS(a->bias) ? CPU_PTR(a->bias, float) : NULL,
        .m = m,
        .n = n,
        .k = k,
        /* mb, nb, mc and kc: set below, once the blocking is chosen */
        .alpha = a->alpha,
        .beta = a->beta,
    };
    /* even row blocks of about GEMM_MC rows, whole MR panels */
    const int64_t n_ic = (m + GEMM_MC - 1) / GEMM_MC;
    base_plan.mc = kiln_round_up((m + n_ic - 1) / n_ic, kn->mr);
    base_plan.kc = CPU_GEMM_KC;
    /* chunks: as much of C as packs of at most GEMM_PACK_MAX floats cover */
    const int64_t kk = k > 0 ? k : 1; /* the packs hold all of K */
    const int64_t pack_rows = GEMM_PACK_MAX / kk / base_plan.mc * base_plan.mc;
    const int64_t pack_cols = GEMM_PACK_MAX / kk / kn->nr * kn->nr;
    base_plan.mb = m <= pack_rows ? m : (pack_rows > base_plan.mc ? pack_rows : base_plan.mc);
    base_plan.nb = n <= pack_cols ? n : (pack_cols > kn->nr ? pack_cols : kn->nr);

    if (k == 0) { /* nothing to multiply: C = beta C + bias */
        for (int64_t b = 0; b < a->batch; b++) {
            gemm_plan g = plan_of(&base_plan, a, b);
            gemm_empty_k(&g);
        }
        return KILN_OK;
    }
    const int64_t work = m * n * k;
    int nt = cpu_max_threads();
    if (work * a->batch < GEMM_PAR_MIN || (nt > 1 && cpu_threads_contended())) nt = 1;
    /* whole GEMMs per thread when there are enough small ones whose outputs do not overlap */
    const int by_batch = nt > 1 && a->batch >= nt && work < GEMM_BATCH_PAR_MAX &&
                         a->stride_c >= (m - 1) * a->ldc + n;
    const int n_packs = by_batch ? nt : 1; /* one pair of packs per thread, or one shared */
    const size_t bpack_floats = (size_t)(kiln_round_up(base_plan.nb, kn->nr) * kk);
    const size_t apack_floats = (size_t)(kiln_round_up(base_plan.mb, kn->mr) * kk);
    const size_t pair = (bpack_floats + apack_floats + 15) / 16 * 16; /* keep 64-byte alignment */
    const size_t bytes = (size_t)n_packs * pair * sizeof(float);
    gemm_scratch *scratch = scratch_take(&g_scratch, bytes);
    if (!scratch) return kiln_set_error(KILN_ERR_MEMORY, "cpu gemm: out of memory for %zu bytes of packing buffers", bytes);
    float *buf = scratch->data;

    if (nt == 1) {
        gemm_team solo = {0};
        int64_t base = 0, item = team_take(&solo);
        for (int64_t b = 0; b < a->batch; b++) {
            gemm_plan g = plan_of(&base_plan, a, b);
            gemm_run(&g, &solo, 1, &base, &item, buf, buf + bpack_floats);
        }
    } else if (by_batch) {
        gemm_team batches = {0}; /* hands out batch entries */
#pragma omp parallel num_threads(nt)
        {
            float *mine = buf + (size_t)thread_id() * pair;
            for (int64_t b; (b = team_take(&batches)) < a->batch;) {
                gemm_plan g = plan_of(&base_plan, a, b);
                gemm_team solo = {0};
                int64_t base = 0, item = team_take(&solo);
                gemm_run(&g, &solo, 1, &base, &item, mine, mine + bpack_floats);
                team_done(&batches);
            }
        }
        gemm_note_join(atomic_load(&batches.last_done_ns));
    } else {
        gemm_team team = {0};
#pragma omp parallel num_threads(nt)
        {
            int64_t base = 0, item = team_take(&team);
            for (int64_t b = 0; b < a->batch; b++) {
                gemm_plan g = plan_of(&base_plan, a, b);
                gemm_run(&g, &team, nt, &base, &item, buf, buf + bpack_floats);
            }
        }
        gemm_note_join(atomic_load(&team.last_done_ns));
    }
    scratch_give(&g_scratch, scratch);
    return KILN_OK;
}
