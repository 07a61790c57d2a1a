/* Fused attention (FlashAttention-2): y = softmax(mask(scale q k^T / T)) v per head, with
 * dropout on the probabilities, without ever materializing the [Tq, Tk] scores. The
 * forward keeps y and one f32 log-sum-exp per query row and head (lse); the backward
 * recomputes the probabilities from them, in two kernels (dq, then dk and dv) so that no
 * kernel needs float atomics.
 *
 * Dropout draws the mask the unfused path draws: one stream per call, taken in training
 * mode when the probability is above 0 (where the model calls kiln_dropout on the
 * probabilities), element (b, h, i, j) of the [B, H, Tq, Tk] probabilities keyed by its
 * flat index. */
#include <math.h>

#include "core/internal.h"
#include "ops/op_grad.h"

/* The geometry of q [B, Tq, H hd] and k [B, Tk, KVH hd]; the caller sets the references. */
static kiln_attention_args attention_args(const kiln_tensor *q, const kiln_tensor *k, int64_t heads,
                                          int64_t kv_heads, float scale, int causal, float dropout) {
    kiln_attention_args a = {0};
    a.batch = q->shape[0];
    a.tq = q->shape[1];
    a.tk = k->shape[1];
    a.heads = heads;
    a.kv_heads = kv_heads;
    a.head_dim = q->shape[2] / heads;
    a.scale = scale;
    a.causal = causal;
    a.dropout = dropout;
    a.dtype = q->dtype;
    return a;
}

/* in = {q, k, v}; saved = {lse, key lengths or NULL}; f = {scale / temperature, dropout};
 * i = {heads, kv heads, causal, seed, stream}. */
static kiln_status attention_backward(kiln_tape_rec *rec) {
    kiln_tensor *q = rec->in[0], *k = rec->in[1], *v = rec->in[2], *lse = rec->saved[0];
    kiln_attention_args a = attention_args(q, k, rec->i[0], rec->i[1], rec->f[0], (int)rec->i[2], rec->f[1]);
    a.seed = (uint64_t)rec->i[3];
    a.stream = (uint64_t)rec->i[4];
    kiln_tensor *dq, *dk, *dv;
    if (op_grad_to_add(q, &dq) || op_grad_to_add(k, &dk) || op_grad_to_add(v, &dv)) return kiln_error_status();
    if (!dq && !dk && !dv) return KILN_OK;
    kiln_tensor *delta = kiln_tensor_temp(q->ctx, KILN_F32, 3, lse->shape);
    if (!delta) return kiln_error_status();
    a.q = kiln_ref_of(q), a.k = kiln_ref_of(k), a.v = kiln_ref_of(v);
    a.lengths = kiln_ref_of(rec->saved[1]);
    a.y = kiln_ref_of(rec->out), a.lse = kiln_ref_of(lse);
    a.dy = kiln_ref_of(rec->out->grad), a.delta = kiln_ref_of(delta);
    a.dq = kiln_ref_of(dq), a.dk = kiln_ref_of(dk), a.dv = kiln_ref_of(dv);
    /* bwd_dq writes delta even when q needs no gradient: bwd_dkv reads it */
    kiln_status s = KILN_CALL(q->ctx, attention_bwd_dq, &a);
    if (s || (!dk && !dv)) return s;
    return KILN_CALL(q->ctx, attention_bwd_dkv, &a);
}

/* q, k and v: one floating dtype, [B, T, heads hd] with q's hd <= the kernels' limit and
 * k, v of one shape over KVH heads of that width. */
static kiln_status check_tensors(const kiln_tensor *q, const kiln_tensor *k, const kiln_tensor *v, int64_t H,
                                 int64_t KVH) {
    char sq[64], sk[64], sv[64];
    kiln_status s = kiln_check_float("attention", q, "q");
    if (!s) s = kiln_check_same_dtype("attention", q, "q", k, "k");
    if (!s) s = kiln_check_same_dtype("attention", q, "q", v, "v");
    if (s) return s;
    if (k->ctx != q->ctx || v->ctx != q->ctx)
        return kiln_set_error(KILN_ERR_ARGUMENT, "attention: q, k and v must belong to one context");
    kiln_shape_str(q, sq, sizeof sq), kiln_shape_str(k, sk, sizeof sk), kiln_shape_str(v, sv, sizeof sv);
    if (q->ndim != 3 || k->ndim != 3 || v->ndim != 3)
        return kiln_set_error(KILN_ERR_SHAPE, "attention: q, k and v must be [B, T, heads*head_dim], got q %s, k %s, v %s",
                              sq, sk, sv);
    if (q->shape[2] % H)
        return kiln_set_error(KILN_ERR_SHAPE, "attention: q's width %lld is not a multiple of n_head %lld (q %s)",
                              (long long)q->shape[2], (long long)H, sq);
    int64_t hd = q->shape[2] / H;
    if (hd > KILN_ABI_ATTN_HEAD_DIM_MAX)
        return kiln_set_error(KILN_ERR_SHAPE, "attention: head_dim %lld is above the limit %d (q %s, n_head %lld)",
                              (long long)hd, KILN_ABI_ATTN_HEAD_DIM_MAX, sq, (long long)H);
    if (!kiln_same_shape(k, v))
        return kiln_set_error(KILN_ERR_SHAPE, "attention: k and v must have one shape, got k %s, v %s", sk, sv);
    if (k->shape[0] != q->shape[0] || k->shape[2] != KVH * hd)
        return kiln_set_error(KILN_ERR_SHAPE,
                              "attention: k must be [%lld, Tk, %lld] (n_kv_head %lld x head_dim %lld), got %s",
                              (long long)q->shape[0], (long long)(KVH * hd), (long long)KVH, (long long)hd, sk);
    return KILN_OK;
}

