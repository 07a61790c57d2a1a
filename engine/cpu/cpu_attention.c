/* CPU fused attention (FlashAttention-2), forward and backward, over tiles of ATTN_TILE
 * query rows and ATTN_TILE keys: nothing of size Tq x Tk is ever built, so memory is
 * linear in the context (per thread: a few tiles of at most 64 x 256 floats).
 *
 * forward    one work item per (b, h, query tile): online softmax over the key tiles (the
 *            running max m and sum l rescale the accumulated output), then y = acc / l and
 *            lse = m + log l.
 * bwd_dq     one item per (b, h, query tile): delta = dy . y, then per key tile p is
 *            recomputed as exp(s - lse), dS = p (dP - delta), dq += scale dS k.
 * bwd_dkv    one item per (b, kv head, key tile): over the group's query heads and their
 *            query tiles, dv += p'^T dy and dk += scale dS^T q.
 * Each item owns the output rows it writes (no atomics, no races); OpenMP hands the items
 * out dynamically, since causal tiles differ in cost.
 *
 * The tile products (q k^T, dy v^T, p v, dS k, p^T dy, dS^T q) run on the GEMM's
 * micro-kernels (cpu_gemm.h) over operands packed once per tile: kiln compiles without
 * FMA contraction, so loops left to the vectorizer ran at a tenth of their speed. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/cpu_f16.h"
#include "cpu/cpu_gemm.h"
#include "cpu/cpu_internal.h"
#include "cpu/cpu_vmath.h"
#include "kiln/rng.h"

#define ATTN_TILE 64

/* Number of leading keys query i of batch b may see (both masks hide a suffix). */
static int64_t visible_keys(const kiln_attention_args *a, const int32_t *lengths, int64_t b, int64_t i) {
    int64_t visible = a->tk;
    if (a->causal && i + (a->tk - a->tq) + 1 < visible) visible = i + (a->tk - a->tq) + 1;
    if (lengths && (int64_t)lengths[b] < visible) visible = lengths[b];
    return visible < 0 ? 0 : visible;
}

/* Dropout's keep factor of probability (b, h, i, j): 1 / (1 - dropout) or 0, drawn as
 * kiln_dropout draws element ((b H + h) Tq + i) Tk + j of the [B, H, Tq, Tk] probabilities. */
static float keep_factor(const kiln_attention_args *a, int64_t b, int64_t h, int64_t i, int64_t j) {
    uint64_t index = (uint64_t)(((b * a->heads + h) * a->tq + i) * a->tk + j);
    return kiln_rng_uniform(a->seed, a->stream, index) >= a->dropout ? 1.0f / (1.0f - a->dropout) : 0.0f;
}

static int min_int(int64_t x, int64_t y) { return (int)(x < y ? x : y); }

/* ---- tile products on the GEMM's micro-kernels ---- */

/* op(X) [rows, k] (op(X)(i, p) = x[i ld + p], or x[p ld + i] when trans) as the MR-row
 * panels of a product's left operand. */
static void pack_left(const cpu_gemm_kernel *kn, const float *x, int64_t ld, int trans, int rows, int k, float *dst) {
    cpu_gemm_operand o = {.base = (const char *)x, .dtype = KILN_F32, .ld = ld, .trans = trans};
    for (int i0 = 0; i0 < rows; i0 += kn->mr) cpu_gemm_pack_a_panel(dst + i0 * k, &o, i0, min_int(kn->mr, rows - i0), 0, k, kn);
}

/* op(X) [k, cols] (op(X)(p, j) = x[p ld + j], or x[j ld + p] when trans) as the NR-column
 * panels of a product's right operand. */
static void pack_right(const cpu_gemm_kernel *kn, const float *x, int64_t ld, int trans, int k, int cols, float *dst) {
    cpu_gemm_operand o = {.base = (const char *)x, .dtype = KILN_F32, .ld = ld, .trans = trans};
    for (int j0 = 0; j0 < cols; j0 += kn->nr) cpu_gemm_pack_b_panel(dst + j0 * k, &o, 0, k, j0, min_int(kn->nr, cols - j0), kn);
}

