/* Greedy and beam-search decoding for the encoder-decoder (seq2seq.h).
 *
 * The encoder runs once per sentence and each decoder layer's cross-attention keys and
 * values are computed once from its output. Every live hypothesis owns a KV cache of the
 * decoder's self-attention, one new position per step; when the beam is re-ranked, a
 * hypothesis that continues another's copies that one's cache rows (double-buffered, and
 * skipped when every hypothesis continues itself, as greedy always does).
 *
 * Beam search keeps the `beam` best live hypotheses by log-probability. A hypothesis whose
 * EOS ranks among the step's `beam` best candidates is finished and scored with GNMT's
 * length normalization log P / ((5 + |Y|) / 6)^alpha, |Y| counting the EOS (an EOS ranked
 * lower is dropped, as Hugging Face's search does: a barely possible EOS must not fill the
 * finished list). The search stops when no live hypothesis can beat the `beam` best finished
 * ones any more (log P only falls as a hypothesis grows, so log P / lp(longest) bounds what
 * it can reach), or at the length limit (live hypotheses then count as finished); it
 * returns the best finished one. With beam 1 this is greedy decoding. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/seq2seq/seq2seq.h"

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
    int32_t *tokens;         /* [beam][max_len]: live hypotheses' tokens */
    int32_t *next_tokens;
    double *logp;            /* [beam] */
    int alive;
    /* the best finished hypothesis so far, and the `beam` best finished scores (best first) */
    int32_t *best;
    int best_len, finished;
    double best_score;
    double *finished_scores;
    float *logits;           /* [V] */
    double *cand_score;      /* the top candidates of a step: 2 * beam */
    int *cand_hyp, *cand_tok;
} search;

static double length_penalty(float alpha, int len) { return pow((5.0 + len) / 6.0, (double)alpha); }

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
    free(s->tokens);
    free(s->next_tokens);
    free(s->logp);
    free(s->best);
    free(s->finished_scores);
    free(s->logits);
    free(s->cand_score);
    free(s->cand_hyp);
    free(s->cand_tok);
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

/* Runs hypothesis b's last token at position pos and leaves log-softmax in s->logits. */
static kiln_status step_logprobs(search *s, int b, int pos) {
    seq2seq_model *m = s->m;
    int32_t token = pos == 0 ? s->o->bos : s->tokens[b * s->o->max_len + pos - 1];
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
    kiln_status st = logits ? kiln_download_f32(logits, s->logits, s->V) : kiln_error_status();
    kiln_step_reset(m->ctx);
    if (st) return st;
    /* the max taken in float (the same value: every logit is a float): gcc 12's vectorizer
     * crashes on an fmax reduction of floats into a double on aarch64 (-O3) */
    float fmx = -INFINITY;
    for (int v = 0; v < s->V; v++) fmx = fmaxf(fmx, s->logits[v]);
    double mx = fmx, sum = 0;
    for (int v = 0; v < s->V; v++) sum += exp(s->logits[v] - mx);
    float lse = (float)(mx + log(sum));
    for (int v = 0; v < s->V; v++) s->logits[v] -= lse;
    return KILN_OK;
}

/* Inserts (score, hyp, tok) into the sorted top list of `cap` (best first; ties keep the
 * earlier hypothesis and the lower token, so the search is deterministic). */
static void offer(search *s, int *count, int cap, double score, int hyp, int tok) {
    if (*count == cap && score <= s->cand_score[cap - 1]) return;
    int i = *count < cap ? (*count)++ : cap - 1;
    while (i > 0 && s->cand_score[i - 1] < score) {
        s->cand_score[i] = s->cand_score[i - 1];
        s->cand_hyp[i] = s->cand_hyp[i - 1];
        s->cand_tok[i] = s->cand_tok[i - 1];
        i--;
    }
    s->cand_score[i] = score;
    s->cand_hyp[i] = hyp;
    s->cand_tok[i] = tok;
}

