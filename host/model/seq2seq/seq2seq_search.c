/* Greedy and beam-search decoding for the encoder-decoder (seq2seq.h).
 *
 * The encoder runs once per sentence and each decoder layer's cross-attention keys and
 * values are computed once from its output. Every live hypothesis owns a KV cache of the
 * decoder's self-attention, one new position per step; each step runs every live hypothesis'
 * last token into one [alive, V] matrix of log-probabilities, and seq2seq_beam.h ranks,
 * finishes and prunes on it. When a hypothesis continues another, it copies that one's cache
 * rows (double-buffered, and skipped when every hypothesis continues itself, as greedy
 * always does). It returns the best finished hypothesis; with beam 1 and no length penalty
 * this is greedy decoding. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/seq2seq/seq2seq.h"
#include "model/seq2seq/seq2seq_beam.h"

/* One hypothesis' decoder self-attention cache: per layer, keys and values [max_len, w]. */
typedef struct hyp_cache {
    kiln_tensor **k, **v;
} hyp_cache;

typedef struct search {
    seq2seq_model *m;
    const seq2seq_search_opts *o;
    int beam, V, layers;
    kiln_tensor **cross_kv;  /* per decoder layer, [1, S, 2C] */
    hyp_cache *cache[2];     /* [beam] each: the current and the next step's */
    int cur;
    float *logprobs;         /* [beam][V]: the step's log-probabilities of every live hypothesis */
    seq2seq_beam b;
} search;

static void free_caches(search *s) {
    for (int c = 0; c < 2; c++) {
        if (!s->cache[c]) continue;
        for (int b = 0; b < s->beam; b++) {
            for (int l = 0; l < s->layers; l++) {
                if (s->cache[c][b].k) kiln_tensor_free(s->cache[c][b].k[l]);
                if (s->cache[c][b].v) kiln_tensor_free(s->cache[c][b].v[l]);
            }
            free(s->cache[c][b].k);
            free(s->cache[c][b].v);
        }
        free(s->cache[c]);
    }
}

static void search_free(search *s) {
    free_caches(s);
    if (s->cross_kv)
        for (int l = 0; l < s->layers; l++) kiln_tensor_free(s->cross_kv[l]);
    free(s->cross_kv);
    free(s->logprobs);
    seq2seq_beam_free(&s->b);
}

static kiln_status alloc_caches(search *s) {
    seq2seq_model *m = s->m;
    int64_t kw, vw;
    block_cache_widths(&m->dec_block, &kw, &vw);
    for (int c = 0; c < 2; c++) {
        if (!(s->cache[c] = calloc((size_t)s->beam, sizeof *s->cache[c]))) return KILN_ERR_MEMORY;
        for (int b = 0; b < s->beam; b++) {
            hyp_cache *h = &s->cache[c][b];
            h->k = calloc((size_t)s->layers, sizeof *h->k);
            h->v = calloc((size_t)s->layers, sizeof *h->v);
            if (!h->k || !h->v) return KILN_ERR_MEMORY;
            for (int l = 0; l < s->layers; l++) {
                h->k[l] = kiln_tensor_2d(m->ctx, m->dtype, m->cfg.max_len, kw);
                h->v[l] = kiln_tensor_2d(m->ctx, m->dtype, m->cfg.max_len, vw);
                if (!h->k[l] || !h->v[l]) return kiln_error_status();
            }
        }
    }
    return KILN_OK;
}

/* Encodes the source and keeps each decoder layer's cross-attention keys and values. */
static kiln_status encode_source(search *s, const int32_t *src, int n) {
    seq2seq_model *m = s->m;
    int64_t shape[2] = {1, n + 1};
    kiln_tensor *ids = kiln_tensor_temp(m->ctx, KILN_I32, 2, shape);
    int32_t *host = malloc((size_t)(n + 1) * sizeof *host);
    if (!ids || !host) {
        free(host);
        return ids ? kiln_set_error(KILN_ERR_MEMORY, "seq2seq: out of host memory") : kiln_error_status();
    }
    memcpy(host, src, (size_t)n * sizeof *host);
    host[n] = s->o->eos;
    kiln_status st = kiln_upload(ids, host, (size_t)(n + 1) * sizeof *host);
    free(host);
    if (st) return st;
    kiln_tensor *memory = seq2seq_encode(m, ids, NULL, 0.0f);
    if (!memory) return kiln_error_status();
    for (int l = 0; l < s->layers; l++) {
        kiln_tensor *kv = block_cross_kv(&m->dec_block, &m->dec[l], memory);
        if (!kv) return kiln_error_status();
        s->cross_kv[l] = kiln_tensor_new(m->ctx, kv->dtype, kv->ndim, kv->shape);
        if (!s->cross_kv[l] || (st = kiln_copy(s->cross_kv[l], kv))) return st ? st : kiln_error_status();
    }
    kiln_step_reset(m->ctx);
    return KILN_OK;
}

