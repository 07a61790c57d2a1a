/* CPU fused attention (FlashAttention-2), forward and backward, over tiles of ATTN_BQ query
 * rows and ATTN_BK keys: nothing of size Tq x Tk is ever built, so memory is linear in the
 * context (per thread: a few tiles of at most 64 x 256 floats).
 *
 * forward    one work item per (b, h, query tile): online softmax over the key tiles (the
 *            running max m and sum l rescale the accumulated output), then y = acc / l and
 *            lse = m + log l.
 * bwd_dq     one item per (b, h, query tile): delta = dy . y, then per key tile p is
 *            recomputed as exp(s - lse), dS = p (dP - delta), dq += scale dS k.
 * bwd_dkv    one item per (b, kv head, key tile): over the group's query heads and their
 *            query tiles, dv += p' dy and dk += scale dS q.
 * Each item owns the output rows it writes (no atomics, no races); OpenMP spreads the items
 * dynamically, since causal tiles differ in cost.
 *
 * Products are written so the innermost loop runs over contiguous floats with no
 * reduction (the compiler vectorizes them without reassociating): the scores as rows of
 * q times a transposed key tile, the outputs as rows of p times rows of v. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/cpu_f16.h"
#include "cpu/cpu_internal.h"
#include "cpu/cpu_vmath.h"
#include "kiln/rng.h"

#define ATTN_BQ 64
#define ATTN_BK 64
/* over_tiles cuts the keys of bwd_dkv into tiles of ATTN_BQ rows: they must fit a key tile */
_Static_assert(ATTN_BQ <= ATTN_BK, "a key tile holds ATTN_BQ keys");

/* Number of leading keys query i of batch b may see (both masks hide a suffix). */
static int64_t visible_keys(const kiln_attention_args *a, const int32_t *lengths, int64_t b, int64_t i) {
    int64_t visible = a->tk;
    if (a->causal && i + (a->tk - a->tq) + 1 < visible) visible = i + (a->tk - a->tq) + 1;
    if (lengths && (int64_t)lengths[b] < visible) visible = lengths[b];
    return visible < 0 ? 0 : visible;
}

/* Dropout's keep factor of probability (b, h, i, j): 1 / (1 - dropout) or 0. */
static float keep_factor(const kiln_attention_args *a, int64_t b, int64_t h, int64_t i, int64_t j) {
    uint64_t index = (uint64_t)(((b * a->heads + h) * a->tq + i) * a->tk + j);
    return kiln_rng_uniform(a->seed, a->stream, index) >= a->dropout ? 1.0f / (1.0f - a->dropout) : 0.0f;
}

/* xt[d * ATTN_BK + c] = x[c * ldx + d] for the n rows c < n; columns n.. are zeros. */
static void pack_transposed(const float *x, int64_t ldx, int n, int64_t D, float *xt) {
    for (int64_t d = 0; d < D; d++) {
        float *row = xt + d * ATTN_BK;
        for (int c = 0; c < n; c++) row[c] = x[c * ldx + d];
        for (int c = n; c < ATTN_BK; c++) row[c] = 0.0f;
    }
}

/* s[r * ATTN_BK + c] = scale * x_r . t_c for rows r < n of x (row stride ldx) and the
 * transposed tile t (pack_transposed). */
CPU_VECTOR_CLONES static void tile_products(const float *x, int64_t ldx, int n, const float *t, int64_t D,
                                            float scale, float *s) {
    for (int r = 0; r < n; r++) {
        const float *xr = x + r * ldx;
        float acc[ATTN_BK];
        for (int c = 0; c < ATTN_BK; c++) acc[c] = 0.0f;
        for (int64_t d = 0; d < D; d++) {
            const float xd = xr[d], *td = t + d * ATTN_BK;
            for (int c = 0; c < ATTN_BK; c++) acc[c] += xd * td[c];
        }
        float *sr = s + r * ATTN_BK;
        for (int c = 0; c < ATTN_BK; c++) sr[c] = acc[c] * scale;
    }
}

/* out[r] (+)= sum_c w[r * ATTN_BK + c] * y_c for r < n rows of D floats (out row stride D;
 * y rows of stride ldy, m of them). */
CPU_VECTOR_CLONES static void tile_mix(const float *w, int n, int m, const float *y, int64_t ldy, int64_t D,
                                       float *out) {
    for (int r = 0; r < n; r++) {
        float *o = out + r * D;
        const float *wr = w + r * ATTN_BK;
        for (int c = 0; c < m; c++) {
            const float wc = wr[c], *yc = y + c * ldy;
            if (wc == 0.0f) continue;
            for (int64_t d = 0; d < D; d++) o[d] += wc * yc[d];
        }
    }
}