/* c [rows, cols] (row stride ldc) = alpha a b, or += alpha a b when accumulate, from
 * packed operands over k. */
static void tile_product(const cpu_gemm_kernel *kn, const float *a, const float *b, int rows, int cols, int k,
                         float *c, int64_t ldc, float alpha, int accumulate) {
    const cpu_gemm_epilogue e = {.alpha = alpha, .beta = 0.0f, .bias = NULL, .first = !accumulate};
    for (int i0 = 0; i0 < rows; i0 += kn->mr)
        for (int j0 = 0; j0 < cols; j0 += kn->nr)
            kn->run(k, a + i0 * k, b + j0 * k, c + i0 * ldc + j0, ldc, min_int(kn->mr, rows - i0),
                    min_int(kn->nr, cols - j0), &e);
}

/* One thread's scratch: score tiles s and ds [ATTN_TILE, ATTN_TILE]; acc, the rows of y or
 * dq [ATTN_TILE, D], or of dk and dv (two such); packed operands: ql and yl (q and dy rows
 * as left operands over D), kr and vr (a key tile's k^T and v^T as right operands over D),
 * pl and pr (a tile's p or dS as a left operand, rows of k, v, q or dy as a right one, over
 * ATTN_TILE). */
typedef struct attn_scratch {
    const cpu_gemm_kernel *kn;
    float *s, *ds, *acc, *ql, *yl, *kr, *vr, *pl, *pr;
    float m[ATTN_TILE], l[ATTN_TILE];
} attn_scratch;

static int scratch_alloc(attn_scratch *w, int64_t D) {
    const cpu_gemm_kernel *kn = cpu_gemm_active_kernel();
    const size_t sq = ATTN_TILE * ATTN_TILE, left = (size_t)((ATTN_TILE + kn->mr) * D);
    const size_t right = (size_t)((ATTN_TILE + kn->nr) * D), left_t = (size_t)((ATTN_TILE + kn->mr) * ATTN_TILE);
    const size_t right_t = (size_t)((D + kn->nr) * ATTN_TILE), acc = (size_t)(2 * ATTN_TILE * D);
    /* zeroed: score columns past a short tile's keys are read (and masked) before written */
    w->s = calloc(2 * sq + acc + 2 * left + 2 * right + left_t + right_t, sizeof(float));
    if (!w->s) return 0;
    w->kn = kn;
    w->ds = w->s + sq;
    w->acc = w->ds + sq;
    w->ql = w->acc + acc;
    w->yl = w->ql + left;
    w->kr = w->yl + left;
    w->vr = w->kr + right;
    w->pl = w->vr + right;
    w->pr = w->pl + left_t;
    return 1;
}

/* A work item's rows: the tile [i0, i0 + n) of queries (or keys) of head h in batch b. */
typedef struct attn_rows {
    int64_t b, h, i0;
    int n;
} attn_rows;

/* Turns the scores s of one key tile [j0, j0 + m) into probabilities relative to the
 * running max (online softmax), rescaling l and the accumulated rows; s then holds p
 * (masked keys: 0), and ds the dropped-out p' the values are mixed with. */
CPU_VECTOR_CLONES static void online_tile(const kiln_attention_args *a, const int32_t *lengths, const attn_rows *t,
                                          int64_t j0, int m, attn_scratch *w) {
    const int64_t D = a->head_dim;
    for (int r = 0; r < t->n; r++) {
        float *sr = w->s + r * ATTN_TILE, *pr = w->ds + r * ATTN_TILE;
        const int64_t vis = visible_keys(a, lengths, t->b, t->i0 + r) - j0;
        const int cols = vis < 0 ? 0 : vis > m ? m : (int)vis;
        float mx = w->m[r];
        for (int c = 0; c < cols; c++) mx = sr[c] > mx ? sr[c] : mx;
        const float corr = cols ? cpu_expf(w->m[r] - mx) : 1.0f;
        float sum = 0.0f;
        for (int c = 0; c < ATTN_TILE; c++) {
            const int keep = c < cols;
            sr[c] = cpu_select(keep, cpu_expf(cpu_select(keep, sr[c] - mx, 0.0f)), 0.0f);
            sum += sr[c];
            pr[c] = sr[c];
        }
        if (a->dropout > 0)
            for (int c = 0; c < cols; c++) pr[c] *= keep_factor(a, t->b, t->h, t->i0 + r, j0 + c);
        if (cols && corr != 1.0f)
            for (int64_t d = 0; d < D; d++) w->acc[r * D + d] *= corr;
        w->l[r] = w->l[r] * corr + sum;
        w->m[r] = mx;
    }
}