/* Runs hypothesis b's last token at position pos; its log-softmax goes to row b of s->logprobs. */
static kiln_status step_logprobs(search *s, int b, int pos) {
    seq2seq_model *m = s->m;
    float *row = s->logprobs + (int64_t)b * s->V;
    int32_t token = pos == 0 ? s->o->bos : s->b.tokens[b * s->o->max_len + pos - 1];
    int64_t shape[2] = {1, 1};
    kiln_tensor *ids = kiln_tensor_temp(m->ctx, KILN_I32, 2, shape);
    if (!ids || kiln_upload(ids, &token, sizeof token)) return kiln_error_status();
    kiln_tensor *y = kiln_add(kiln_scale(kiln_embedding(m->tgt_embed, ids), sqrtf((float)m->cfg.n_embd)),
                              kiln_view_rows(m->pe, pos, 1));
    block_pass pass = {.pos0 = pos, .cross_kv = s->cross_kv};
    hyp_cache *h = &s->cache[s->cur][b];
    for (int l = 0; l < s->layers && y; l++) y = block_forward(&m->dec_block, &m->dec[l], l, y, &pass, h->k[l], h->v[l]);
    if (y && m->dec_ln_w) y = kiln_layernorm(y, m->dec_ln_w, m->dec_ln_b, m->cfg.ln_eps);
    kiln_tensor *logits = kiln_matmul(y, m->tgt_embed, NULL, 0, 1);
    kiln_status st = logits ? kiln_download_f32(logits, row, s->V) : kiln_error_status();
    kiln_step_reset(m->ctx);
    if (st) return st;
    /* the max taken in float (the same value: every logit is a float): gcc 12's vectorizer
     * crashes on an fmax reduction of floats into a double on aarch64 (-O3) */
    float fmx = -INFINITY;
    for (int v = 0; v < s->V; v++) fmx = fmaxf(fmx, row[v]);
    double mx = fmx, sum = 0;
    for (int v = 0; v < s->V; v++) sum += exp(row[v] - mx);
    float lse = (float)(mx + log(sum));
    for (int v = 0; v < s->V; v++) row[v] -= lse;
    return KILN_OK;
}

/* Copies rows [0, rows) of hypothesis `from`'s cache into the next buffer's slot `to`. */
static kiln_status copy_cache(search *s, int from, int to, int rows) {
    hyp_cache *a = &s->cache[s->cur][from], *b = &s->cache[1 - s->cur][to];
    for (int l = 0; l < s->layers; l++) {
        kiln_status st = kiln_copy(kiln_view_rows(b->k[l], 0, rows), kiln_view_rows(a->k[l], 0, rows));
        if (!st) st = kiln_copy(kiln_view_rows(b->v[l], 0, rows), kiln_view_rows(a->v[l], 0, rows));
        if (st) return st;
    }
    return KILN_OK;
}

/* One step at position pos: every live hypothesis' log-probabilities, the beam's choice, and
 * the caches reordered to follow it. */
static kiln_status search_step(search *s, int pos) {
    for (int b = 0; b < s->b.alive; b++) {
        kiln_status st = step_logprobs(s, b, pos);
        if (st) return st;
    }
    if (seq2seq_beam_step(&s->b, s->logprobs, pos)) return KILN_OK;
    for (int j = 0; j < s->b.alive; j++) {
        kiln_status st = copy_cache(s, s->b.parent[j], j, pos + 1);
        if (st) return st;
    }
    s->cur = 1 - s->cur;
    return KILN_OK;
}