/* Heads, scale, temperature, dropout and key lengths; *heads, *kv_heads, *scale (divided by
 * the temperature) receive the resolved values. */
static kiln_status check_options(const kiln_tensor *q, const kiln_attention_opts *o, int64_t *heads,
                                 int64_t *kv_heads) {
    char sl[64];
    if (!o || o->n_head <= 0)
        return kiln_set_error(KILN_ERR_ARGUMENT, "attention: n_head must be positive, got %d", o ? o->n_head : 0);
    int kvh = o->n_kv_head ? o->n_kv_head : o->n_head;
    if (kvh < 0 || o->n_head % kvh)
        return kiln_set_error(KILN_ERR_ARGUMENT, "attention: n_head %d is not a multiple of n_kv_head %d", o->n_head,
                              kvh);
    if (!isfinite(o->scale))
        return kiln_set_error(KILN_ERR_ARGUMENT, "attention: scale must be finite, got %g", o->scale);
    if (o->temperature < 0 || !isfinite(o->temperature))
        return kiln_set_error(KILN_ERR_ARGUMENT, "attention: temperature must be positive and finite (0 means 1), got %g",
                              o->temperature);
    if (!(o->dropout >= 0.0f && o->dropout < 1.0f))
        return kiln_set_error(KILN_ERR_ARGUMENT, "attention: dropout must be in [0, 1), got %g", o->dropout);
    const kiln_tensor *len = o->key_lengths;
    if (len && (len->dtype != KILN_I32 || len->ndim != 1 || len->shape[0] != q->shape[0]))
        return kiln_set_error(KILN_ERR_SHAPE, "attention: key_lengths must be i32 [%lld] (one length per batch), got %s %s",
                              (long long)q->shape[0], kiln_dtype_name(len->dtype), kiln_shape_str(len, sl, sizeof sl));
    if (len && len->ctx != q->ctx)
        return kiln_set_error(KILN_ERR_ARGUMENT, "attention: key_lengths belongs to another context");
    *heads = o->n_head;
    *kv_heads = kvh;
    return KILN_OK;
}

kiln_tensor *kiln_attention(kiln_tensor *q, kiln_tensor *k, kiln_tensor *v, const kiln_attention_opts *opts) {
    if (!kiln_inputs_ok(3, q, k, v)) return NULL;
    int64_t H = 0, KVH = 0;
    if (check_options(q, opts, &H, &KVH) || check_tensors(q, k, v, H, KVH)) return NULL;
    int64_t hd = q->shape[2] / H;
    float scale = opts->scale != 0 ? opts->scale : 1.0f / sqrtf((float)hd);
    float temperature = opts->temperature != 0 ? opts->temperature : 1.0f;
    kiln_ctx *ctx = q->ctx;
    /* the stream kiln_dropout would take on the unfused path's probabilities */
    float dropout = ctx->training ? opts->dropout : 0.0f;
    uint64_t stream = dropout > 0 ? ctx->rng_stream++ : 0;
    kiln_attention_args a = attention_args(q, k, H, KVH, scale / temperature, opts->causal != 0, dropout);
    a.seed = ctx->seed;
    a.stream = stream;
    int64_t lse_shape[3] = {q->shape[0], H, q->shape[1]};
    kiln_tensor *y = kiln_op_output(ctx, q->dtype, 3, q->shape);
    kiln_tensor *lse = y ? kiln_op_output(ctx, KILN_F32, 3, lse_shape) : NULL;
    if (!lse) return NULL;
    a.q = kiln_ref_of(q), a.k = kiln_ref_of(k), a.v = kiln_ref_of(v);
    a.lengths = kiln_ref_of(opts->key_lengths);
    a.y = kiln_ref_of(y), a.lse = kiln_ref_of(lse);
    if (KILN_CALL(ctx, attention_fwd, &a)) return NULL;
    kiln_tensor *ins[3] = {q, k, v};
    if (kiln_needs_tape(ctx, 3, ins)) {
        kiln_tape_rec *rec = kiln_tape_push(ctx, attention_backward, y, 3, ins);
        if (!rec) return NULL;
        rec->saved[0] = lse;
        rec->saved[1] = opts->key_lengths;
        rec->f[0] = a.scale;
        rec->f[1] = dropout;
        rec->i[0] = H, rec->i[1] = KVH, rec->i[2] = a.causal;
        rec->i[3] = (int64_t)a.seed, rec->i[4] = (int64_t)stream;
    }
    return y;
}