static void forward_rows(const kiln_attention_args *a, const int32_t *lengths, const attn_rows *t, attn_scratch *w) {
    const int64_t D = a->head_dim, G = a->heads / a->kv_heads, g = t->h / G;
    const int64_t ldq = a->heads * D, ldk = a->kv_heads * D, row0 = ((t->b * a->tq + t->i0) * a->heads + t->h) * D;
    const float *k = CPU_PTR(a->k, float) + (t->b * a->tk * a->kv_heads + g) * D;
    const float *v = CPU_PTR(a->v, float) + (t->b * a->tk * a->kv_heads + g) * D;
    float *y = CPU_PTR(a->y, float) + row0;
    float *lse = CPU_PTR(a->lse, float) + (t->b * a->heads + t->h) * a->tq + t->i0;
    const int64_t keys = visible_keys(a, lengths, t->b, t->i0 + t->n - 1); /* the tile's widest row */
    memset(w->acc, 0, (size_t)(t->n * D) * sizeof(float));
    for (int r = 0; r < t->n; r++) w->m[r] = -INFINITY, w->l[r] = 0.0f;
    pack_left(w->kn, CPU_PTR(a->q, float) + row0, ldq, 0, t->n, (int)D, w->ql);
    for (int64_t j0 = 0; j0 < keys; j0 += ATTN_TILE) {
        const int m = min_int(ATTN_TILE, keys - j0);
        pack_right(w->kn, k + j0 * ldk, ldk, 1, (int)D, m, w->kr);
        tile_product(w->kn, w->ql, w->kr, t->n, m, (int)D, w->s, ATTN_TILE, a->scale, 0);
        online_tile(a, lengths, t, j0, m, w);
        pack_left(w->kn, w->ds, ATTN_TILE, 0, t->n, m, w->pl);
        pack_right(w->kn, v + j0 * ldk, ldk, 0, m, (int)D, w->pr);
        tile_product(w->kn, w->pl, w->pr, t->n, (int)D, m, w->acc, D, 1.0f, 1);
    }
    for (int r = 0; r < t->n; r++) {
        const int empty = w->l[r] == 0.0f;
        const float inv = empty ? 0.0f : 1.0f / w->l[r];
        for (int64_t d = 0; d < D; d++) y[r * ldq + d] = w->acc[r * D + d] * inv;
        lse[r] = empty ? KILN_ATTN_LSE_EMPTY : w->m[r] + logf(w->l[r]);
    }
}

/* Runs fn over every (b, head, tile) item on OpenMP threads, each with its scratch: the
 * tiles of ATTN_TILE rows of `rows` query rows (or keys) of each of `heads` heads. */
typedef void (*attn_tile_fn)(const kiln_attention_args *a, const int32_t *lengths, const attn_rows *t,
                             attn_scratch *w);