/* out[c] += sum_r w[r * ATTN_BK + c] * x_r: the transposed mix (dk, dv of a key tile). */
CPU_VECTOR_CLONES static void tile_mix_t(const float *w, int n, int m, const float *x, int64_t ldx, int64_t D,
                                         float *out) {
    for (int c = 0; c < m; c++) {
        float *o = out + c * D;
        for (int r = 0; r < n; r++) {
            const float wc = w[r * ATTN_BK + c], *xr = x + r * ldx;
            if (wc == 0.0f) continue;
            for (int64_t d = 0; d < D; d++) o[d] += wc * xr[d];
        }
    }
}

/* One thread's scratch: transposed key and value tiles, two score tiles, row accumulators. */
typedef struct attn_scratch {
    float *kt, *vt, *s, *ds, *acc;
    float m[ATTN_BQ], l[ATTN_BQ];
} attn_scratch;

static int scratch_alloc(attn_scratch *w, int64_t D) {
    size_t tile = (size_t)(D * ATTN_BK), sq = (size_t)ATTN_BQ * ATTN_BK;
    /* acc: the forward's and dq's [ATTN_BQ, D], or dk's and dv's [ATTN_BK, D] each */
    w->kt = malloc((2 * tile + 2 * sq + 2 * (size_t)(ATTN_BQ > ATTN_BK ? ATTN_BQ : ATTN_BK) * (size_t)D) * sizeof(float));
    if (!w->kt) return 0;
    w->vt = w->kt + tile;
    w->s = w->vt + tile;
    w->ds = w->s + sq;
    w->acc = w->ds + sq;
    return 1;
}

/* A work item's rows: the tile of queries [i0, i0 + n) of head h in batch b. */
typedef struct attn_rows {
    int64_t b, h, i0;
    int n;
} attn_rows;

/* Turns the scores of one key tile [j0, j0 + m) into probabilities relative to the running
 * max (online softmax), rescaling l and the accumulator; s then holds p (masked: 0), and
 * ds the dropped-out p' the values are mixed with. */
