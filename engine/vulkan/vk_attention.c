/* Host side of the fused attention (kiln_attention_args), FlashAttention-2 style:
 *   attention_fwd        a work-group per (query tile, head, batch row): y and lse
 *   attention_bwd_delta  delta = dy . y per query row (its own pass: the next kernel
 *                        already binds the eight buffers a kernel may)
 *   attention_bwd_dq     a work-group per (query tile, head, batch row): dq += ...
 *   attention_bwd_dkv    a work-group per (key tile, kv head, batch row), over the group's
 *                        query heads and query tiles: dk += ..., dv += ...; it reads lse and
 *                        delta interleaved in a scratch (copy_block fills it)
 * No float atomics: every work-group owns its output rows. The tile shape comes from the
 * device's shared-memory and work-group limits (plan), so the kernels run on any Vulkan 1.1
 * device and in KILN_VK_MIN_LIMITS=1 mode. Sequences larger than one binding go in pieces
 * of whole batch rows (the dropout draw keeps the global batch index, push field b0). */
#include "push.h"
#include "vk_internal.h"

typedef struct { ATTENTION_FWD_PUSH } attention_fwd_push;
typedef struct { ATTENTION_BWD_DELTA_PUSH } attention_bwd_delta_push;
typedef struct { ATTENTION_BWD_DQ_PUSH } attention_bwd_dq_push;
typedef struct { ATTENTION_BWD_DKV_PUSH } attention_bwd_dkv_push;

/* The fields the three tiled kernels' push blocks share, for batch rows from b0. */
#define ATTN_PUSH(a, b0)                                                                                    \
    {.heads = vk_u32((a)->heads), .kv_heads = vk_u32(kv_heads(a)), .tq = vk_u32((a)->tq),                  \
     .tk = vk_u32((a)->tk), .causal = (a)->causal != 0, .scale = (a)->scale, .dropout = (a)->dropout,      \
     .seed_lo = (u32)(a)->seed, .seed_hi = (u32)((a)->seed >> 32), .stream_lo = (u32)(a)->stream,          \
     .stream_hi = (u32)((a)->stream >> 32), .b0 = vk_u32(b0)}

static int64_t kv_heads(const kiln_attention_args *a) { return a->kv_heads > 0 ? a->kv_heads : a->heads; }

enum { ATTN_FWD, ATTN_DQ, ATTN_DKV };

/* A tiled kernel's shape, its specialization constants 0..3 (shaders/attention.glsl): wg
 * invocations, r rows owned by a work-group, tiles of c rows of the other side. */
typedef struct attn_tiles {
    uint32_t wg, r, c;
} attn_tiles;

/* The floats of shared memory each kernel declares: its arrays' sizes, with rows of hd + 1
 * and score rows of c + 1 floats, and attn_red[wg]. */
static uint64_t shared_floats(int kernel, uint64_t wg, uint64_t r, uint64_t c, uint64_t hd) {
    uint64_t ds = hd + 1, ps = c + 1;
    switch (kernel) {
    case ATTN_FWD: return r * ds + 2 * c * ds + r * ps + wg;         /* Qs, Ks, Vs, Ps */
    case ATTN_DQ: return 2 * r * ds + 2 * c * ds + r * ps + wg;      /* Qs, Dys, Ks, Vs, Ps */
    default: return 2 * r * ds + 2 * c * ds + 2 * r * ps + 2 * c + wg; /* Ks, Vs, Qs, Dys, Ps, Dss, Lses, Deltas */
    }
}

/* The largest tiles that fit the device: on a GPU 128 invocations, 8 per row of 16 owned
 * rows; on a CPU device 32 invocations, one per owned row (shaders/attention.glsl says why);
 * tiles of 32 rows. Where they do not fit, the tile halves down to 8 rows, then the owned
 * rows, then the tile again (head dim 256 in 16 KiB takes 2 x 2). */