static kiln_status over_tiles(const kiln_attention_args *a, int64_t heads, int64_t rows, attn_tile_fn fn) {
    const int32_t *lengths = CPU_HAS(a->lengths) ? CPU_PTR(a->lengths, int32_t) : NULL;
    const int64_t tiles = (rows + ATTN_TILE - 1) / ATTN_TILE, items = a->batch * heads * tiles;
    const int64_t work = a->batch * a->heads * a->tq * a->tk * a->head_dim;
    int failed = 0;
#pragma omp parallel if (items > 1 && cpu_use_threads(work, CPU_PAR_MIN)) reduction(| : failed)
    {
        attn_scratch w;
        if (!scratch_alloc(&w, a->head_dim)) failed = 1;
#pragma omp for schedule(dynamic, 1)
        for (int64_t it = 0; it < items; it++) {
            if (failed) continue;
            attn_rows t = {.b = it / (heads * tiles), .h = it / tiles % heads, .i0 = it % tiles * ATTN_TILE};
            t.n = min_int(ATTN_TILE, rows - t.i0);
            fn(a, lengths, &t, &w);
        }
        free(w.s);
    }
    return failed ? kiln_set_error(KILN_ERR_MEMORY, "attention: out of host memory for the CPU tiles") : KILN_OK;
}

kiln_status cpu_attention_fwd(void *dev, const kiln_attention_args *a) {
    if (a->dtype != KILN_F32) { /* f16: on widened copies (cpu_f16.h) */
        kiln_attention_args w = *a;
        w.dtype = KILN_F32;
        const int64_t nq = a->batch * a->tq * a->heads * a->head_dim, nk = a->batch * a->tk * a->kv_heads * a->head_dim;
        cpu_widen s;
        cpu_widen_init(&s, a->dtype, "attention_fwd");
        cpu_widen_operand(&s, &w.q, nq, CPU_IN);
        cpu_widen_operand(&s, &w.k, nk, CPU_IN);
        cpu_widen_operand(&s, &w.v, nk, CPU_IN);
        cpu_widen_operand(&s, &w.y, nq, CPU_OUT);
        return cpu_widen_finish(&s, s.status ? s.status : cpu_attention_fwd(dev, &w));
    }
    (void)dev;
    return over_tiles(a, a->heads, a->tq, forward_rows);
}

/* ---- backward ---- */

/* The backward's view of the query rows t against keys [j0, j0 + m): s holds the scaled
 * scores and ds dP = dy . v on entry; on return s holds p' (the dropped-out probabilities
 * the values were mixed with) and ds dS = p (dP keep - delta), with p recomputed as
 * exp(s - lse); masked keys and empty rows give zeros. */
CPU_VECTOR_CLONES static void backward_tile(const kiln_attention_args *a, const int32_t *lengths, const attn_rows *t,
                                            int64_t j0, int m, attn_scratch *w) {
    const float *lse = CPU_PTR(a->lse, float) + (t->b * a->heads + t->h) * a->tq + t->i0;
    const float *delta = CPU_PTR(a->delta, float) + (t->b * a->heads + t->h) * a->tq + t->i0;
    for (int r = 0; r < t->n; r++) {
        float *sr = w->s + r * ATTN_TILE, *dr = w->ds + r * ATTN_TILE;
        const int64_t vis = lse[r] < KILN_ATTN_LSE_EMPTY_BELOW ? 0 : visible_keys(a, lengths, t->b, t->i0 + r) - j0;
        const int cols = vis < 0 ? 0 : vis > m ? m : (int)vis;
        const float l = lse[r], dl = delta[r];
        float kf[ATTN_TILE];
        if (a->dropout > 0)
            for (int c = 0; c < cols; c++) {
                kf[c] = keep_factor(a, t->b, t->h, t->i0 + r, j0 + c);
                dr[c] *= kf[c];
            }
        for (int c = 0; c < ATTN_TILE; c++) {
            const int keep = c < cols;
            const float p = cpu_select(keep, cpu_expf(cpu_select(keep, sr[c] - l, 0.0f)), 0.0f);
            sr[c] = p;
            dr[c] = p * (dr[c] - dl);
        }
        if (a->dropout > 0)
            for (int c = 0; c < cols; c++) sr[c] *= kf[c];
    }
}

/* s and ds of the query rows t (packed in ql and yl) against the key tile packed in kr and
 * vr, through backward_tile. */
