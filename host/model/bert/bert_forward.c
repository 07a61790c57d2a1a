/* BERT's forward pass for training and evaluation (bert.h): whole sequences at once,
 * padding masked through the lengths; the loss runs the head on the masked rows only. */
#include <stdlib.h>

#include "model/bert/bert.h"
#include "model/model_monitor.h"

static kiln_status check_ids(const bert_model *m, const kiln_tensor *ids) {
    if (!ids) return kiln_error_status() ? kiln_error_status() : KILN_ERR_ARGUMENT;
    if (ids->ndim != 2 || ids->dtype != KILN_I32)
        return kiln_set_error(KILN_ERR_ARGUMENT, "bert: the ids must be an i32 [B, T] tensor");
    if (ids->shape[1] > m->cfg.max_len)
        return kiln_set_error(KILN_ERR_RANGE, "bert: a sequence of %lld positions exceeds the model's %d",
                              (long long)ids->shape[1], m->cfg.max_len);
    return KILN_OK;
}

/* The encoder; entropy (or NULL): the probe of each layer's self-attention. */
static kiln_tensor *encode(bert_model *m, kiln_tensor *ids, kiln_tensor *lengths, float dropout,
                           kiln_tensor **entropy) {
    if (check_ids(m, ids)) return NULL;
    int64_t T = ids->shape[1], C = m->cfg.n_embd;
    /* every token is of type 0: its row [C] broadcasts over the positions [T, C] */
    kiln_tensor *type0 = kiln_reshape(kiln_view_rows(m->type, 0, 1), 1, &C);
    kiln_tensor *where = kiln_add(kiln_view_rows(m->pos, 0, T), type0);
    kiln_tensor *x = kiln_add(kiln_embedding(m->word, ids), where);
    x = kiln_layernorm(x, m->emb_ln_w, m->emb_ln_b, m->cfg.ln_eps);
    if (x && dropout > 0.0f && kiln_training(m->ctx)) x = kiln_dropout(x, dropout);
    block_pass pass = {.dropout = dropout, .key_lengths = lengths, .entropy = entropy};
    for (int l = 0; l < m->cfg.n_layer && x; l++) x = block_forward(&m->block, &m->blocks[l], l, x, &pass, NULL, NULL);
    if (x && m->ln_f_w) x = kiln_layernorm(x, m->ln_f_w, m->ln_f_b, m->cfg.ln_eps);
    return x;
}

kiln_tensor *bert_encode(bert_model *m, kiln_tensor *ids, kiln_tensor *lengths, float dropout) {
    return encode(m, ids, lengths, dropout, NULL);
}

kiln_tensor *bert_head(bert_model *m, kiln_tensor *hidden) {
    /* the transform's dense weight is nn.Linear's [out, in]: x W^T + b */
    kiln_tensor *h = kiln_gelu(kiln_matmul(hidden, m->head_w, m->head_b, 0, 1));
    h = kiln_layernorm(h, m->head_ln_w, m->head_ln_b, m->cfg.ln_eps);
    return kiln_matmul(h, m->word, m->out_bias, 0, 1);
}

kiln_tensor *bert_logits(bert_model *m, kiln_tensor *ids, kiln_tensor *lengths, float dropout) {
    kiln_tensor *x = bert_encode(m, ids, lengths, dropout);
    return x ? bert_head(m, x) : NULL;
}

static kiln_tensor *upload_i32(kiln_ctx *ctx, const int32_t *host, int64_t n) {
    kiln_tensor *t = kiln_tensor_temp(ctx, KILN_I32, 1, &n);
    if (!t || kiln_upload(t, host, (size_t)n * sizeof *host)) return NULL;
    return t;
}

kiln_tensor *bert_batch_loss(bert_model *m, const bert_batch *b, float dropout, kiln_tensor **masked_logits) {
    if (masked_logits) *masked_logits = NULL;
    int64_t cells = (int64_t)b->rows * b->width, n = 0;
    for (int64_t i = 0; i < cells; i++) n += b->targets[i] >= 0;
    if (n == 0) {
        kiln_set_error(KILN_ERR_ARGUMENT, "bert: the batch has no masked position to predict");
        return NULL;
    }
    int32_t *rows = malloc((size_t)n * sizeof *rows), *targets = malloc((size_t)n * sizeof *targets);
    if (!rows || !targets) {
        free(rows);
        free(targets);
        kiln_set_error(KILN_ERR_MEMORY, "bert: out of host memory");
        return NULL;
    }
    for (int64_t i = 0, k = 0; i < cells; i++) {
        if (b->targets[i] < 0) continue;
        rows[k] = (int32_t)i;
        targets[k++] = b->targets[i];
    }
    int64_t shape[2] = {b->rows, b->width}, flat[2] = {cells, m->cfg.n_embd}, rows_n = b->rows;
    kiln_tensor *ids = kiln_tensor_temp(m->ctx, KILN_I32, 2, shape);
    if (ids && kiln_upload(ids, b->ids, (size_t)cells * sizeof *b->ids)) ids = NULL;
    kiln_tensor *lengths = upload_i32(m->ctx, b->lengths, rows_n);
    kiln_tensor *rows_t = upload_i32(m->ctx, rows, n), *targets_t = upload_i32(m->ctx, targets, n);
    free(rows);
    free(targets);
    if (!ids || !lengths || !rows_t || !targets_t) return NULL;
    kiln_tensor *x = bert_encode(m, ids, lengths, dropout);
    /* the masked rows of the encoder's output [B * T, C], gathered as an embedding lookup
     * (its backward scatters the head's gradient back into those rows) */
    kiln_tensor *picked = kiln_embedding(kiln_reshape(x, 2, flat), rows_t);
    kiln_tensor *logits = bert_head(m, picked);
    if (masked_logits) *masked_logits = logits;
    return kiln_cross_entropy(logits, targets_t, 0.0f, -1);
}

typedef struct entropy_pass {
    bert_model *m;
    const bert_batch *b;
} entropy_pass;

static kiln_status entropy_forward(void *self, kiln_tensor **entropy) {
    entropy_pass *p = self;
    bert_model *m = p->m;
    int64_t shape[2] = {p->b->rows, p->b->width};
    kiln_tensor *ids = kiln_tensor_temp(m->ctx, KILN_I32, 2, shape);
    if (ids && kiln_upload(ids, p->b->ids, (size_t)p->b->rows * (size_t)p->b->width * sizeof *p->b->ids)) ids = NULL;
    kiln_tensor *lengths = ids ? upload_i32(m->ctx, p->b->lengths, p->b->rows) : NULL;
    if (lengths && encode(m, ids, lengths, 0.0f, entropy)) return KILN_OK;
    return kiln_error_status() ? kiln_error_status() : KILN_ERR_ARGUMENT;
}

kiln_status bert_attention_entropy(bert_model *m, const bert_batch *b, double *per_layer, double *lowest) {
    entropy_pass p = {.m = m, .b = b};
    return model_entropy_probe(m->ctx, m->cfg.n_layer, entropy_forward, &p, per_layer, lowest);
}

kiln_status bert_layer_grad_norms(bert_model *m, double unscale, double *out) {
    return model_params_layer_grad_norms(m->ctx, m->params, m->n_params, m->cfg.n_layer, unscale, out);
}
