/* The GPT forward pass, for training (all positions at once, recorded on the tape) and for
 * decoding (new positions only, attending over a KV cache). Both run the same block code:
 * the only difference is where attention's keys and values come from. */
#include <math.h>
#include <stdlib.h>

#include "model/gpt.h"

/* Dropout only where it does something: in evaluation the op is not even recorded. */
static kiln_tensor *maybe_dropout(gpt_model *m, kiln_tensor *x, float p) {
    if (!x || p <= 0.0f || !kiln_training(m->ctx)) return x;
    return kiln_dropout(x, p);
}

/* Appends the new positions' keys or values [1, T, C] to one layer's cache and returns a
 * [1, Tk, C] view of everything cached so far. */
static kiln_tensor *cache_append(kiln_tensor *store, kiln_tensor *fresh, int64_t pos0,
                                 int64_t T) {
    if (!fresh) return NULL;
    kiln_tensor *slot = kiln_view_rows(store, pos0, T);
    if (!slot || kiln_copy(slot, fresh)) return NULL;
    int64_t shape[3] = {1, pos0 + T, store->shape[1]};
    return kiln_reshape(kiln_view_rows(store, 0, pos0 + T), 3, shape);
}

/* Causal self-attention of x_ln [B, T, C] at positions [pos0, pos0 + T). */
static kiln_tensor *attention(gpt_model *m, int layer, kiln_tensor *x_ln, int64_t pos0,
                              gpt_kv_cache *cache, float p) {
    if (!x_ln) return NULL;
    const gpt_block *b = &m->blocks[layer];
    int64_t C = m->cfg.n_embd, H = m->cfg.n_head, T = x_ln->shape[1];
    kiln_tensor *qkv = kiln_matmul(x_ln, b->attn_w, b->attn_b, 0, 0); /* [B, T, 3C] */
    kiln_tensor *q = kiln_slice(qkv, -1, 0, C);
    kiln_tensor *k = kiln_slice(qkv, -1, C, C);
    kiln_tensor *v = kiln_slice(qkv, -1, 2 * C, C);
    if (cache) {
        k = cache_append(cache->k[layer], k, pos0, T);
        v = cache_append(cache->v[layer], v, pos0, T);
    }
    kiln_tensor *qh = kiln_split_heads(q, (int)H); /* [B, H, T, D] */
    kiln_tensor *kh = kiln_split_heads(k, (int)H); /* [B, H, Tk, D] */
    kiln_tensor *vh = kiln_split_heads(v, (int)H);
    kiln_tensor *scores = kiln_matmul(qh, kh, NULL, 0, 1); /* [B, H, T, Tk] */
    /* The causal mask is offset by Tk - T = pos0: the new queries see every cached key. */
    kiln_softmax_opts opts = {.scale = 1.0f / sqrtf((float)(C / H)), .causal = 1};
    kiln_tensor *probs = maybe_dropout(m, kiln_softmax(scores, &opts), p);
    kiln_tensor *y = kiln_merge_heads(kiln_matmul(probs, vh, NULL, 0, 0)); /* [B, T, C] */
    return kiln_matmul(y, b->attn_proj_w, b->attn_proj_b, 0, 0);
}

static kiln_tensor *mlp(const gpt_block *b, kiln_tensor *x_ln) {
    kiln_tensor *h = kiln_gelu(kiln_matmul(x_ln, b->fc_w, b->fc_b, 0, 0));
    return kiln_matmul(h, b->mlp_proj_w, b->mlp_proj_b, 0, 0);
}

/* The residual stream after the last block, [B, T, C]. */
static kiln_tensor *trunk(gpt_model *m, kiln_tensor *ids, int64_t pos0, gpt_kv_cache *cache,
                          float p) {
    const gpt_config *c = &m->cfg;
    int64_t T = ids->shape[1];
    kiln_tensor *x = kiln_add(kiln_embedding(m->wte, ids), kiln_view_rows(m->wpe, pos0, T));
    x = maybe_dropout(m, x, p);
    for (int l = 0; l < c->n_layer; l++) {
        const gpt_block *b = &m->blocks[l];
        kiln_tensor *a = attention(m, l, kiln_layernorm(x, b->ln_1_w, b->ln_1_b, c->ln_eps),
                                   pos0, cache, p);
        x = kiln_add(x, maybe_dropout(m, a, p));
        kiln_tensor *f = mlp(b, kiln_layernorm(x, b->ln_2_w, b->ln_2_b, c->ln_eps));
        x = kiln_add(x, maybe_dropout(m, f, p));
        if (!x) return NULL;
    }
    return x;
}