static void recompute_tile(const kiln_attention_args *a, const int32_t *lengths, const attn_rows *t, int64_t j0,
                           int m, attn_scratch *w) {
    const int D = (int)a->head_dim;
    tile_product(w->kn, w->ql, w->kr, t->n, m, D, w->s, ATTN_TILE, a->scale, 0);
    tile_product(w->kn, w->yl, w->vr, t->n, m, D, w->ds, ATTN_TILE, 1.0f, 0);
    backward_tile(a, lengths, t, j0, m, w);
}

/* delta = dy . y for the tile's rows, then dq += scale sum over key tiles of dS k. */
static void dq_rows(const kiln_attention_args *a, const int32_t *lengths, const attn_rows *t, attn_scratch *w) {
    const int64_t D = a->head_dim, G = a->heads / a->kv_heads, g = t->h / G;
    const int64_t ldq = a->heads * D, ldk = a->kv_heads * D, row0 = ((t->b * a->tq + t->i0) * a->heads + t->h) * D;
    const float *y = CPU_PTR(a->y, float) + row0, *dy = CPU_PTR(a->dy, float) + row0;
    const float *k = CPU_PTR(a->k, float) + (t->b * a->tk * a->kv_heads + g) * D;
    const float *v = CPU_PTR(a->v, float) + (t->b * a->tk * a->kv_heads + g) * D;
    float *delta = CPU_PTR(a->delta, float) + (t->b * a->heads + t->h) * a->tq + t->i0;
    for (int r = 0; r < t->n; r++) delta[r] = (float)cpu_dot_f64(dy + r * ldq, y + r * ldq, D);
    if (!CPU_HAS(a->dq)) return;
    const int64_t keys = visible_keys(a, lengths, t->b, t->i0 + t->n - 1);
    memset(w->acc, 0, (size_t)(t->n * D) * sizeof(float));
    pack_left(w->kn, CPU_PTR(a->q, float) + row0, ldq, 0, t->n, (int)D, w->ql);
    pack_left(w->kn, dy, ldq, 0, t->n, (int)D, w->yl);
    for (int64_t j0 = 0; j0 < keys; j0 += ATTN_TILE) {
        const int m = min_int(ATTN_TILE, keys - j0);
        pack_right(w->kn, k + j0 * ldk, ldk, 1, (int)D, m, w->kr);
        pack_right(w->kn, v + j0 * ldk, ldk, 1, (int)D, m, w->vr);
        recompute_tile(a, lengths, t, j0, m, w);
        pack_left(w->kn, w->ds, ATTN_TILE, 0, t->n, m, w->pl);
        pack_right(w->kn, k + j0 * ldk, ldk, 0, m, (int)D, w->pr);
        tile_product(w->kn, w->pl, w->pr, t->n, (int)D, m, w->acc, D, a->scale, 1);
    }
    float *dq = CPU_PTR(a->dq, float) + row0;
    for (int r = 0; r < t->n; r++)
        for (int64_t d = 0; d < D; d++) dq[r * ldq + d] += w->acc[r * D + d];
}

/* The keys [j0, j0 + m) of kv head g (kt->h, kt->i0, kt->n): dv += p'^T dy and
 * dk += scale dS^T q over every query row of the group's heads that sees one of them. */
