/* BERT's masked LM (host/model/bert*.h) on every backend:
 *   - a checkpoint round trip gives the same logits (Post-LN, Pre-LN with sigma-reparam,
 *     ReZero, GAU under kiln names), the file holds Hugging Face's names and layouts (query
 *     weight = the transposed first third of kiln's fused c_attn, checked element by
 *     element), and loaders refuse what is not a BERT;
 *   - padding cannot leak: other ids at padded positions change neither the loss nor any
 *     gradient, while one real token does;
 *   - a padded row gives the logits it gives alone;
 *   - masking: the chosen count is exactly max(1, round(0.15 n)) for n worked out by hand,
 *     never [CLS], [SEP] or padding, and over 10^5 chosen positions the 80/10/10 rates lie
 *     within 4 standard errors of their probabilities;
 *   - config and tokenizer refusals. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/safetensors.h"
#include "model/bert/bert.h"
#include "model/bert/bert_checkpoint.h"
#include "model/bert/bert_data.h"
#include "model/gpt/gpt_checkpoint.h"
#include "testutil.h"

enum { V = 17, CLS = 13, SEP = 14, MASK = 15, PAD = 16, MAXLEN = 10 };

static bert_config tiny_config(block_options o) {
    bert_config c = {.n_layer = 2, .n_head = 2, .n_embd = 16, .max_len = MAXLEN, .vocab_size = V, .ln_eps = 1e-12f,
                     .block = o};
    return c;
}

static block_options with_norm(block_norm norm) {
    block_options o = block_options_default();
    o.norm = norm;
    return o;
}

/* A model with weights large enough that every part matters (0.02 would make attention
 * nearly uniform and the head nearly constant). */
static bert_model *tiny_model(kiln_ctx *ctx, block_options o, uint64_t seed) {
    bert_config cfg = tiny_config(o);
    char err[256];
    ck_assert_msg(bert_config_check(&cfg, err, sizeof err) == 0, "%s", err);
    bert_model *m = bert_new(ctx, &cfg);
    ck_assert_msg(m != NULL, "%s", kiln_error_message());
    ck_assert_int_eq(bert_init(m, seed), KILN_OK);
    for (int i = 0; i < m->n_params; i++) {
        if (m->params[i].spec.ndim != 2) continue;
        ck_assert_int_eq(kiln_init_normal(m->params[i].t, seed, 7000 + (uint64_t)i, 0.0f, 0.3f), KILN_OK);
    }
    return m;
}

/* Two rows: the first 9 positions long, the second 5, padded with `pad`; row 0's position 2
 * holds `token`; targets at positions 2, 4 and 7 of row 0 and 1, 3 of row 1. */
static void make_batch(bert_batch *b, int32_t *store, int32_t pad, int32_t token) {
    enum { W = 9 };
    b->rows = 2;
    b->width = W;
    b->ids = store;
    b->targets = store + 2 * W;
    b->lengths = store + 4 * W;
    const int32_t len[2] = {9, 5};
    for (int r = 0; r < 2; r++) {
        b->lengths[r] = len[r];
        for (int i = 0; i < W; i++) {
            int32_t id = (int32_t)((r * 5 + i * 3 + 1) % 12);
            if (i == 0) id = CLS;
            if (i == len[r] - 1) id = SEP;
            if (i >= len[r]) id = pad;
            if (r == 0 && i == 2) id = token;
            b->ids[r * W + i] = id;
            int target = (r == 0 && (i == 2 || i == 4 || i == 7)) || (r == 1 && (i == 1 || i == 3));
            b->targets[r * W + i] = target ? (int32_t)((i * 7 + r) % 12) : -1;
        }
    }
}

/* The loss and every gradient of one batch, on the host. */
typedef struct one_batch {
    bert_model *m;
    const bert_batch *b;
    float dropout; /* > 0: with dropout, the stream pinned so that runs draw one mask */
} one_batch;

static kiln_tensor *batch_loss(void *user) {
    one_batch *r = user;
    if (r->dropout > 0) kiln_set_rng_stream(r->m->ctx, 0);
    return bert_batch_loss(r->m, r->b, r->dropout, NULL);
}