/* ln_f, then the tied output projection: logits = x wte^T. */
static kiln_tensor *head(gpt_model *m, kiln_tensor *x) {
    kiln_tensor *h = kiln_layernorm(x, m->ln_f_w, m->ln_f_b, m->cfg.ln_eps);
    return kiln_matmul(h, m->wte, NULL, 0, 1);
}

/* Callers validate user input first; this catches a caller's mistake with a clear message
 * (the engine's last error, which the caller reports) rather than one about view bounds. */
static kiln_status check_token_ids(const gpt_model *m, const kiln_tensor *ids, int64_t pos0) {
    if (ids->ndim != 2 || ids->dtype != KILN_I32)
        return kiln_set_error(KILN_ERR_ARGUMENT, "gpt: token ids must be an i32 [B, T] tensor");
    if (pos0 + ids->shape[1] > m->cfg.n_positions)
        return kiln_set_error(KILN_ERR_RANGE, "gpt: positions up to %lld exceed the context of %d",
                              (long long)(pos0 + ids->shape[1]), m->cfg.n_positions);
    return KILN_OK;
}

kiln_tensor *gpt_forward(gpt_model *m, kiln_tensor *ids, float dropout) {
    if (!ids || check_token_ids(m, ids, 0)) return NULL;
    kiln_tensor *x = trunk(m, ids, 0, NULL, dropout);
    return x ? head(m, x) : NULL;
}

kiln_tensor *gpt_loss(gpt_model *m, kiln_tensor *ids, kiln_tensor *targets, float dropout,
                      kiln_tensor **logits_out) {
    kiln_tensor *logits = gpt_forward(m, ids, dropout);
    if (logits_out) *logits_out = logits;
    return kiln_cross_entropy(logits, targets, 0.0f, -1);
}

gpt_kv_cache *gpt_kv_new(gpt_model *m) {
    gpt_kv_cache *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->n_layer = m->cfg.n_layer;
    c->k = calloc((size_t)c->n_layer, sizeof *c->k);
    c->v = calloc((size_t)c->n_layer, sizeof *c->v);
    if (!c->k || !c->v) {
        gpt_kv_free(c);
        return NULL;
    }
    for (int l = 0; l < c->n_layer; l++) {
        /* in the model's dtype: attention multiplies the cached keys with its queries */
        c->k[l] = kiln_tensor_2d(m->ctx, m->dtype, m->cfg.n_positions, m->cfg.n_embd);
        c->v[l] = kiln_tensor_2d(m->ctx, m->dtype, m->cfg.n_positions, m->cfg.n_embd);
        if (!c->k[l] || !c->v[l]) {
            gpt_kv_free(c);
            return NULL;
        }
    }
    return c;
}

void gpt_kv_free(gpt_kv_cache *c) {
    if (!c) return;
    for (int l = 0; l < c->n_layer; l++) {
        /* kiln_tensor_free ignores NULL: a partly built cache frees cleanly */
        if (c->k) kiln_tensor_free(c->k[l]);
        if (c->v) kiln_tensor_free(c->v[l]);
    }
    free(c->k);
    free(c->v);
    free(c);
}

kiln_tensor *gpt_forward_cached(gpt_model *m, gpt_kv_cache *cache, const int32_t *ids, int n) {
    int64_t shape[2] = {1, n};
    kiln_tensor *t = kiln_tensor_temp(m->ctx, KILN_I32, 2, shape);
    if (!t || kiln_upload(t, ids, (size_t)n * sizeof(int32_t))) return NULL;
    if (check_token_ids(m, t, cache->len)) return NULL;
    kiln_tensor *x = trunk(m, t, cache->len, cache, 0.0f);
    /* Only the last position's logits are needed for the next token. */
    kiln_tensor *logits = head(m, kiln_slice(x, 1, n - 1, 1));
    if (logits) cache->len += n;
    return logits;
}