int seq2seq_translate(seq2seq_model *m, const int32_t *src, int n, const seq2seq_search_opts *o, int32_t *out,
                      int cap, double *score) {
    if (o->beam < 1 || o->beam > SEQ2SEQ_BEAM_MAX || o->max_len < 1 || o->max_len + 1 > m->cfg.max_len || n < 0 ||
        n + 1 > m->cfg.max_len) {
        kiln_set_error(KILN_ERR_ARGUMENT, "seq2seq_translate: beam %d (1 to 64), output length %d and source length %d "
                       "must fit the model's %d positions", o->beam, o->max_len, n + 1, m->cfg.max_len);
        return -1;
    }
    search s = {.m = m, .o = o, .beam = o->beam, .V = m->cfg.tgt_vocab, .layers = m->cfg.dec_layers};
    s.cross_kv = calloc((size_t)s.layers, sizeof *s.cross_kv);
    s.logprobs = malloc((size_t)s.beam * (size_t)s.V * sizeof *s.logprobs);
    int grad = kiln_grad_enabled(m->ctx), training = kiln_training(m->ctx);
    kiln_set_grad_enabled(m->ctx, 0);
    kiln_set_training(m->ctx, 0);
    kiln_status st = KILN_OK;
    if (!s.cross_kv || !s.logprobs || seq2seq_beam_init(&s.b, s.beam, s.V, o->max_len, o->length_penalty, o->eos))
        st = kiln_set_error(KILN_ERR_MEMORY, "seq2seq: out of host memory");
    if (!st) st = alloc_caches(&s);
    if (!st) st = encode_source(&s, src, n);
    for (int pos = 0; !st && pos < o->max_len && s.b.alive > 0; pos++) st = search_step(&s, pos);
    if (!st) seq2seq_beam_end(&s.b);
    kiln_set_grad_enabled(m->ctx, grad);
    kiln_set_training(m->ctx, training);
    int len = -1;
    if (!st) {
        len = s.b.best_len < cap ? s.b.best_len : cap;
        memcpy(out, s.b.best, (size_t)len * sizeof *out);
        if (score) *score = s.b.best_score;
    }
    kiln_step_reset(m->ctx);
    search_free(&s);
    return len;
}

/* ---- batched greedy decoding ---- */

/* A persistent i32 tensor of the given shape holding host values. */
static kiln_tensor *persistent_ids(kiln_ctx *ctx, int ndim, const int64_t *shape, const int32_t *host) {
    kiln_tensor *t = kiln_tensor_new(ctx, KILN_I32, ndim, shape);
    int64_t n = shape[0] * (ndim > 1 ? shape[1] : 1);
    if (t && kiln_upload(t, host, (size_t)n * sizeof *host)) {
        kiln_tensor_free(t);
        return NULL;
    }
    return t;
}

typedef struct batch_search {
    seq2seq_model *m;
    int rows, layers, V;
    kiln_tensor *src_len;             /* i32 [rows], persistent */
    kiln_tensor **cross_kv, **k, **v; /* per decoder layer */
    float *logits;                    /* [rows * V] */
    int32_t *last;                    /* each row's last token */
} batch_search;

static void batch_search_free(batch_search *b) {
    for (int l = 0; l < b->layers; l++) {
        if (b->cross_kv) kiln_tensor_free(b->cross_kv[l]);
        if (b->k) kiln_tensor_free(b->k[l]);
        if (b->v) kiln_tensor_free(b->v[l]);
    }
    kiln_tensor_free(b->src_len);
    free(b->cross_kv);
    free(b->k);
    free(b->v);
    free(b->logits);
    free(b->last);
}

/* The encoder over the padded sources (each + EOS), the cross-attention keys and values,
 * and empty KV caches of [max_len, rows * width]. */
static kiln_status batch_setup(batch_search *b, const int32_t *const *srcs, const int *lens, int32_t eos) {
    seq2seq_model *m = b->m;
    int S = 0;
    for (int r = 0; r < b->rows; r++) S = lens[r] + 1 > S ? lens[r] + 1 : S;
    int32_t *ids = malloc((size_t)b->rows * (size_t)S * sizeof *ids), *len = malloc((size_t)b->rows * sizeof *len);
    if (!ids || !len) {
        free(ids);
        free(len);
        return kiln_set_error(KILN_ERR_MEMORY, "seq2seq: out of host memory");
    }
    for (int r = 0; r < b->rows; r++) {
        len[r] = lens[r] + 1;
        for (int j = 0; j < S; j++) ids[r * S + j] = j < lens[r] ? srcs[r][j] : eos;
    }
    int64_t shape[2] = {b->rows, S}, rows = b->rows;
    kiln_tensor *src = kiln_tensor_temp(m->ctx, KILN_I32, 2, shape);
    kiln_status st = src ? kiln_upload(src, ids, (size_t)(b->rows * S) * sizeof *ids) : kiln_error_status();
    if (!st && !(b->src_len = persistent_ids(m->ctx, 1, &rows, len))) st = kiln_error_status();
    free(ids);
    free(len);
    kiln_tensor *memory = st ? NULL : seq2seq_encode(m, src, b->src_len, 0.0f);
    if (!st && !memory) st = kiln_error_status();
    int64_t kw, vw;
    block_cache_widths(&m->dec_block, &kw, &vw);
    for (int l = 0; l < b->layers && !st; l++) {
        kiln_tensor *kv = block_cross_kv(&m->dec_block, &m->dec[l], memory);
        b->cross_kv[l] = kv ? kiln_tensor_new(m->ctx, kv->dtype, kv->ndim, kv->shape) : NULL;
        b->k[l] = kiln_tensor_2d(m->ctx, m->dtype, m->cfg.max_len, b->rows * kw);
        b->v[l] = kiln_tensor_2d(m->ctx, m->dtype, m->cfg.max_len, b->rows * vw);
        if (!b->cross_kv[l] || !b->k[l] || !b->v[l] || kiln_copy(b->cross_kv[l], kv)) st = kiln_error_status();
    }
    kiln_step_reset(m->ctx);
    return st;
}

