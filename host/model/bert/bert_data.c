/* BERT's sequences and masking (bert_data.h). */
#include "model/bert/bert_data.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/rng.h"

int bert_vocab_init(bert_vocab *v, const tokenizer *t, char *err, size_t errlen) {
    memset(v, 0, sizeof *v);
    v->cls = tokenizer_special(t, TOK_CLS);
    v->sep = tokenizer_special(t, TOK_SEP);
    v->mask = tokenizer_special(t, TOK_MASK);
    v->pad = tokenizer_special(t, TOK_PAD);
    if (v->pad < 0) v->pad = v->sep; /* padding is never seen: the masks and the loss skip it */
    v->vocab_size = tokenizer_vocab_size(t);
    if (v->cls < 0 || v->sep < 0 || v->mask < 0) {
        snprintf(err, errlen, "the tokenizer has no %s token, which BERT needs",
                 v->cls < 0 ? "[CLS]" : v->sep < 0 ? "[SEP]" : "[MASK]");
        return -1;
    }
    v->normal = malloc((size_t)v->vocab_size * sizeof *v->normal);
    if (!v->normal) {
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    for (int32_t id = 0; id < v->vocab_size; id++)
        if (!tokenizer_is_special(t, id)) v->normal[v->n_normal++] = id;
    if (v->n_normal == 0) {
        bert_vocab_free(v);
        snprintf(err, errlen, "the tokenizer has no token that is not special");
        return -1;
    }
    return 0;
}

void bert_vocab_free(bert_vocab *v) {
    free(v->normal);
    v->normal = NULL;
    v->n_normal = 0;
}

int bert_mask_count(int n) {
    if (n <= 0) return 0;
    /* 15% rounded half up, in integers: 0.15 * 30 is 4.4999... in binary floating point */
    int64_t k = ((int64_t)n * 15 + 50) / 100;
    return k < 1 ? 1 : (int)k;
}

/* A uniform draw in [0, n) from one 32-bit word (multiply-shift: bias below n / 2^32). */
static uint32_t below(uint32_t u, uint32_t n) { return (uint32_t)(((uint64_t)u * n) >> 32); }

/* The RNG counters of one sequence: choosing, deciding and replacing never share one. */
#define CHOOSE_AT 0
#define DECIDE_AT ((uint64_t)1 << 32)
#define REPLACE_AT ((uint64_t)2 << 32)

void bert_mask_row(const bert_vocab *v, const int32_t *tokens, int n, int width, uint64_t seed, uint64_t stream,
                   int32_t *row, int32_t *targets, bert_mask_counts *counts) {
    row[0] = v->cls;
    memcpy(row + 1, tokens, (size_t)n * sizeof *row);
    row[n + 1] = v->sep;
    for (int j = n + 2; j < width; j++) row[j] = v->pad;
    for (int j = 0; j < width; j++) targets[j] = -1;
    int k = bert_mask_count(n);
    uint64_t key = seed ^ BERT_MASK_SALT;
    int64_t stats[3] = {0, 0, 0};
    /* positions are drawn one at a time without a table: draw j takes a uniform pick among
     * the n - j positions not taken yet, found by walking the targets already set */
    for (int j = 0; j < k; j++) {
        uint32_t pick = below(kiln_rng_u32(key, stream, CHOOSE_AT + (uint64_t)j), (uint32_t)(n - j));
        int at = 1;
        for (;; at++) {
            if (targets[at] >= 0) continue;
            if (pick == 0) break;
            pick--;
        }
        int32_t original = row[at];
        targets[at] = original;
        uint32_t decide = below(kiln_rng_u32(key, stream, DECIDE_AT + (uint64_t)j), 10);
        if (decide < 8) {
            row[at] = v->mask;
            stats[0]++;
        } else if (decide == 8) {
            uint32_t r = below(kiln_rng_u32(key, stream, REPLACE_AT + (uint64_t)j), (uint32_t)v->n_normal);
            row[at] = v->normal[r];
            stats[1]++;
        } else {
            stats[2]++;
        }
    }
    if (counts) {
        counts->maskable += n;
        counts->chosen += k;
        counts->masked += stats[0];
        counts->random += stats[1];
        counts->kept += stats[2];
    }
}

int bert_batch_alloc(bert_batch *b, int rows, int width) {
    bert_batch_free(b);
    size_t cells = (size_t)rows * (size_t)width;
    b->rows = rows;
    b->width = width;
    b->ids = malloc(cells * sizeof *b->ids);
    b->targets = malloc(cells * sizeof *b->targets);
    b->lengths = malloc((size_t)rows * sizeof *b->lengths);
    if (!b->ids || !b->targets || !b->lengths) {
        bert_batch_free(b);
        return -1;
    }
    return 0;
}

int bert_train_batch(const bert_vocab *v, const data_set *ds, uint64_t seed, uint64_t draw, int rows, int T,
                     bert_batch *b, char *err, size_t errlen) {
    int n = T - 2;
    if (n < 1) {
        snprintf(err, errlen, "a BERT sequence of %d positions has no room for a token between [CLS] and [SEP]", T);
        return -1;
    }
    size_t cells = (size_t)rows * (size_t)n;
    int32_t *x = malloc(cells * sizeof *x), *y = malloc(cells * sizeof *y);
    int rc = -1;
    if (!x || !y || bert_batch_alloc(b, rows, T)) {
        snprintf(err, errlen, "out of host memory");
        goto done;
    }
    if (data_sample_batch(ds, DATA_TRAIN, rows, n, seed, draw, x, y, err, errlen)) goto done;
    for (int r = 0; r < rows; r++) {
        b->lengths[r] = T;
        bert_mask_row(v, x + (size_t)r * n, n, T, seed, draw * (uint64_t)rows + (uint64_t)r, b->ids + (size_t)r * T,
                      b->targets + (size_t)r * T, NULL);
    }
    rc = 0;
done:
    free(x);
    free(y);
    return rc;
}

int64_t bert_eval_windows(int64_t n, int T) {
    int64_t w = T - 2;
    return w < 1 || n < 1 ? 0 : (n + w - 1) / w;
}

/* The loss and the correct predictions of one batch, added to the sums. */
static int eval_batch(bert_model *m, const bert_batch *b, double *loss_sum, int64_t *correct, int64_t *count,
                      char *err, size_t errlen) {
    kiln_tensor *logits;
    kiln_tensor *loss = bert_batch_loss(m, b, 0.0f, &logits);
    float l;
    if (!loss || kiln_read_scalar(loss, &l)) {
        snprintf(err, errlen, "evaluation: %s", kiln_error_message());
        return -1;
    }
    int64_t N = logits->shape[0], V = logits->shape[1];
    float *host = malloc((size_t)(N * V) * sizeof *host);
    if (!host) {
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    if (kiln_download_f32(logits, host, N * V)) {
        free(host);
        snprintf(err, errlen, "evaluation: %s", kiln_error_message());
        return -1;
    }
    int64_t k = 0, cells = (int64_t)b->rows * b->width;
    for (int64_t i = 0; i < cells; i++) {
        if (b->targets[i] < 0) continue;
        const float *row = host + k * V;
        int64_t best = 0;
        for (int64_t c = 1; c < V; c++)
            if (row[c] > row[best]) best = c;
        *correct += best == b->targets[i];
        k++;
    }
    free(host);
    *loss_sum += (double)l * (double)N;
    *count += N;
    return 0;
}

int bert_eval_batch(const bert_vocab *v, const int32_t *tokens, int64_t n, int T, int64_t first, int rows,
                    bert_batch *b) {
    int w = T - 2;
    /* the batch is as wide as its longest window: only the last window can be short */
    int64_t last_len = n - (first + rows - 1) * (int64_t)w;
    int width = last_len >= w ? T : (int)last_len + 2;
    if (rows > 1) width = T;
    if (bert_batch_alloc(b, rows, width)) return -1;
    for (int r = 0; r < rows; r++) {
        int64_t at = (first + r) * (int64_t)w, len = n - at < w ? n - at : w;
        b->lengths[r] = (int32_t)len + 2;
        bert_mask_row(v, tokens + at, (int)len, width, BERT_EVAL_SEED, (uint64_t)(first + r),
                      b->ids + (size_t)r * width, b->targets + (size_t)r * width, NULL);
    }
    return 0;
}

int bert_eval(bert_model *m, const bert_vocab *v, const int32_t *tokens, int64_t n, int rows, int64_t max_windows,
              double *loss, double *accuracy, char *err, size_t errlen) {
    return bert_eval_watched(m, v, tokens, n, rows, max_windows, NULL, loss, accuracy, err, errlen);
}

int bert_eval_watched(bert_model *m, const bert_vocab *v, const int32_t *tokens, int64_t n, int rows,
                      int64_t max_windows, const eval_watch *watch, double *loss, double *accuracy, char *err,
                      size_t errlen) {
    int T = m->cfg.max_len;
    int64_t windows = bert_eval_windows(n, T);
    if (max_windows > 0 && max_windows < windows) windows = max_windows;
    if (windows == 0) {
        snprintf(err, errlen, "no tokens to evaluate");
        return -1;
    }
    int grad = kiln_grad_enabled(m->ctx), training = kiln_training(m->ctx);
    kiln_set_grad_enabled(m->ctx, 0);
    kiln_set_training(m->ctx, 0);
    bert_batch b = {0};
    double loss_sum = 0;
    int64_t correct = 0, count = 0;
    int rc = 0;
    for (int64_t first = 0; first < windows && rc == 0; first += rows) {
        int r_n = (int)(windows - first < rows ? windows - first : rows);
        if (bert_eval_batch(v, tokens, n, T, first, r_n, &b)) {
            snprintf(err, errlen, "out of host memory");
            rc = -1;
            break;
        }
        rc = eval_batch(m, &b, &loss_sum, &correct, &count, err, errlen);
        kiln_step_reset(m->ctx);
        if (rc == 0) eval_watch_tell(watch, first + r_n, windows);
    }
    bert_batch_free(&b);
    kiln_set_grad_enabled(m->ctx, grad);
    kiln_set_training(m->ctx, training);
    *loss = count ? loss_sum / (double)count : 0.0;
    *accuracy = count ? (double)correct / (double)count : 0.0;
    return rc;
}