static kiln_status plan(const vk_dev *d, int kernel, int64_t hd, attn_tiles *t) {
    uint32_t cap = d->caps.max_wg_invocations < d->caps.max_wg_size[0] ? d->caps.max_wg_invocations
                                                                       : d->caps.max_wg_size[0];
    int cpu = d->dclass == VK_CLASS_CPU;
    uint32_t wg = cpu ? 32 : 128;
    while (wg > cap) wg /= 2;
    *t = (attn_tiles){.wg = wg, .r = cpu ? wg : (wg < 16 ? wg : 16), .c = 32};
    while (shared_floats(kernel, t->wg, t->r, t->c, (uint64_t)hd) * 4 > d->caps.max_shared_bytes) {
        if (t->c > 8)
            t->c /= 2;
        else if (t->r > 1)
            t->r /= 2;
        else if (t->c > 1)
            t->c /= 2;
        else
            return kiln_set_error(KILN_ERR_UNSUPPORTED,
                                  "vulkan attention: head dim %lld does not fit the %u bytes of shared memory of %s",
                                  (long long)hd, d->caps.max_shared_bytes, d->name);
    }
    return KILN_OK;
}

/* Elements of q (y, dy, dq) and of k (v, dk, dv). */
static int64_t q_elems(const kiln_attention_args *a) { return a->batch * a->tq * a->heads * a->head_dim; }
static int64_t kv_elems(const kiln_attention_args *a) { return a->batch * a->tk * kv_heads(a) * a->head_dim; }

/* A tiled kernel's build for a's dtype, its specialization constants (the tiles, the head
 * dim, whether dropout is on) and its grid: the owned row tiles, the heads (kv heads for
 * dk and dv), the batch rows. */
static kiln_status tiled(vk_dev *d, vk_shader_id kernel, int which, const kiln_attention_args *a, vk_launch *l) {
    attn_tiles t;
    kiln_status s = vk_variant(d, kernel, a->dtype, &l->shader);
    if (s || (s = plan(d, which, a->head_dim, &t))) return s;
    l->n_spec = 5;
    l->spec[0] = t.wg, l->spec[1] = t.r, l->spec[2] = t.c, l->spec[3] = vk_u32(a->head_dim);
    l->spec[4] = a->dropout > 0;
    int dkv = which == ATTN_DKV;
    l->groups[0] = vk_div_up((uint64_t)(dkv ? a->tk : a->tq), t.r);
    l->groups[1] = vk_u32(dkv ? kv_heads(a) : a->heads);
    l->groups[2] = vk_u32(a->batch);
    return KILN_OK;
}

/* Batch rows per piece: all of them when every operand fits one binding. */
static kiln_status batch_piece(const vk_dev *d, const kiln_attention_args *a, int64_t *per) {
    int64_t es = vk_elem(a->dtype), hd = a->head_dim;
    int64_t q_bytes = a->tq * a->heads * hd * es, kv_bytes = a->tk * kv_heads(a) * hd * es;
    int64_t stats_bytes = 2 * a->heads * a->tq * 4, widest = q_bytes;
    if (kv_bytes > widest) widest = kv_bytes;
    if (stats_bytes > widest) widest = stats_bytes;
    return vk_rows_per_piece(d, a->batch, widest, per);
}

/* The arguments of batch rows b0 .. b0 + n - 1: every operand moved to its first row. */
static kiln_attention_args piece_of(const kiln_attention_args *a, int64_t b0, int64_t n) {
    int64_t es = vk_elem(a->dtype), q_row = a->tq * a->heads * a->head_dim * es;
    int64_t kv_row = a->tk * kv_heads(a) * a->head_dim * es, stat_row = a->heads * a->tq * 4;
    kiln_attention_args p = *a;
    p.batch = n;
    p.q = vk_ref_at(a->q, b0 * q_row), p.y = vk_ref_at(a->y, b0 * q_row);
    p.dy = vk_ref_at(a->dy, b0 * q_row), p.dq = vk_ref_at(a->dq, b0 * q_row);
    p.k = vk_ref_at(a->k, b0 * kv_row), p.v = vk_ref_at(a->v, b0 * kv_row);
    p.dk = vk_ref_at(a->dk, b0 * kv_row), p.dv = vk_ref_at(a->dv, b0 * kv_row);
    p.lse = vk_ref_at(a->lse, b0 * stat_row), p.delta = vk_ref_at(a->delta, b0 * stat_row);
    p.lengths = vk_ref_at(a->lengths, b0 * 4);
    return p;
}