/* Every row's next-token logits at position pos, into b->logits. */
static kiln_status batch_step(batch_search *b, int pos) {
    seq2seq_model *m = b->m;
    int64_t shape[2] = {b->rows, 1};
    kiln_tensor *ids = kiln_tensor_temp(m->ctx, KILN_I32, 2, shape);
    if (!ids || kiln_upload(ids, b->last, (size_t)b->rows * sizeof *b->last)) return kiln_error_status();
    kiln_tensor *y = kiln_add(kiln_scale(kiln_embedding(m->tgt_embed, ids), sqrtf((float)m->cfg.n_embd)),
                              kiln_view_rows(m->pe, pos, 1));
    block_pass pass = {.pos0 = pos, .cross_kv = b->cross_kv, .memory_lengths = b->src_len};
    for (int l = 0; l < b->layers && y; l++) y = block_forward(&m->dec_block, &m->dec[l], l, y, &pass, b->k[l], b->v[l]);
    if (y && m->dec_ln_w) y = kiln_layernorm(y, m->dec_ln_w, m->dec_ln_b, m->cfg.ln_eps);
    kiln_tensor *logits = kiln_matmul(y, m->tgt_embed, NULL, 0, 1);
    kiln_status st = logits ? kiln_download_f32(logits, b->logits, (int64_t)b->rows * b->V) : kiln_error_status();
    kiln_step_reset(m->ctx);
    return st;
}

int seq2seq_translate_batch(seq2seq_model *m, const int32_t *const *srcs, const int *lens, int n,
                            const seq2seq_search_opts *o, int32_t *outs, int cap, int *out_lens) {
    int longest = 0;
    for (int i = 0; i < n; i++) longest = lens[i] > longest ? lens[i] : longest;
    if (n < 1 || o->max_len < 1 || o->max_len + 1 > m->cfg.max_len || longest + 1 > m->cfg.max_len) {
        kiln_set_error(KILN_ERR_ARGUMENT, "seq2seq_translate_batch: %d sources (the longest %d tokens) and %d output "
                       "tokens must fit the model's %d positions", n, longest + 1, o->max_len, m->cfg.max_len);
        return -1;
    }
    batch_search b = {.m = m, .rows = n, .layers = m->cfg.dec_layers, .V = m->cfg.tgt_vocab};
    b.cross_kv = calloc((size_t)b.layers, sizeof *b.cross_kv);
    b.k = calloc((size_t)b.layers, sizeof *b.k);
    b.v = calloc((size_t)b.layers, sizeof *b.v);
    b.logits = malloc((size_t)n * (size_t)b.V * sizeof *b.logits);
    b.last = malloc((size_t)n * sizeof *b.last);
    int grad = kiln_grad_enabled(m->ctx), training = kiln_training(m->ctx);
    kiln_set_grad_enabled(m->ctx, 0);
    kiln_set_training(m->ctx, 0);
    kiln_status st = !b.cross_kv || !b.k || !b.v || !b.logits || !b.last
                         ? kiln_set_error(KILN_ERR_MEMORY, "seq2seq: out of host memory")
                         : batch_setup(&b, srcs, lens, o->eos);
    int open = n;
    for (int r = 0; r < n; r++) {
        out_lens[r] = -1; /* still decoding */
        if (b.last) b.last[r] = o->bos;
    }
    for (int pos = 0; !st && pos < o->max_len && open > 0; pos++) {
        if ((st = batch_step(&b, pos))) break;
        for (int r = 0; r < n; r++) {
            if (out_lens[r] >= 0) continue;
            const float *row = b.logits + (int64_t)r * b.V;
            int best = 0;
            for (int v = 1; v < b.V; v++)
                if (row[v] > row[best]) best = v;
            if (best == o->eos) {
                out_lens[r] = pos < cap ? pos : cap;
                open--;
                continue;
            }
            if (pos < cap) outs[(int64_t)r * cap + pos] = best;
            b.last[r] = best;
        }
    }
    /* rows that reached the length limit end there, without an EOS */
    for (int r = 0; r < n && !st; r++)
        if (out_lens[r] < 0) out_lens[r] = o->max_len < cap ? o->max_len : cap;
    kiln_set_grad_enabled(m->ctx, grad);
    kiln_set_training(m->ctx, training);
    kiln_step_reset(m->ctx);
    batch_search_free(&b);
    return st ? -1 : 0;
}