static void finish(search *s, const int32_t *tokens, int len, double logp, int with_eos) {
    double score = logp / length_penalty(s->o->length_penalty, len + with_eos);
    /* keep the `beam` best scores, best first */
    int i;
    if (s->finished < s->beam)
        i = s->finished++;                     /* a free slot at the end */
    else if (score > s->finished_scores[s->beam - 1])
        i = s->beam - 1;                       /* replaces the worst */
    else
        i = -1;                                /* not among the best */
    for (; i > 0 && s->finished_scores[i - 1] < score; i--) s->finished_scores[i] = s->finished_scores[i - 1];
    if (i >= 0) s->finished_scores[i] = score;
    if (s->best_len >= 0 && score <= s->best_score) return;
    s->best_score = score;
    s->best_len = len;
    memcpy(s->best, tokens, (size_t)len * sizeof *tokens);
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

/* One step at position pos: every live hypothesis proposes its best tokens; EOS finishes a
 * hypothesis, the rest fill the next beam. */
static kiln_status search_step(search *s, int pos) {
    int L = s->o->max_len, count = 0, cap = 2 * s->beam;
    for (int b = 0; b < s->alive; b++) {
        kiln_status st = step_logprobs(s, b, pos);
        if (st) return st;
        for (int v = 0; v < s->V; v++) offer(s, &count, cap, s->logp[b] + s->logits[v], b, v);
    }
    int next = 0, identity = 1;
    double next_logp[64];
    int parent[64];
    for (int i = 0; i < count && next < s->beam; i++) {
        int b = s->cand_hyp[i];
        if (s->cand_tok[i] == s->o->eos) {
            if (i < s->beam) finish(s, s->tokens + b * L, pos, s->cand_score[i], 1);
            continue;
        }
        memcpy(s->next_tokens + next * L, s->tokens + b * L, (size_t)pos * sizeof *s->tokens);
        s->next_tokens[next * L + pos] = s->cand_tok[i];
        next_logp[next] = s->cand_score[i];
        parent[next] = b;
        identity &= b == next;
        next++;
    }
    if (!identity) {
        for (int j = 0; j < next; j++) {
            kiln_status st = copy_cache(s, parent[j], j, pos + 1);
            if (st) return st;
        }
        s->cur = 1 - s->cur;
    }
    int32_t *t = s->tokens;
    s->tokens = s->next_tokens;
    s->next_tokens = t;
    for (int j = 0; j < next; j++) s->logp[j] = next_logp[j];
    s->alive = next;
    /* done when the best live hypothesis, however long it grows, cannot enter the finished best */
    if (s->finished == s->beam && next > 0) {
        double bound = s->logp[0] / length_penalty(s->o->length_penalty, L + 1);
        if (bound <= s->finished_scores[s->beam - 1]) s->alive = 0;
    }
    return KILN_OK;
}

int seq2seq_translate(seq2seq_model *m, const int32_t *src, int n, const seq2seq_search_opts *o, int32_t *out,
                      int cap, double *score) {
    if (o->beam < 1 || o->beam > 64 || o->max_len < 1 || o->max_len + 1 > m->cfg.max_len || n < 0 ||
        n + 1 > m->cfg.max_len) {
        kiln_set_error(KILN_ERR_ARGUMENT, "seq2seq_translate: beam %d (1 to 64), output length %d and source length %d "
                       "must fit the model's %d positions", o->beam, o->max_len, n + 1, m->cfg.max_len);
        return -1;
    }
    search s = {.m = m, .o = o, .beam = o->beam, .V = m->cfg.tgt_vocab, .layers = m->cfg.dec_layers,
                .alive = 1, .best_len = -1};
    int L = o->max_len;
    s.cross_kv = calloc((size_t)s.layers, sizeof *s.cross_kv);
    s.tokens = calloc((size_t)(s.beam * L), sizeof *s.tokens);
    s.next_tokens = calloc((size_t)(s.beam * L), sizeof *s.next_tokens);
    s.logp = calloc((size_t)s.beam, sizeof *s.logp);
    s.best = calloc((size_t)L, sizeof *s.best);
    s.finished_scores = calloc((size_t)s.beam, sizeof *s.finished_scores);
    s.logits = malloc((size_t)s.V * sizeof *s.logits);
    s.cand_score = malloc((size_t)(2 * s.beam) * sizeof *s.cand_score);
    s.cand_hyp = malloc((size_t)(2 * s.beam) * sizeof *s.cand_hyp);
    s.cand_tok = malloc((size_t)(2 * s.beam) * sizeof *s.cand_tok);
    int grad = kiln_grad_enabled(m->ctx), training = kiln_training(m->ctx);
    kiln_set_grad_enabled(m->ctx, 0);
    kiln_set_training(m->ctx, 0);
    kiln_status st = KILN_OK;
    if (!s.cross_kv || !s.tokens || !s.next_tokens || !s.logp || !s.best || !s.finished_scores || !s.logits ||
        !s.cand_score ||
        !s.cand_hyp || !s.cand_tok)
        st = kiln_set_error(KILN_ERR_MEMORY, "seq2seq: out of host memory");
    if (!st) st = alloc_caches(&s);
    if (!st) st = encode_source(&s, src, n);
    for (int pos = 0; !st && pos < L && s.alive > 0; pos++) st = search_step(&s, pos);
    /* the length limit: live hypotheses count as finished, without an EOS */
    for (int b = 0; !st && b < s.alive; b++) finish(&s, s.tokens + b * L, L, s.logp[b], 0);
    kiln_set_grad_enabled(m->ctx, grad);
    kiln_set_training(m->ctx, training);
    int len = -1;
    if (!st) {
        len = s.best_len < cap ? s.best_len : cap;
        memcpy(out, s.best, (size_t)len * sizeof *out);
        if (score) *score = s.best_score;
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