static float *loss_and_grads_with(bert_model *m, const bert_batch *b, float dropout, int64_t *n_out) {
    kiln_tensor **weights = malloc((size_t)m->n_params * sizeof *weights);
    for (int i = 0; i < m->n_params; i++) weights[i] = m->params[i].t;
    one_batch r = {.m = m, .b = b, .dropout = dropout};
    float *out = kt_loss_and_grads(m->ctx, weights, m->n_params, batch_loss, &r, n_out);
    free(weights);
    return out;
}

static float *loss_and_grads(bert_model *m, const bert_batch *b, int64_t *n_out) {
    return loss_and_grads_with(m, b, 0.0f, n_out);
}

/* Fused attention (block_config.attention_fused: bidirectional, the second row padded)
 * gives the unfused model's loss with dropout and every gradient, Post-LN and Pre-LN. */
START_TEST(fused_attention_matches_unfused) {
    kiln_ctx *ctx = kt_ctx();
    for (int norm = BLOCK_NORM_PRE; norm <= BLOCK_NORM_POST; norm++) {
        bert_model *m = tiny_model(ctx, with_norm((block_norm)norm), 3);
        int32_t store[64];
        bert_batch b;
        make_batch(&b, store, PAD, 4);
        int64_t n;
        float *g[2];
        for (int fused = 0; fused < 2; fused++) {
            m->block.attention_fused = fused;
            g[fused] = loss_and_grads_with(m, &b, 0.2f, &n);
        }
        ck_assert_msg(fabsf(g[1][0] - g[0][0]) <= 1e-6f * fabsf(g[0][0]), "%s: loss %.9g fused, %.9g unfused",
                      block_norm_names[norm], (double)g[1][0], (double)g[0][0]);
        double err = kt_normalized_error(g[0] + 1, g[1] + 1, n - 1);
        ck_assert_msg(err < 1e-9, "%s: gradients differ by %g fused", block_norm_names[norm], err);
        free(g[0]), free(g[1]);
        bert_free(m);
    }
}
END_TEST

START_TEST(padding_cannot_leak) {
    kiln_ctx *ctx = kt_ctx();
    for (int norm = BLOCK_NORM_PRE; norm <= BLOCK_NORM_POST; norm++) {
        bert_model *m = tiny_model(ctx, with_norm((block_norm)norm), 3);
        int32_t sa[64], sb[64], sc[64];
        bert_batch a, b, c;
        make_batch(&a, sa, PAD, 4);
        make_batch(&b, sb, 3, 4); /* other ids where the second row is padded */
        make_batch(&c, sc, PAD, 5); /* one real token changed */
        int64_t n;
        float *ga = loss_and_grads(m, &a, &n), *gb = loss_and_grads(m, &b, &n), *gc = loss_and_grads(m, &c, &n);
        double leak = kt_max_abs_diff(ga, gb, n), change = kt_max_abs_diff(ga, gc, n);
        ck_assert_msg(leak <= 1e-6, "%s: padded ids changed the loss or a gradient by %g", block_norm_names[norm], leak);
        ck_assert_msg(change > 1e-4, "%s: a real token changed nothing (%g): the check cannot fail",
                      block_norm_names[norm], change);
        free(ga);
        free(gb);
        free(gc);
        bert_free(m);
    }
}
END_TEST

/* Logits [T, V] of ids[0..T) as one unpadded row. */
static void logits_alone(bert_model *m, const int32_t *ids, int T, float *out) {
    int64_t shape[2] = {1, T};
    kiln_tensor *t = kt_tensor_i32(m->ctx, 2, shape, ids);
    kiln_tensor *logits = bert_logits(m, t, NULL, 0);
    ck_assert_msg(logits != NULL, "%s", kiln_error_message());
    ck_assert_int_eq(kiln_download_f32(logits, out, (int64_t)T * V), KILN_OK);
    kiln_step_reset(m->ctx);
    kiln_tensor_free(t);
}

