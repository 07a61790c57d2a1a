/* The encoder-decoder's forward pass for training and evaluation (seq2seq.h): whole
 * sequences at once, padding masked through the lengths. */
#include <math.h>

#include "model/seq2seq/seq2seq.h"
#include "model/model_monitor.h"

static kiln_status check_ids(const seq2seq_model *m, const kiln_tensor *ids, const char *what) {
    if (!ids) return kiln_error_status() ? kiln_error_status() : KILN_ERR_ARGUMENT;
    if (ids->ndim != 2 || ids->dtype != KILN_I32)
        return kiln_set_error(KILN_ERR_ARGUMENT, "seq2seq: %s must be an i32 [B, T] tensor", what);
    if (ids->shape[1] > m->cfg.max_len)
        return kiln_set_error(KILN_ERR_RANGE, "seq2seq: %s has %lld positions, the model %d", what,
                              (long long)ids->shape[1], m->cfg.max_len);
    return KILN_OK;
}

/* E[ids] * sqrt(C) + PE rows [pos0, pos0 + T), then dropout in training. */
static kiln_tensor *embed(seq2seq_model *m, kiln_tensor *table, kiln_tensor *ids, int64_t pos0, float dropout) {
    int64_t T = ids->shape[1];
    kiln_tensor *x = kiln_scale(kiln_embedding(table, ids), sqrtf((float)m->cfg.n_embd));
    x = kiln_add(x, kiln_view_rows(m->pe, pos0, T));
    if (x && dropout > 0.0f && kiln_training(m->ctx)) x = kiln_dropout(x, dropout);
    return x;
}

/* The encoder; entropy (or NULL): the probe of its self-attention, one entry per layer. */
static kiln_tensor *encode(seq2seq_model *m, kiln_tensor *src, kiln_tensor *src_len, float dropout,
                           kiln_tensor **entropy) {
    if (check_ids(m, src, "the source")) return NULL;
    block_pass pass = {.dropout = dropout, .key_lengths = src_len, .entropy = entropy};
    kiln_tensor *x = embed(m, m->src_embed, src, 0, dropout);
    for (int l = 0; l < m->cfg.enc_layers && x; l++) x = block_forward(&m->enc_block, &m->enc[l], l, x, &pass, NULL, NULL);
    if (x && m->enc_ln_w) x = kiln_layernorm(x, m->enc_ln_w, m->enc_ln_b, m->cfg.ln_eps);
    return x;
}

/* The decoder's logits; entropy (or NULL): the probe of its (causal) self-attention. */
static kiln_tensor *decode(seq2seq_model *m, kiln_tensor *memory, kiln_tensor *src_len, kiln_tensor *tgt_in,
                           float dropout, kiln_tensor **entropy) {
    if (!memory || check_ids(m, tgt_in, "the decoder input")) return NULL;
    block_pass pass = {.dropout = dropout, .memory = memory, .memory_lengths = src_len, .entropy = entropy};
    kiln_tensor *y = embed(m, m->tgt_embed, tgt_in, 0, dropout);
    for (int l = 0; l < m->cfg.dec_layers && y; l++) y = block_forward(&m->dec_block, &m->dec[l], l, y, &pass, NULL, NULL);
    if (y && m->dec_ln_w) y = kiln_layernorm(y, m->dec_ln_w, m->dec_ln_b, m->cfg.ln_eps);
    return kiln_matmul(y, m->tgt_embed, NULL, 0, 1);
}

kiln_tensor *seq2seq_encode(seq2seq_model *m, kiln_tensor *src, kiln_tensor *src_len, float dropout) {
    return encode(m, src, src_len, dropout, NULL);
}

kiln_tensor *seq2seq_decode(seq2seq_model *m, kiln_tensor *memory, kiln_tensor *src_len, kiln_tensor *tgt_in,
                            float dropout) {
    return decode(m, memory, src_len, tgt_in, dropout, NULL);
}

kiln_tensor *seq2seq_loss(seq2seq_model *m, kiln_tensor *src, kiln_tensor *src_len, kiln_tensor *tgt_in,
                          kiln_tensor *tgt_out, float dropout, float label_smoothing) {
    kiln_tensor *memory = seq2seq_encode(m, src, src_len, dropout);
    kiln_tensor *logits = seq2seq_decode(m, memory, src_len, tgt_in, dropout);
    return kiln_cross_entropy(logits, tgt_out, label_smoothing, -1);
}

static kiln_tensor *upload_i32(kiln_ctx *ctx, const int32_t *host, int ndim, const int64_t *shape) {
    kiln_tensor *t = kiln_tensor_temp(ctx, KILN_I32, ndim, shape);
    int64_t n = shape[0] * (ndim > 1 ? shape[1] : 1);
    if (!t || kiln_upload(t, host, (size_t)n * sizeof *host)) return NULL;
    return t;
}

/* A host batch on the device: src, src_len, tgt_in and tgt_out, or 0 when one failed. */
static int upload_batch(seq2seq_model *m, const seq2seq_batch *b, kiln_tensor *t[4]) {
    int64_t src_shape[2] = {b->rows, b->src_width}, tgt_shape[2] = {b->rows, b->tgt_width}, rows = b->rows;
    t[0] = upload_i32(m->ctx, b->src, 2, src_shape);
    t[1] = upload_i32(m->ctx, b->src_len, 1, &rows);
    t[2] = upload_i32(m->ctx, b->tgt_in, 2, tgt_shape);
    t[3] = upload_i32(m->ctx, b->tgt_out, 2, tgt_shape);
    return t[0] && t[1] && t[2] && t[3];
}

kiln_tensor *seq2seq_batch_loss(seq2seq_model *m, const seq2seq_batch *b, float dropout, float label_smoothing) {
    kiln_tensor *t[4];
    if (!upload_batch(m, b, t)) return NULL;
    return seq2seq_loss(m, t[0], t[1], t[2], t[3], dropout, label_smoothing);
}

typedef struct entropy_pass {
    seq2seq_model *m;
    const seq2seq_batch *b;
} entropy_pass;

/* The encoder's layers first, then the decoder's. */
static kiln_status entropy_forward(void *self, kiln_tensor **entropy) {
    entropy_pass *p = self;
    kiln_tensor *t[4];
    if (upload_batch(p->m, p->b, t) &&
        decode(p->m, encode(p->m, t[0], t[1], 0.0f, entropy), t[1], t[2], 0.0f, entropy + p->m->cfg.enc_layers))
        return KILN_OK;
    return kiln_error_status() ? kiln_error_status() : KILN_ERR_ARGUMENT;
}

kiln_status seq2seq_attention_entropy(seq2seq_model *m, const seq2seq_batch *b, double *per_layer, double *lowest) {
    entropy_pass p = {.m = m, .b = b};
    return model_entropy_probe(m->ctx, m->cfg.enc_layers + m->cfg.dec_layers, entropy_forward, &p, per_layer,
                               lowest);
}
