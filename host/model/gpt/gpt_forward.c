/* The GPT forward pass, for training (all positions at once, recorded on the tape) and for
 * decoding (new positions only, attending over a KV cache). Both run the same block code:
 * the only difference is where attention's keys and values come from. */
#include <math.h>
#include <stdlib.h>

#include "model/gpt/gpt.h"
#include "model/gpt/gpt_internal.h"

/* A quantized token embedding's rows for ids [B, T], dequantized on the host from the
 * model's blocks: one row per token, never the table. The ids are read from the device only
 * when the caller has no host copy (known: the decoding step's own). */
static kiln_tensor *quantized_embedding(gpt_model *m, kiln_tensor *ids, const int32_t *known) {
    const gpt_quantized *q = m->quant;
    int64_t n = kiln_numel(ids), C = m->cfg.n_embd;
    int32_t *read = known ? NULL : malloc((size_t)n * sizeof *read);
    float *rows = malloc((size_t)(n * C) * sizeof *rows);
    const int32_t *host_ids = known ? known : read;
    kiln_tensor *out = NULL;
    if (!host_ids || !rows) {
        kiln_set_error(KILN_ERR_MEMORY, "out of host memory for the embedding");
    } else if (known || kiln_download(ids, read, (size_t)n * sizeof *read) == KILN_OK) {
        kiln_status s = KILN_OK;
        for (int64_t i = 0; i < n && s == KILN_OK; i++)
            s = host_ids[i] < 0 || host_ids[i] >= m->cfg.vocab_size
                    ? kiln_set_error(KILN_ERR_RANGE, "token id %d is outside the vocabulary of %d", host_ids[i],
                                     m->cfg.vocab_size)
                    : kiln_dequantize_row(q->embd_format, q->embd + (size_t)host_ids[i] * q->embd_row_bytes, C,
                                          rows + i * C);
        int64_t shape[3] = {ids->shape[0], ids->shape[1], C};
        if (s == KILN_OK && (out = kiln_tensor_temp(m->ctx, KILN_F32, 3, shape)) &&
            kiln_upload(out, rows, (size_t)(n * C) * sizeof *rows))
            out = NULL;
        if (out && m->dtype == KILN_F16) out = kiln_cast(out, KILN_F16);
    }
    free(read);
    free(rows);
    return out;
}

/* The residual stream after the last block, [B, T, C]. `pass` carries what the blocks
 * share (positions, dropout, RealFormer's scores, what a caller wants captured). */
kiln_tensor *gpt_trunk(gpt_model *m, kiln_tensor *ids, const int32_t *host_ids, gpt_kv_cache *cache,
                       block_pass *pass) {
    int64_t T = ids->shape[1];
    kiln_tensor *tokens =
        m->quant && m->quant->embd ? quantized_embedding(m, ids, host_ids) : kiln_embedding(m->wte, ids);
    /* learned positions are added here; rotary ones turn q and k in every block */
    kiln_tensor *x = m->wpe ? kiln_add(tokens, kiln_view_rows(m->wpe, pass->pos0, T)) : tokens;
    pass->rope_freqs = m->rope_freqs;
    if (x && pass->dropout > 0.0f && kiln_training(m->ctx)) x = kiln_dropout(x, pass->dropout);
    for (int l = 0; l < m->cfg.n_layer && x; l++)
        x = block_forward(&m->block, &m->blocks[l], l, x, pass, cache ? cache->k[l] : NULL,
                          cache ? cache->v[l] : NULL);
    return x;
}

/* ln_f (Pre-LN only), then the output projection: logits = x wte^T (tied) or x lm_head^T. */
static kiln_tensor *head(gpt_model *m, kiln_tensor *x) {
    if (m->ln_f_w) x = block_norm_apply(&m->block.o, x, m->ln_f_w, m->ln_f_b, m->cfg.ln_eps);
    if (m->quant && m->quant->head) return kiln_matmul_q(x, m->quant->head, NULL);
    return kiln_matmul(x, m->lm_head ? m->lm_head : m->wte, NULL, 0, 1);
}

/* Callers validate user input first; this catches a caller's mistake with a clear message
 * (the engine's last error, which the caller reports) rather than one about view bounds. */
kiln_status gpt_check_token_ids(const gpt_model *m, const kiln_tensor *ids, int64_t pos0) {
    if (ids->ndim != 2 || ids->dtype != KILN_I32)
        return kiln_set_error(KILN_ERR_ARGUMENT, "gpt: token ids must be an i32 [B, T] tensor");
    if (pos0 + ids->shape[1] > m->cfg.n_positions)
        return kiln_set_error(KILN_ERR_RANGE, "gpt: positions up to %lld exceed the context of %d",
                              (long long)(pos0 + ids->shape[1]), m->cfg.n_positions);
    return KILN_OK;
}

kiln_tensor *gpt_forward(gpt_model *m, kiln_tensor *ids, float dropout) {
    if (!ids || gpt_check_token_ids(m, ids, 0)) return NULL;
    block_pass pass = {.dropout = dropout};
    kiln_tensor *x = gpt_trunk(m, ids, NULL, NULL, &pass);
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
    int64_t kw, vw;
    block_cache_widths(&m->block, &kw, &vw);
    for (int l = 0; l < c->n_layer; l++) {
        /* in the model's dtype: attention multiplies the cached keys with its queries */
        c->k[l] = kiln_tensor_2d(m->ctx, m->dtype, m->cfg.n_positions, kw);
        c->v[l] = kiln_tensor_2d(m->ctx, m->dtype, m->cfg.n_positions, vw);
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
    if (gpt_check_token_ids(m, t, cache->len)) return NULL;
    block_pass pass = {.pos0 = cache->len};
    kiln_tensor *x = gpt_trunk(m, t, ids, cache, &pass);
    /* Only the last position's logits are needed for the next token. */
    kiln_tensor *logits = head(m, kiln_slice(x, 1, n - 1, 1));
    if (logits) cache->len += n;
    return logits;
}