START_TEST(a_padded_row_gives_its_unpadded_logits) {
    kiln_ctx *ctx = kt_ctx();
    bert_model *m = tiny_model(ctx, with_norm(BLOCK_NORM_POST), 5);
    kiln_set_grad_enabled(ctx, 0);
    int32_t store[64];
    bert_batch b;
    make_batch(&b, store, PAD, 4);
    int64_t shape[2] = {2, b.width}, two = 2;
    kiln_tensor *ids = kt_tensor_i32(ctx, 2, shape, b.ids), *len = kt_tensor_i32(ctx, 1, &two, b.lengths);
    kiln_tensor *logits = bert_logits(m, ids, len, 0);
    ck_assert_msg(logits != NULL, "%s", kiln_error_message());
    float batched[2 * 9 * V], alone[5 * V];
    ck_assert_int_eq(kiln_download_f32(logits, batched, 2 * 9 * V), KILN_OK);
    kiln_step_reset(ctx);
    logits_alone(m, b.ids + b.width, 5, alone);
    double d = kt_max_abs_diff(batched + 9 * V, alone, 5 * V);
    ck_assert_msg(d < 1e-4, "the padded row's logits differ from the row alone by %g", d);
    kiln_tensor_free(ids);
    kiln_tensor_free(len);
    kiln_set_grad_enabled(ctx, 1);
    bert_free(m);
}
END_TEST

/* The elements of a model's tensor, on the host (malloc'd). */
static float *download_param(bert_model *m, const char *name) {
    model_param *p = model_params_find(m->params, m->n_params + m->n_buffers, name);
    ck_assert_msg(p != NULL, "no tensor %s", name);
    int64_t n = kiln_numel(p->t);
    float *out = malloc((size_t)n * sizeof *out);
    ck_assert_int_eq(kiln_download_f32(p->t, out, n), KILN_OK);
    return out;
}

/* The file's query weight of layer 0 is nn.Linear's [out, in]: q.weight[o][i] is kiln's
 * fused c_attn[i][o] (Conv1D [in, out], q in columns [0, C)); its bias the first third. */
static void check_hf_layout(bert_model *m, const char *path) {
    char err[256];
    st_file *f;
    ck_assert_msg(st_open(path, &f, err, sizeof err) == 0, "%s", err);
    const st_tensor *q = st_find(f, "bert.encoder.layer.0.attention.self.query.weight");
    const st_tensor *vb = st_find(f, "bert.encoder.layer.0.attention.self.value.bias");
    const st_tensor *fc = st_find(f, "bert.encoder.layer.1.intermediate.dense.weight");
    ck_assert_msg(q && vb && fc, "Hugging Face's tensor names are missing");
    ck_assert_msg(st_find(f, "cls.predictions.decoder.weight") == NULL, "the tied decoder is stored");
    int64_t C = m->cfg.n_embd;
    ck_assert_int_eq(q->ndim, 2);
    ck_assert_int_eq(fc->shape[0], 4 * C);
    ck_assert_int_eq(fc->shape[1], C);
    float *file_q = malloc((size_t)(C * C) * sizeof *file_q), *file_vb = malloc((size_t)C * sizeof *file_vb);
    ck_assert_int_eq(st_read_f32(q, file_q, (size_t)(C * C)), 0);
    ck_assert_int_eq(st_read_f32(vb, file_vb, (size_t)C), 0);
    float *w = download_param(m, "bert.encoder.layer.0.attn.c_attn.weight");
    float *b = download_param(m, "bert.encoder.layer.0.attn.c_attn.bias");
    for (int64_t o = 0; o < C; o++) {
        for (int64_t i = 0; i < C; i++) ck_assert_float_eq(file_q[o * C + i], w[i * 3 * C + o]);
        ck_assert_float_eq(file_vb[o], b[2 * C + o]);
    }
    free(file_q);
    free(file_vb);
    free(w);
    free(b);
    st_close(f);
}

