/* Parallel text for the encoder-decoder (seq2seq_data.h). */
#include "model/seq2seq/seq2seq_data.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void seq2seq_data_free(seq2seq_data *d) {
    if (!d) return;
    free(d->ids);
    free(d->src_at);
    free(d->tgt_at);
    free(d->src_len);
    free(d->tgt_len);
    free(d->starts);
    free(d->order);
    free(d);
}

/* Appends the ids of text to d->ids (growing it); returns their number or -1. */
static int64_t append_ids(seq2seq_data *d, int64_t *used, int64_t *cap, const tokenizer *t, const char *text,
                          size_t n, char *err, size_t errlen) {
    int32_t *ids;
    int64_t k;
    if (tokenizer_encode(t, (const uint8_t *)text, n, &ids, &k, err, errlen)) return -1;
    if (*used + k > *cap) {
        int64_t want = (*used + k) * 2 + 1024;
        int32_t *grown = realloc(d->ids, (size_t)want * sizeof *grown);
        if (!grown) {
            free(ids);
            snprintf(err, errlen, "out of host memory");
            return -1;
        }
        d->ids = grown;
        *cap = want;
    }
    memcpy(d->ids + *used, ids, (size_t)k * sizeof *ids);
    *used += k;
    free(ids);
    return k;
}

