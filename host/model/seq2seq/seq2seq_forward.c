/* The encoder-decoder's forward pass for training and evaluation (seq2seq.h): whole
 * sequences at once, padding masked through the lengths. */
#include <math.h>

#include "model/seq2seq/seq2seq.h"

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

kiln_tensor *seq2seq_encode(seq2seq_model *m, kiln_tensor *src, kiln_tensor *src_len, float dropout) {
    if (check_ids(m, src, "the source")) return NULL;
    block_pass pass = {.dropout = dropout, .key_lengths = src_len};
    kiln_tensor *x = embed(m, m->src_embed, src, 0, dropout);
    for (int l = 0; l < m->cfg.enc_layers && x; l++) x = block_forward(&m->enc_block, &m->enc[l], l, x, &pass, NULL, NULL);
    if (x && m->enc_ln_w) x = kiln_layernorm(x, m->enc_ln_w, m->enc_ln_b, m->cfg.ln_eps);
    return x;
}

kiln_tensor *seq2seq_decode(seq2seq_model *m, kiln_tensor *memory, kiln_tensor *src_len, kiln_tensor *tgt_in,
                            float dropout) {
    if (!memory || check_ids(m, tgt_in, "the decoder input")) return NULL;
    block_pass pass = {.dropout = dropout, .memory = memory, .memory_lengths = src_len};
    kiln_tensor *y = embed(m, m->tgt_embed, tgt_in, 0, dropout);
    for (int l = 0; l < m->cfg.dec_layers && y; l++) y = block_forward(&m->dec_block, &m->dec[l], l, y, &pass, NULL, NULL);
    if (y && m->dec_ln_w) y = kiln_layernorm(y, m->dec_ln_w, m->dec_ln_b, m->cfg.ln_eps);
    return kiln_matmul(y, m->tgt_embed, NULL, 0, 1);
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

kiln_tensor *seq2seq_batch_loss(seq2seq_model *m, const seq2seq_batch *b, float dropout, float label_smoothing) {
    int64_t src_shape[2] = {b->rows, b->src_width}, tgt_shape[2] = {b->rows, b->tgt_width}, rows = b->rows;
    kiln_tensor *src = upload_i32(m->ctx, b->src, 2, src_shape);
    kiln_tensor *src_len = upload_i32(m->ctx, b->src_len, 1, &rows);
    kiln_tensor *tgt_in = upload_i32(m->ctx, b->tgt_in, 2, tgt_shape);
    kiln_tensor *tgt_out = upload_i32(m->ctx, b->tgt_out, 2, tgt_shape);
    if (!src || !src_len || !tgt_in || !tgt_out) return NULL;
    return seq2seq_loss(m, src, src_len, tgt_in, tgt_out, dropout, label_smoothing);
}