START_TEST(checkpoint_round_trip_gives_the_same_logits) {
    kiln_ctx *ctx = kt_ctx();
    static const block_options variants[] = {
        {.norm = BLOCK_NORM_POST},
        {.norm = BLOCK_NORM_PRE, .sigma_reparam = 1},
        {.norm = BLOCK_NORM_PRE, .residual = BLOCK_RESIDUAL_REZERO},
        {.norm = BLOCK_NORM_PRE, .layer = BLOCK_LAYER_GAU, .gau_attn = BLOCK_GAU_SOFTMAX, .gau_s = 8},
    };
    char path[256], err[512];
    snprintf(path, sizeof path, "%s/kiln_bert_%d.safetensors", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
             (int)getpid());
    for (size_t k = 0; k < sizeof variants / sizeof variants[0]; k++) {
        bert_config cfg = tiny_config(variants[k]);
        ck_assert_msg(bert_config_check(&cfg, err, sizeof err) == 0, "%s", err);
        bert_model *m = bert_new(ctx, &cfg);
        ck_assert_msg(m && bert_init(m, 7 + k) == KILN_OK, "%s", kiln_error_message());
        /* weights away from the init (ReZero's alpha 0 would hide the blocks) */
        for (int i = 0; i < m->n_params; i++)
            ck_assert_int_eq(kiln_init_normal(m->params[i].t, 9 + k, 900 + (uint64_t)i, 0.5f, 0.3f), KILN_OK);
        const int32_t ids[6] = {CLS, 3, MASK, 4, 1, SEP};
        float a[6 * V], b[6 * V];
        kiln_set_grad_enabled(ctx, 0);
        logits_alone(m, ids, 6, a);
        model_meta extra = {.key = "step", .value = "12"};
        ck_assert_msg(bert_checkpoint_save(m, path, &extra, 1, err, sizeof err) == 0, "%s", err);
        if (k == 0) check_hf_layout(m, path);
        bert_model *back;
        ck_assert_msg(bert_checkpoint_load(ctx, path, &back, err, sizeof err) == 0, "%s", err);
        logits_alone(back, ids, 6, b);
        ck_assert_msg(kt_max_abs_diff(a, b, 6 * V) == 0.0, "variant %zu: logits differ after the round trip", k);
        char step[16];
        ck_assert_int_eq(model_checkpoint_meta(path, "step", step, sizeof step, err, sizeof err), 1);
        ck_assert_str_eq(step, "12");
        /* a GPT load names the file for what it is */
        gpt_model *g;
        ck_assert_int_eq(gpt_checkpoint_load(ctx, path, &g, err, sizeof err), -1);
        ck_assert_msg(strstr(err, "BERT") != NULL, "got: %s", err);
        kiln_set_grad_enabled(ctx, 1);
        bert_free(back);
        bert_free(m);
    }
    remove(path);
}
END_TEST

/* A BERT file with one metadata value or one tensor changed. */
static void write_variant(const char *path, const char *meta_key, const char *meta_value, const char *drop) {
    st_file *f;
    char err[256];
    ck_assert_msg(st_open(path, &f, err, sizeof err) == 0, "%s", err);
    st_writer *w = st_writer_new();
    for (size_t i = 0; i < st_meta_count(f); i++) {
        const char *k, *v;
        st_meta_at(f, i, &k, &v);
        st_writer_meta(w, k, meta_key && !strcmp(k, meta_key) ? meta_value : v);
    }
    for (size_t i = 0; i < st_count(f); i++) {
        const st_tensor *t = st_tensor_at(f, i);
        if (drop && !strcmp(t->name, drop)) continue;
        float *buf = malloc((size_t)t->numel * sizeof *buf);
        ck_assert_int_eq(st_read_f32(t, buf, (size_t)t->numel), 0);
        st_writer_add(w, t->name, "F32", t->ndim, t->shape, buf, (size_t)t->numel * sizeof *buf);
        free(buf);
    }
    st_close(f);
    char out[300];
    snprintf(out, sizeof out, "%s.variant", path);
    ck_assert_msg(st_writer_save(w, out, err, sizeof err) == 0, "%s", err);
    st_writer_free(w);
}