static void dkv_keys(const kiln_attention_args *a, const int32_t *lengths, const attn_rows *kt, attn_scratch *w) {
    const int64_t D = a->head_dim, G = a->heads / a->kv_heads, g = kt->h, j0 = kt->i0;
    const int64_t ldq = a->heads * D, ldk = a->kv_heads * D, key0 = ((kt->b * a->tk + j0) * a->kv_heads + g) * D;
    const int m = kt->n;
    float *dk_acc = w->acc, *dv_acc = w->acc + ATTN_TILE * D;
    pack_right(w->kn, CPU_PTR(a->k, float) + key0, ldk, 1, (int)D, m, w->kr);
    pack_right(w->kn, CPU_PTR(a->v, float) + key0, ldk, 1, (int)D, m, w->vr);
    memset(w->acc, 0, (size_t)(2 * ATTN_TILE * D) * sizeof(float));
    for (int64_t h = g * G; h < (g + 1) * G; h++)
        for (int64_t i0 = 0; i0 < a->tq; i0 += ATTN_TILE) {
            attn_rows t = {.b = kt->b, .h = h, .i0 = i0, .n = min_int(ATTN_TILE, a->tq - i0)};
            if (visible_keys(a, lengths, t.b, i0 + t.n - 1) <= j0) continue; /* no row sees these keys */
            const int64_t row0 = ((t.b * a->tq + i0) * a->heads + h) * D;
            const float *q = CPU_PTR(a->q, float) + row0, *dy = CPU_PTR(a->dy, float) + row0;
            pack_left(w->kn, q, ldq, 0, t.n, (int)D, w->ql);
            pack_left(w->kn, dy, ldq, 0, t.n, (int)D, w->yl);
            recompute_tile(a, lengths, &t, j0, m, w);
            pack_left(w->kn, w->s, ATTN_TILE, 1, m, t.n, w->pl);
            pack_right(w->kn, dy, ldq, 0, t.n, (int)D, w->pr);
            tile_product(w->kn, w->pl, w->pr, m, (int)D, t.n, dv_acc, D, 1.0f, 1);
            pack_left(w->kn, w->ds, ATTN_TILE, 1, m, t.n, w->pl);
            pack_right(w->kn, q, ldq, 0, t.n, (int)D, w->pr);
            tile_product(w->kn, w->pl, w->pr, m, (int)D, t.n, dk_acc, D, a->scale, 1);
        }
    float *dk = CPU_HAS(a->dk) ? CPU_PTR(a->dk, float) + key0 : NULL;
    float *dv = CPU_HAS(a->dv) ? CPU_PTR(a->dv, float) + key0 : NULL;
    for (int c = 0; c < m; c++)
        for (int64_t d = 0; d < D; d++) {
            if (dk) dk[c * ldk + d] += dk_acc[c * D + d];
            if (dv) dv[c * ldk + d] += dv_acc[c * D + d];
        }
}

/* The backward's operands widened from f16 (cpu_f16.h); run then calls the f32 kernel. */
static kiln_status backward_f16(void *dev, const kiln_attention_args *a, const char *name,
                                kiln_status (*run)(void *, const kiln_attention_args *)) {
    kiln_attention_args w = *a;
    w.dtype = KILN_F32;
    const int64_t nq = a->batch * a->tq * a->heads * a->head_dim, nk = a->batch * a->tk * a->kv_heads * a->head_dim;
    cpu_widen s;
    cpu_widen_init(&s, a->dtype, name);
    cpu_widen_operand(&s, &w.q, nq, CPU_IN);
    cpu_widen_operand(&s, &w.k, nk, CPU_IN);
    cpu_widen_operand(&s, &w.v, nk, CPU_IN);
    cpu_widen_operand(&s, &w.y, nq, CPU_IN);
    cpu_widen_operand(&s, &w.dy, nq, CPU_IN);
    cpu_widen_operand(&s, &w.dq, nq, CPU_INOUT);
    cpu_widen_operand(&s, &w.dk, nk, CPU_INOUT);
    cpu_widen_operand(&s, &w.dv, nk, CPU_INOUT);
    return cpu_widen_finish(&s, s.status ? s.status : run(dev, &w));
}

kiln_status cpu_attention_bwd_dq(void *dev, const kiln_attention_args *a) {
    if (a->dtype != KILN_F32) return backward_f16(dev, a, "attention_bwd_dq", cpu_attention_bwd_dq);
    (void)dev;
    return over_tiles(a, a->heads, a->tq, dq_rows);
}

kiln_status cpu_attention_bwd_dkv(void *dev, const kiln_attention_args *a) {
    if (a->dtype != KILN_F32) return backward_f16(dev, a, "attention_bwd_dkv", cpu_attention_bwd_dkv);
    (void)dev;
    return over_tiles(a, a->kv_heads, a->tk, dkv_keys);
}