int seq2seq_data_build(const text_pairs *p, int64_t first, int64_t count, const tokenizer *src_tok,
                       const tokenizer *tgt_tok, int max_len, int64_t batch_tokens, seq2seq_data **out, char *err,
                       size_t errlen) {
    *out = NULL;
    seq2seq_data *d = calloc(1, sizeof *d);
    size_t n = (size_t)(count > 0 ? count : 1);
    if (d) {
        d->src_at = malloc(n * sizeof *d->src_at);
        d->tgt_at = malloc(n * sizeof *d->tgt_at);
        d->src_len = malloc(n * sizeof *d->src_len);
        d->tgt_len = malloc(n * sizeof *d->tgt_len);
    }
    if (!d || !d->src_at || !d->tgt_at || !d->src_len || !d->tgt_len) {
        seq2seq_data_free(d);
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    d->bos = tokenizer_special(tgt_tok, TOK_BOS);
    d->eos = tokenizer_special(tgt_tok, TOK_EOS);
    if (d->bos < 0 || d->eos < 0 || tokenizer_special(src_tok, TOK_EOS) < 0) {
        seq2seq_data_free(d);
        snprintf(err, errlen, "the tokenizer has no [BOS] or [EOS] token, which a translation model needs");
        return -1;
    }
    int64_t used = 0, cap = 0;
    for (int64_t i = first; i < first + count; i++) {
        int64_t at = used;
        int64_t s = append_ids(d, &used, &cap, src_tok, p->src[i], p->src_len[i], err, errlen);
        int64_t t = s < 0 ? -1 : append_ids(d, &used, &cap, tgt_tok, p->tgt[i], p->tgt_len[i], err, errlen);
        if (s < 0 || t < 0) {
            seq2seq_data_free(d);
            return -1;
        }
        if (s + 1 > max_len || t + 1 > max_len) {
            d->dropped++;
            used = at;
            continue;
        }
        int64_t k = d->count++;
        d->src_at[k] = at;
        d->tgt_at[k] = at + s;
        d->src_len[k] = (int32_t)s + 1;
        d->tgt_len[k] = (int32_t)t + 1;
        d->target_tokens += t + 1;
    }
    if (d->count == 0) {
        snprintf(err, errlen, "every one of the %lld pairs is longer than the model's %d positions",
                 (long long)count, max_len);
        seq2seq_data_free(d);
        return SEQ2SEQ_DATA_TOO_LONG;
    }
    char why[256] = "";
    int64_t r = pairs_make_batches(d->src_len, d->tgt_len, d->count, batch_tokens, &d->starts, &d->order,
                                   &d->n_batches, why, sizeof why);
    if (r < 0) {
        snprintf(err, errlen, "%s", why);
        seq2seq_data_free(d);
        return -1;
    }
    d->oversized = r;
    *out = d;
    return 0;
}

void seq2seq_batch_free(seq2seq_batch *b) {
    free(b->src);
    free(b->src_len);
    free(b->tgt_in);
    free(b->tgt_out);
    memset(b, 0, sizeof *b);
}

int seq2seq_data_batch(const seq2seq_data *d, int64_t b, seq2seq_batch *out) {
    int64_t lo = d->starts[b], hi = d->starts[b + 1];
    int rows = (int)(hi - lo), S = 0, T = 0;
    for (int64_t k = lo; k < hi; k++) {
        int64_t i = d->order[k];
        if (d->src_len[i] > S) S = d->src_len[i];
        if (d->tgt_len[i] > T) T = d->tgt_len[i];
    }
    seq2seq_batch_free(out);
    out->rows = rows;
    out->src_width = S;
    out->tgt_width = T;
    out->src = malloc((size_t)rows * (size_t)S * sizeof *out->src);
    out->src_len = malloc((size_t)rows * sizeof *out->src_len);
    out->tgt_in = malloc((size_t)rows * (size_t)T * sizeof *out->tgt_in);
    out->tgt_out = malloc((size_t)rows * (size_t)T * sizeof *out->tgt_out);
    if (!out->src || !out->src_len || !out->tgt_in || !out->tgt_out) {
        seq2seq_batch_free(out);
        return -1;
    }
    for (int r = 0; r < rows; r++) {
        int64_t i = d->order[lo + r];
        const int32_t *src = d->ids + d->src_at[i], *tgt = d->ids + d->tgt_at[i];
        int s = d->src_len[i] - 1, t = d->tgt_len[i] - 1;
        out->src_len[r] = s + 1;
        /* padding ids are never seen (the masks and the loss skip them): EOS keeps them valid */
        for (int j = 0; j < S; j++) out->src[r * S + j] = j < s ? src[j] : d->eos;
        for (int j = 0; j < T; j++) {
            out->tgt_in[r * T + j] = j == 0 ? d->bos : j <= t ? tgt[j - 1] : d->eos;
            out->tgt_out[r * T + j] = j < t ? tgt[j] : j == t ? d->eos : -1;
        }
    }
    return 0;
}

int64_t seq2seq_data_draw(const seq2seq_data *d, uint64_t seed, uint64_t draw) {
    uint64_t n = (uint64_t)d->n_batches, epoch = draw / n, j = draw % n;
    /* Fisher-Yates from the end, stopping once position j is settled */
    int64_t *perm = malloc((size_t)n * sizeof *perm);
    if (!perm) return (int64_t)j;
    for (uint64_t i = 0; i < n; i++) perm[i] = (int64_t)i;
    uint64_t key = seed ^ SEQ2SEQ_DATA_RNG_SALT;
    for (uint64_t i = n - 1; i > j; i--) {
        uint64_t k = kiln_rng_u32(key, epoch, i) % (i + 1);
        int64_t tmp = perm[i];
        perm[i] = perm[k];
        perm[k] = tmp;
    }
    int64_t b = perm[j];
    free(perm);
    return b;
}

int seq2seq_data_loss(seq2seq_model *m, const seq2seq_data *d, double *loss, char *err, size_t errlen) {
    return seq2seq_data_loss_watched(m, d, NULL, loss, err, errlen);
}

int seq2seq_data_loss_watched(seq2seq_model *m, const seq2seq_data *d, const eval_watch *watch, double *loss, char *err,
                              size_t errlen) {
    int grad = kiln_grad_enabled(m->ctx), training = kiln_training(m->ctx);
    kiln_set_grad_enabled(m->ctx, 0);
    kiln_set_training(m->ctx, 0);
    seq2seq_batch b = {0};
    double sum = 0, tokens = 0;
    int rc = 0;
    for (int64_t k = 0; k < d->n_batches && rc == 0; k++) {
        if (seq2seq_data_batch(d, k, &b)) {
            snprintf(err, errlen, "out of host memory");
            rc = -1;
            break;
        }
        kiln_tensor *l = seq2seq_batch_loss(m, &b, 0.0f, 0.0f);
        float v;
        if (!l || kiln_read_scalar(l, &v)) {
            snprintf(err, errlen, "evaluation: %s", kiln_error_message());
            rc = -1;
        } else {
            double n = 0;
            for (int64_t r = d->starts[k]; r < d->starts[k + 1]; r++) n += d->tgt_len[d->order[r]];
            sum += (double)v * n;
            tokens += n;
        }
        kiln_step_reset(m->ctx);
        if (rc == 0) eval_watch_tell(watch, k + 1, d->n_batches);
    }
    seq2seq_batch_free(&b);
    kiln_set_grad_enabled(m->ctx, grad);
    kiln_set_training(m->ctx, training);
    *loss = tokens > 0 ? sum / tokens : 0.0;
    return rc;
}