typedef kiln_status (*piece_fn)(vk_dev *d, const kiln_attention_args *piece, int64_t b0);

static kiln_status in_pieces(vk_dev *d, const kiln_attention_args *a, piece_fn run) {
    if (a->batch == 0 || a->tq == 0 || a->heads == 0) return KILN_OK;
    int64_t per;
    kiln_status s = batch_piece(d, a, &per);
    for (int64_t b0 = 0; !s && b0 < a->batch; b0 += per) {
        kiln_attention_args p = piece_of(a, b0, a->batch - b0 < per ? a->batch - b0 : per);
        s = run(d, &p, b0);
    }
    return s;
}

static kiln_status fwd_piece(vk_dev *d, const kiln_attention_args *a, int64_t b0) {
    attention_fwd_push p = ATTN_PUSH(a, b0);
    vk_launch l = {.n_ops = VK_OPS(p), .push = &p, .push_bytes = sizeof p};
    kiln_status s = tiled(d, VK_SHADER_attention_fwd, ATTN_FWD, a, &l);
    if (s) return s;
    uint32_t es = vk_elem(a->dtype);
    int64_t nq = q_elems(a), nk = kv_elems(a);
    l.ops[VK_OP(attention_fwd, q)] = vk_in(a->q, nq, es);
    l.ops[VK_OP(attention_fwd, k)] = vk_in(a->k, nk, es);
    l.ops[VK_OP(attention_fwd, v)] = vk_in(a->v, nk, es);
    l.ops[VK_OP(attention_fwd, lengths)] = vk_in(a->lengths, a->batch, 4);
    l.ops[VK_OP(attention_fwd, y)] = vk_out(a->y, nq, es);
    l.ops[VK_OP(attention_fwd, lse)] = vk_out(a->lse, a->batch * a->heads * a->tq, 4);
    return vk_dispatch(d, &l);
}

kiln_status vk_attention_fwd(void *dev, const kiln_attention_args *a) { return in_pieces(vk_of(dev), a, fwd_piece); }

/* delta = dy . y per query row, into a->delta. */
static kiln_status delta_piece(vk_dev *d, const kiln_attention_args *a) {
    vk_shader_id shader;
    kiln_status s = vk_variant(d, VK_SHADER_attention_bwd_delta, a->dtype, &shader);
    if (s) return s;
    uint32_t es = vk_elem(a->dtype);
    int64_t rows = a->batch * a->tq * a->heads;
    attention_bwd_delta_push p = {
        .rows = vk_u32(rows), .heads = vk_u32(a->heads), .tq = vk_u32(a->tq), .head_dim = vk_u32(a->head_dim)};
    vk_launch l = {.shader = shader, .n_ops = VK_OPS(p), .push = &p, .push_bytes = sizeof p, .n_spec = 1};
    l.spec[0] = vk_row_wg(d, a->head_dim);
    l.ops[VK_OP(attention_bwd_delta, y)] = vk_in(a->y, rows * a->head_dim, es);
    l.ops[VK_OP(attention_bwd_delta, dy)] = vk_in(a->dy, rows * a->head_dim, es);
    l.ops[VK_OP(attention_bwd_delta, delta)] = vk_out(a->delta, rows, 4);
    vk_grid_1d(d, (uint64_t)rows, l.groups);
    return vk_dispatch(d, &l);
}