static void online_tile(const kiln_attention_args *a, const int32_t *lengths, const attn_rows *t, int64_t j0,
                        int m, attn_scratch *w) {
    const int64_t D = a->head_dim;
    for (int r = 0; r < t->n; r++) {
        float *sr = w->s + r * ATTN_BK, *pr = w->ds + r * ATTN_BK;
        int64_t vis = visible_keys(a, lengths, t->b, t->i0 + r) - j0;
        int cols = vis < 0 ? 0 : vis > m ? m : (int)vis;
        float mx = w->m[r];
        for (int c = 0; c < cols; c++) mx = sr[c] > mx ? sr[c] : mx;
        const float corr = cols ? cpu_expf(w->m[r] - mx) : 1.0f;
        float sum = 0.0f;
        for (int c = 0; c < ATTN_BK; c++) {
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
    const int64_t ldq = a->heads * D, ldk = a->kv_heads * D;
    const float *q = CPU_PTR(a->q, float) + ((t->b * a->tq + t->i0) * a->heads + t->h) * D;
    const float *k = CPU_PTR(a->k, float) + (t->b * a->tk * a->kv_heads + g) * D;
    const float *v = CPU_PTR(a->v, float) + (t->b * a->tk * a->kv_heads + g) * D;
    float *y = CPU_PTR(a->y, float) + ((t->b * a->tq + t->i0) * a->heads + t->h) * D;
    float *lse = CPU_PTR(a->lse, float) + (t->b * a->heads + t->h) * a->tq + t->i0;
    const int64_t keys = visible_keys(a, lengths, t->b, t->i0 + t->n - 1); /* the tile's widest row */
    memset(w->acc, 0, (size_t)(t->n * D) * sizeof(float));
    for (int r = 0; r < t->n; r++) w->m[r] = -INFINITY, w->l[r] = 0.0f;
    for (int64_t j0 = 0; j0 < keys; j0 += ATTN_BK) {
        const int m = (int)(keys - j0 < ATTN_BK ? keys - j0 : ATTN_BK);
        pack_transposed(k + j0 * ldk, ldk, m, D, w->kt);
        tile_products(q, ldq, t->n, w->kt, D, a->scale, w->s);
        online_tile(a, lengths, t, j0, m, w);
        tile_mix(w->ds, t->n, m, v + j0 * ldk, ldk, D, w->acc);
    }
    for (int r = 0; r < t->n; r++) {
        const int empty = w->l[r] == 0.0f;
        const float inv = empty ? 0.0f : 1.0f / w->l[r];
        for (int64_t d = 0; d < D; d++) y[r * ldq + d] = w->acc[r * D + d] * inv;
        lse[r] = empty ? KILN_ATTN_LSE_EMPTY : w->m[r] + logf(w->l[r]);
    }
}

/* Runs fn over every (b, head, tile) item on OpenMP threads, each with its scratch: the
 * tiles of ATTN_BQ rows of `rows` query rows (or keys) of each of `heads` heads. */
typedef void (*attn_tile_fn)(const kiln_attention_args *a, const int32_t *lengths, const attn_rows *t,
                             attn_scratch *w);
static kiln_status over_tiles(const kiln_attention_args *a, int64_t heads, int64_t rows, attn_tile_fn fn) {
    const int32_t *lengths = CPU_HAS(a->lengths) ? CPU_PTR(a->lengths, int32_t) : NULL;
    const int64_t tiles = (rows + ATTN_BQ - 1) / ATTN_BQ, items = a->batch * heads * tiles;
    int failed = 0;
    const int64_t work = a->tq * a->tk * a->head_dim * a->heads * a->batch;
#pragma omp parallel if (cpu_use_threads(work, CPU_PAR_MIN) && items > 1) reduction(| : failed)
    {
        attn_scratch w;
        if (!scratch_alloc(&w, a->head_dim)) failed = 1;
#pragma omp for schedule(dynamic, 1)
        for (int64_t it = 0; it < items; it++) {
            if (failed) continue;
            attn_rows t = {.b = it / (heads * tiles), .h = it / tiles % heads, .i0 = it % tiles * ATTN_BQ};
            t.n = (int)(rows - t.i0 < ATTN_BQ ? rows - t.i0 : ATTN_BQ);
            fn(a, lengths, &t, &w);
        }
        free(w.kt);
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

/* The backward's view of one tile of query rows t against keys [j0, j0 + m): s holds the
 * scaled scores and ds dP = dy . v on entry; on return s holds p' (the dropped-out
 * probabilities the values were mixed with) and ds dS = p (dP keep - delta), with p
 * recomputed as exp(s - lse); masked keys and empty rows give zeros. */
static void backward_tile(const kiln_attention_args *a, const int32_t *lengths, const attn_rows *t, int64_t j0,
                          int m, attn_scratch *w) {
    const float *lse = CPU_PTR(a->lse, float) + (t->b * a->heads + t->h) * a->tq + t->i0;
    const float *delta = CPU_PTR(a->delta, float) + (t->b * a->heads + t->h) * a->tq + t->i0;
    for (int r = 0; r < t->n; r++) {
        float *sr = w->s + r * ATTN_BK, *dr = w->ds + r * ATTN_BK;
        int64_t vis = lse[r] < KILN_ATTN_LSE_EMPTY_BELOW ? 0 : visible_keys(a, lengths, t->b, t->i0 + r) - j0;
        const int cols = vis < 0 ? 0 : vis > m ? m : (int)vis;
        const float l = lse[r], dl = delta[r];
        float kf[ATTN_BK];
        if (a->dropout > 0)
            for (int c = 0; c < cols; c++) {
                kf[c] = keep_factor(a, t->b, t->h, t->i0 + r, j0 + c);
                dr[c] *= kf[c];
            }
        for (int c = 0; c < ATTN_BK; c++) {
            const int keep = c < cols;
            const float p = cpu_select(keep, cpu_expf(cpu_select(keep, sr[c] - l, 0.0f)), 0.0f);
            sr[c] = p;
            dr[c] = p * (dr[c] - dl);
        }
        if (a->dropout > 0)
            for (int c = 0; c < cols; c++) sr[c] *= kf[c];
    }
}

/* delta = dy . y for the tile's rows, then dq += scale sum over key tiles of dS k. */
static void dq_rows(const kiln_attention_args *a, const int32_t *lengths, const attn_rows *t, attn_scratch *w) {
    const int64_t D = a->head_dim, G = a->heads / a->kv_heads, g = t->h / G;
    const int64_t ldq = a->heads * D, ldk = a->kv_heads * D, row0 = ((t->b * a->tq + t->i0) * a->heads + t->h) * D;
    const float *q = CPU_PTR(a->q, float) + row0, *y = CPU_PTR(a->y, float) + row0;
    const float *dy = CPU_PTR(a->dy, float) + row0;
    const float *k = CPU_PTR(a->k, float) + (t->b * a->tk * a->kv_heads + g) * D;
    const float *v = CPU_PTR(a->v, float) + (t->b * a->tk * a->kv_heads + g) * D;
    float *delta = CPU_PTR(a->delta, float) + (t->b * a->heads + t->h) * a->tq + t->i0;
    for (int r = 0; r < t->n; r++) delta[r] = (float)cpu_dot_f64(dy + r * ldq, y + r * ldq, D);
    if (!CPU_HAS(a->dq)) return;
    const int64_t keys = visible_keys(a, lengths, t->b, t->i0 + t->n - 1);
    memset(w->acc, 0, (size_t)(t->n * D) * sizeof(float));
    for (int64_t j0 = 0; j0 < keys; j0 += ATTN_BK) {
        const int m = (int)(keys - j0 < ATTN_BK ? keys - j0 : ATTN_BK);
        pack_transposed(k + j0 * ldk, ldk, m, D, w->kt);
        pack_transposed(v + j0 * ldk, ldk, m, D, w->vt);
        tile_products(q, ldq, t->n, w->kt, D, a->scale, w->s);
        tile_products(dy, ldq, t->n, w->vt, D, 1.0f, w->ds);
        backward_tile(a, lengths, t, j0, m, w);
        tile_mix(w->ds, t->n, m, k + j0 * ldk, ldk, D, w->acc);
    }
    float *dq = CPU_PTR(a->dq, float) + row0;
    for (int r = 0; r < t->n; r++)
        for (int64_t d = 0; d < D; d++) dq[r * ldq + d] += a->scale * w->acc[r * D + d];
}

/* The keys [j0, j0 + m) of kv head g (kt->h, kt->i0, kt->n): dv += p' dy and
 * dk += scale dS q over every query row of the group's heads that sees one of them. */
static void dkv_keys(const kiln_attention_args *a, const int32_t *lengths, const attn_rows *kt, attn_scratch *w) {
    const int64_t D = a->head_dim, G = a->heads / a->kv_heads, g = kt->h, j0 = kt->i0;
    const int64_t ldq = a->heads * D, ldk = a->kv_heads * D, key0 = ((kt->b * a->tk + j0) * a->kv_heads + g) * D;
    const int m = kt->n;
    float *dk_acc = w->acc, *dv_acc = w->acc + ATTN_BK * D;
    pack_transposed(CPU_PTR(a->k, float) + key0, ldk, m, D, w->kt);
    pack_transposed(CPU_PTR(a->v, float) + key0, ldk, m, D, w->vt);
    memset(w->acc, 0, (size_t)(2 * ATTN_BK * D) * sizeof(float));
    for (int64_t h = g * G; h < (g + 1) * G; h++)
        for (int64_t i0 = 0; i0 < a->tq; i0 += ATTN_BQ) {
            attn_rows t = {.b = kt->b, .h = h, .i0 = i0, .n = (int)(a->tq - i0 < ATTN_BQ ? a->tq - i0 : ATTN_BQ)};
            if (visible_keys(a, lengths, t.b, i0 + t.n - 1) <= j0) continue; /* no row sees these keys */
            const int64_t row0 = ((t.b * a->tq + i0) * a->heads + h) * D;
            const float *q = CPU_PTR(a->q, float) + row0, *dy = CPU_PTR(a->dy, float) + row0;
            tile_products(q, ldq, t.n, w->kt, D, a->scale, w->s);
            tile_products(dy, ldq, t.n, w->vt, D, 1.0f, w->ds);
            backward_tile(a, lengths, &t, j0, m, w);
            tile_mix_t(w->s, t.n, m, dy, ldq, D, dv_acc);
            tile_mix_t(w->ds, t.n, m, q, ldq, D, dk_acc);
        }
    float *dk = CPU_HAS(a->dk) ? CPU_PTR(a->dk, float) + key0 : NULL;
    float *dv = CPU_HAS(a->dv) ? CPU_PTR(a->dv, float) + key0 : NULL;
    for (int c = 0; c < m; c++)
        for (int64_t d = 0; d < D; d++) {
            if (dk) dk[c * ldk + d] += a->scale * dk_acc[c * D + d];
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