START_TEST(loads_refuse_what_is_not_this_bert) {
    kiln_ctx *ctx = kt_ctx();
    char path[256], variant[300], err[512];
    snprintf(path, sizeof path, "%s/kiln_bert_bad_%d.safetensors", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
             (int)getpid());
    snprintf(variant, sizeof variant, "%s.variant", path);
    bert_model *m = tiny_model(ctx, with_norm(BLOCK_NORM_POST), 2), *back = NULL;
    ck_assert_msg(bert_checkpoint_save(m, path, NULL, 0, err, sizeof err) == 0, "%s", err);
    static const struct { const char *key, *value, *drop, *expect; } cases[] = {
        {"model_type", "gpt2", NULL, "not a BERT checkpoint"},
        {"hidden_act", "gelu", NULL, "tanh approximation"},
        {"intermediate_size", "30", NULL, "not 4 x hidden_size"},
        {"num_attention_heads", "3", NULL, "does not divide"},
        {NULL, NULL, "bert.encoder.layer.1.attention.self.key.weight", "missing tensor"},
        {"vocab_size", "20", NULL, "has shape"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_variant(path, cases[i].key, cases[i].value, cases[i].drop);
        ck_assert_int_eq(bert_checkpoint_load(ctx, variant, &back, err, sizeof err), -1);
        ck_assert_ptr_null(back);
        ck_assert_msg(strstr(err, cases[i].expect) && !strchr(err, '\n'), "case %zu: got: %s", i, err);
    }
    bert_free(m);
    remove(path);
    remove(variant);
}
END_TEST

static tokenizer *bert_tokenizer(bert_vocab *v) {
    tokenizer *t = tokenizer_bytes(1);
    char err[256];
    ck_assert_ptr_nonnull(t);
    ck_assert_msg(bert_vocab_init(v, t, err, sizeof err) == 0, "%s", err);
    return t;
}

START_TEST(the_chosen_count_is_fifteen_percent_rounded) {
    /* n -> round(0.15 n), halves up, at least 1, worked out by hand */
    static const int n[] = {1, 2, 3, 4, 6, 7, 10, 20, 30, 62, 100, 126, 510};
    static const int k[] = {1, 1, 1, 1, 1, 1, 2, 3, 5, 9, 15, 19, 77};
    bert_vocab v;
    tokenizer *t = bert_tokenizer(&v);
    int32_t tokens[510], row[520], targets[520];
    for (int i = 0; i < 510; i++) tokens[i] = 'a' + i % 26;
    for (size_t c = 0; c < sizeof n / sizeof n[0]; c++) {
        ck_assert_int_eq(bert_mask_count(n[c]), k[c]);
        bert_mask_counts counts = {0};
        bert_mask_row(&v, tokens, n[c], n[c] + 5, 3, c, row, targets, &counts);
        int chosen = 0;
        for (int j = 0; j < n[c] + 5; j++) {
            if (targets[j] < 0) continue;
            chosen++;
            ck_assert_msg(j >= 1 && j <= n[c], "position %d ([CLS], [SEP] or padding) was chosen", j);
            ck_assert_int_eq(targets[j], tokens[j - 1]);
        }
        ck_assert_int_eq(chosen, k[c]);
        ck_assert_int_eq(counts.chosen, k[c]);
        ck_assert_int_eq(row[0], v.cls);
        ck_assert_int_eq(row[n[c] + 1], v.sep);
        ck_assert_int_eq(row[n[c] + 4], v.pad);
    }
    ck_assert_int_eq(bert_mask_count(0), 0);
    bert_vocab_free(&v);
    tokenizer_free(t);
}
END_TEST

START_TEST(masking_rates_are_80_10_10) {
    bert_vocab v;
    tokenizer *t = bert_tokenizer(&v);
    enum { N = 100, W = N + 2 };
    int32_t tokens[N], row[W], again[W], targets[W], targets2[W];
    for (int i = 0; i < N; i++) tokens[i] = 'a' + i % 26;
    bert_mask_counts counts = {0};
    int64_t random_changed = 0, per_position[W] = {0};
    int64_t rows = 0;
    while (counts.chosen < 100000) {
        bert_mask_row(&v, tokens, N, W, 42, (uint64_t)rows, row, targets, &counts);
        rows++;
        for (int j = 1; j <= N; j++) {
            if (targets[j] < 0) {
                ck_assert_int_eq(row[j], tokens[j - 1]); /* not chosen: untouched */
                continue;
            }
            per_position[j]++;
            if (row[j] != v.mask && row[j] != tokens[j - 1]) {
                ck_assert_msg(row[j] >= 0 && row[j] < 256, "a random replacement %d is special", row[j]);
                random_changed++;
            }
        }
    }
    /* the chosen count is exact: 15 of every 100 */
    ck_assert_int_eq(counts.chosen, rows * 15);
    double n = (double)counts.chosen;
    struct { const char *what; int64_t got; double p; } rates[] = {
        {"[MASK]", counts.masked, 0.8}, {"random", counts.random, 0.1}, {"unchanged", counts.kept, 0.1}};
    for (int i = 0; i < 3; i++) {
        double rate = (double)rates[i].got / n, se = sqrt(rates[i].p * (1 - rates[i].p) / n);
        ck_assert_msg(fabs(rate - rates[i].p) < 4 * se, "%s: rate %.5f, expected %.2f +- %.5f (4 SE)", rates[i].what,
                      rate, rates[i].p, 4 * se);
    }
    ck_assert_int_eq(counts.masked + counts.random + counts.kept, counts.chosen);
    /* a random token equals the original 1 time in 256 (the non-special byte tokens) */
    double expect_changed = (double)counts.random * 255.0 / 256.0;
    ck_assert_msg(fabs((double)random_changed - expect_changed) < 4 * sqrt(expect_changed) + 1,
                  "random replacements changed %lld tokens, expected about %.0f", (long long)random_changed,
                  expect_changed);
    /* every position is chosen about 15% of the time: 6667 rows, SE ~ 29 */
    for (int j = 1; j <= N; j++) {
        double p = (double)per_position[j] / (double)rows, se = sqrt(0.15 * 0.85 / (double)rows);
        ck_assert_msg(fabs(p - 0.15) < 5 * se, "position %d chosen at rate %.4f", j, p);
    }
    /* the draw is a function of (seed, stream) */
    bert_mask_row(&v, tokens, N, W, 42, 7, row, targets, NULL);
    bert_mask_row(&v, tokens, N, W, 42, 7, again, targets2, NULL);
    ck_assert_int_eq(memcmp(row, again, sizeof row), 0);
    ck_assert_int_eq(memcmp(targets, targets2, sizeof targets), 0);
    bert_mask_row(&v, tokens, N, W, 42, 8, again, targets2, NULL);
    ck_assert_int_ne(memcmp(targets, targets2, sizeof targets), 0);
    bert_vocab_free(&v);
    tokenizer_free(t);
}
END_TEST

START_TEST(bad_configs_and_tokenizers_are_refused) {
    char err[256];
    bert_config c = tiny_config(with_norm(BLOCK_NORM_POST));
    c.max_len = 2;
    ck_assert_int_eq(bert_config_check(&c, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "max_len") != NULL, "got: %s", err);
    c = tiny_config(with_norm(BLOCK_NORM_POST));
    c.n_head = 3;
    ck_assert_int_eq(bert_config_check(&c, err, sizeof err), -1);
    c = tiny_config(with_norm(BLOCK_NORM_PRE));
    c.block.layer = BLOCK_LAYER_GAU;
    ck_assert_int_eq(bert_config_check(&c, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "gau-attn softmax") != NULL, "got: %s", err);
    c = tiny_config(with_norm(BLOCK_NORM_PRE));
    c.block.residual = BLOCK_RESIDUAL_DEEPNORM; /* DeepNorm is Post-LN only */
    ck_assert_int_eq(bert_config_check(&c, err, sizeof err), -1);
    c = tiny_config(with_norm(BLOCK_NORM_POST));
    ck_assert_int_eq(bert_config_check(&c, err, sizeof err), 0);
    /* bytes without the specials: no [CLS] */
    tokenizer *t = tokenizer_bytes(0);
    bert_vocab v;
    ck_assert_int_eq(bert_vocab_init(&v, t, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "[CLS]") != NULL, "got: %s", err);
    tokenizer_free(t);
    /* a batch without any target */
    kiln_ctx *ctx = kt_ctx();
    bert_model *m = tiny_model(ctx, with_norm(BLOCK_NORM_POST), 1);
    int32_t store[64];
    bert_batch b;
    make_batch(&b, store, PAD, 4);
    for (int i = 0; i < 18; i++) b.targets[i] = -1;
    ck_assert_ptr_null(bert_batch_loss(m, &b, 0.0f, NULL));
    ck_assert_msg(strstr(kiln_error_message(), "no masked position") != NULL, "got: %s", kiln_error_message());
    kiln_step_reset(ctx);
    bert_free(m);
}
END_TEST

static void add_tests(Suite *s, TCase *tc) {
    (void)s;
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, padding_cannot_leak);
    tcase_add_test(tc, fused_attention_matches_unfused);
    tcase_add_test(tc, a_padded_row_gives_its_unpadded_logits);
    tcase_add_test(tc, checkpoint_round_trip_gives_the_same_logits);
    tcase_add_test(tc, loads_refuse_what_is_not_this_bert);
    tcase_add_test(tc, the_chosen_count_is_fifteen_percent_rounded);
    tcase_add_test(tc, masking_rates_are_80_10_10);
    tcase_add_test(tc, bad_configs_and_tokenizers_are_refused);
}

int main(int argc, char **argv) { return kt_main(argc, argv, "host_bert", add_tests, NULL, 0); }