static kiln_status dq_piece(vk_dev *d, const kiln_attention_args *a, int64_t b0) {
    kiln_status s = delta_piece(d, a);
    if (s || !vk_has(a->dq)) return s;
    attention_bwd_dq_push p = ATTN_PUSH(a, b0);
    vk_launch l = {.n_ops = VK_OPS(p), .push = &p, .push_bytes = sizeof p};
    if ((s = tiled(d, VK_SHADER_attention_bwd_dq, ATTN_DQ, a, &l))) return s;
    uint32_t es = vk_elem(a->dtype);
    int64_t nq = q_elems(a), nk = kv_elems(a), rows = a->batch * a->heads * a->tq;
    l.ops[VK_OP(attention_bwd_dq, q)] = vk_in(a->q, nq, es);
    l.ops[VK_OP(attention_bwd_dq, k)] = vk_in(a->k, nk, es);
    l.ops[VK_OP(attention_bwd_dq, v)] = vk_in(a->v, nk, es);
    l.ops[VK_OP(attention_bwd_dq, lengths)] = vk_in(a->lengths, a->batch, 4);
    l.ops[VK_OP(attention_bwd_dq, dy)] = vk_in(a->dy, nq, es);
    l.ops[VK_OP(attention_bwd_dq, lse)] = vk_in(a->lse, rows, 4);
    l.ops[VK_OP(attention_bwd_dq, delta)] = vk_in(a->delta, rows, 4);
    l.ops[VK_OP(attention_bwd_dq, dq)] = vk_out(a->dq, nq, es);
    return vk_dispatch(d, &l);
}

kiln_status vk_attention_bwd_dq(void *dev, const kiln_attention_args *a) { return in_pieces(vk_of(dev), a, dq_piece); }

/* stats[2 row] = lse[row], stats[2 row + 1] = delta[row]: what attention_bwd_dkv reads. */
static kiln_status interleave_stats(vk_dev *d, const kiln_attention_args *a, kiln_ref stats) {
    int64_t rows = a->batch * a->heads * a->tq;
    kiln_copy_block_args c = {.src = a->lse, .dst = stats, .outer = rows, .inner = 1, .src_axis = 1, .dst_axis = 2,
                              .src_start = 0, .dst_start = 0, .len = 1, .accumulate = 0, .dtype = KILN_F32};
    kiln_status s = vk_copy_block(d, &c);
    c.src = a->delta, c.dst_start = 1;
    return s ? s : vk_copy_block(d, &c);
}

static kiln_status dkv_piece(vk_dev *d, const kiln_attention_args *a, int64_t b0) {
    if (a->tk == 0) return KILN_OK;
    attention_bwd_dkv_push p = ATTN_PUSH(a, b0);
    vk_launch l = {.n_ops = VK_OPS(p), .push = &p, .push_bytes = sizeof p};
    kiln_status s = tiled(d, VK_SHADER_attention_bwd_dkv, ATTN_DKV, a, &l);
    int64_t rows = a->batch * a->heads * a->tq;
    kiln_ref stats;
    if (s || (s = vk_scratch(d, (size_t)rows * 8, &stats))) return s;
    s = interleave_stats(d, a, stats);
    uint32_t es = vk_elem(a->dtype);
    int64_t nq = q_elems(a), nk = kv_elems(a);
    l.ops[VK_OP(attention_bwd_dkv, q)] = vk_in(a->q, nq, es);
    l.ops[VK_OP(attention_bwd_dkv, k)] = vk_in(a->k, nk, es);
    l.ops[VK_OP(attention_bwd_dkv, v)] = vk_in(a->v, nk, es);
    l.ops[VK_OP(attention_bwd_dkv, lengths)] = vk_in(a->lengths, a->batch, 4);
    l.ops[VK_OP(attention_bwd_dkv, dy)] = vk_in(a->dy, nq, es);
    l.ops[VK_OP(attention_bwd_dkv, stats)] = vk_in(stats, 2 * rows, 4);
    l.ops[VK_OP(attention_bwd_dkv, dk)] = vk_out(a->dk, nk, es);
    l.ops[VK_OP(attention_bwd_dkv, dv)] = vk_out(a->dv, nk, es);
    if (!s) s = vk_dispatch(d, &l);
    vk_buf_release(d, stats.buf);
    return s;
}

kiln_status vk_attention_bwd_dkv(void *dev, const kiln_attention_args *a) {
    if (!vk_has(a->dk) && !vk_has(a->dv)) return KILN_OK;
    return in_pieces(vk_of(dev), a, dkv_piece);
}
