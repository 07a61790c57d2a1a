/* The encoder-decoder (host/model/seq2seq/seq2seq.h) on every backend:
 *   - padding cannot leak: changing the ids at padded source and target positions changes
 *     neither the loss nor any gradient, while changing one real token does;
 *   - a padded row gives the logits it gives alone, unpadded;
 *   - decoding with the KV cache and the precomputed cross-attention keys gives the tokens
 *     that full decoder passes over each prefix give (greedy), and beam search with one
 *     hypothesis is greedy;
 *   - the config refusals. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/gpt/gpt_checkpoint.h"
#include "model/seq2seq/seq2seq.h"
#include "model/seq2seq/seq2seq_checkpoint.h"
#include "testutil.h"

enum { V = 13, BOS = 10, EOS = 11, PAD = 12, MAXLEN = 12 };

static seq2seq_config tiny_config(block_norm norm) {
    seq2seq_config c = {.enc_layers = 2, .dec_layers = 2, .n_head = 2, .n_embd = 16, .max_len = MAXLEN,
                        .src_vocab = V, .tgt_vocab = V, .shared_vocab = 1, .ln_eps = 1e-5f};
    c.block = block_options_default();
    c.block.norm = norm;
    return c;
}

/* A model with weights large enough that every part matters (the init's 0.02 would make
 * attention nearly uniform): each trained tensor of GPT-2-like init scaled up. */
static seq2seq_model *tiny_model(kiln_ctx *ctx, block_norm norm, uint64_t seed) {
    seq2seq_config cfg = tiny_config(norm);
    char err[256];
    ck_assert_msg(seq2seq_config_check(&cfg, err, sizeof err) == 0, "%s", err);
    seq2seq_model *m = seq2seq_new(ctx, &cfg);
    ck_assert_msg(m != NULL, "%s", kiln_error_message());
    ck_assert_int_eq(seq2seq_init(m, seed), KILN_OK);
    for (int i = 0; i < m->n_params; i++) {
        if (m->params[i].spec.ndim != 2 || m->params[i].spec.layer < 0) continue;
        ck_assert_int_eq(kiln_init_normal(m->params[i].t, seed, 7000 + (uint64_t)i, 0.0f, 0.3f), KILN_OK);
    }
    return m;
}

/* Two rows: the first 6 source tokens and 5 target tokens long, the second 3 and 2, padded
 * with `pad_src` and `pad_tgt`. */
static void make_batch(seq2seq_batch *b, int32_t *store, int32_t pad_src, int32_t pad_tgt, int32_t first_token) {
    enum { SW = 7, TW = 6 };
    b->rows = 2;
    b->src_width = SW;
    b->tgt_width = TW;
    b->src = store;
    b->src_len = store + 2 * SW;
    b->tgt_in = b->src_len + 2;
    b->tgt_out = b->tgt_in + 2 * TW;
    const int32_t src_len[2] = {7, 4}, tgt_len[2] = {6, 3}; /* with EOS, with BOS */
    for (int r = 0; r < 2; r++) {
        b->src_len[r] = src_len[r];
        for (int i = 0; i < SW; i++) {
            int32_t tok = (int32_t)((r * 5 + i * 3 + 1) % 10);
            if (r == 0 && i == 0) tok = first_token;
            b->src[r * SW + i] = i < src_len[r] - 1 ? tok : i == src_len[r] - 1 ? EOS : pad_src;
        }
        for (int i = 0; i < TW; i++) {
            int32_t tok = (int32_t)((r * 3 + i * 7 + 2) % 10), prev = (int32_t)((r * 3 + (i - 1) * 7 + 2) % 10);
            b->tgt_in[r * TW + i] = i == 0 ? BOS : i < tgt_len[r] ? prev : pad_tgt;
            b->tgt_out[r * TW + i] = i < tgt_len[r] - 1 ? tok : i == tgt_len[r] - 1 ? EOS : -1;
        }
    }
}

/* The loss and every gradient of one batch, on the host. */
typedef struct one_batch {
    seq2seq_model *m;
    const seq2seq_batch *b;
    float dropout; /* > 0: with dropout, the stream pinned so that runs draw one mask */
} one_batch;

static kiln_tensor *batch_loss(void *user) {
    one_batch *r = user;
    if (r->dropout > 0) kiln_set_rng_stream(r->m->ctx, 0);
    return seq2seq_batch_loss(r->m, r->b, r->dropout, 0.1f);
}

static float *loss_and_grads_with(seq2seq_model *m, const seq2seq_batch *b, float dropout, int64_t *n_out) {
    kiln_tensor **weights = malloc((size_t)m->n_params * sizeof *weights);
    for (int i = 0; i < m->n_params; i++) weights[i] = m->params[i].t;
    one_batch r = {.m = m, .b = b, .dropout = dropout};
    float *out = kt_loss_and_grads(m->ctx, weights, m->n_params, batch_loss, &r, n_out);
    free(weights);
    return out;
}

static float *loss_and_grads(seq2seq_model *m, const seq2seq_batch *b, int64_t *n_out) {
    return loss_and_grads_with(m, b, 0.0f, n_out);
}

/* Fused attention (block_config.attention_fused: the encoder's padded self-attention, the
 * decoder's causal self-attention and its cross-attention to the padded source) gives the
 * unfused model's loss with dropout, every gradient, and the same translations, greedy and
 * beam (KV-cache decoding: one query over the cached keys). */
START_TEST(fused_attention_matches_unfused) {
    kiln_ctx *ctx = kt_ctx();
    for (int norm = BLOCK_NORM_PRE; norm <= BLOCK_NORM_POST; norm++) {
        seq2seq_model *m = tiny_model(ctx, (block_norm)norm, 5);
        int32_t store[64];
        seq2seq_batch b;
        make_batch(&b, store, PAD, PAD, 3);
        int64_t n;
        float *g[2];
        int32_t out[2][MAXLEN];
        int len[2][2];
        double score[2][2];
        const int32_t src[5] = {1, 4, 2, 8, 5};
        for (int fused = 0; fused < 2; fused++) {
            m->enc_block.attention_fused = m->dec_block.attention_fused = fused;
            g[fused] = loss_and_grads_with(m, &b, 0.2f, &n);
            kiln_set_grad_enabled(ctx, 0);
            kiln_set_training(ctx, 0);
            for (int beam = 0; beam < 2; beam++) {
                seq2seq_search_opts o = {.beam = beam ? 4 : 1, .max_len = 8, .bos = BOS, .eos = EOS};
                len[fused][beam] = seq2seq_translate(m, src, 5, &o, out[fused], MAXLEN, &score[fused][beam]);
                ck_assert_msg(len[fused][beam] >= 0, "%s", kiln_error_message());
            }
            kiln_set_training(ctx, 1);
            kiln_set_grad_enabled(ctx, 1);
        }
        ck_assert_msg(fabsf(g[1][0] - g[0][0]) <= 1e-6f * fabsf(g[0][0]), "%s: loss %.9g fused, %.9g unfused",
                      block_norm_names[norm], (double)g[1][0], (double)g[0][0]);
        double err = kt_normalized_error(g[0] + 1, g[1] + 1, n - 1);
        ck_assert_msg(err < 1e-9, "%s: gradients differ by %g fused", block_norm_names[norm], err);
        for (int beam = 0; beam < 2; beam++) {
            ck_assert_int_eq(len[1][beam], len[0][beam]);
            ck_assert_msg(fabs(score[1][beam] - score[0][beam]) <= 1e-5 * fabs(score[0][beam]),
                          "%s: beam %d scores %.9g fused, %.9g unfused", block_norm_names[norm], beam, score[1][beam],
                          score[0][beam]);
        }
        for (int i = 0; i < len[0][1]; i++) ck_assert_int_eq(out[1][i], out[0][i]);
        free(g[0]), free(g[1]);
        seq2seq_free(m);
    }
}
END_TEST

START_TEST(padding_cannot_leak) {
    kiln_ctx *ctx = kt_ctx();
    for (int norm = BLOCK_NORM_PRE; norm <= BLOCK_NORM_POST; norm++) {
        seq2seq_model *m = tiny_model(ctx, (block_norm)norm, 3);
        int32_t sa[64], sb[64], sc[64];
        seq2seq_batch a, b, c;
        make_batch(&a, sa, PAD, PAD, 4);
        make_batch(&b, sb, 3, 7, 4);   /* other ids where the rows are padded */
        make_batch(&c, sc, PAD, PAD, 5); /* one real source token changed */
        int64_t n;
        float *ga = loss_and_grads(m, &a, &n), *gb = loss_and_grads(m, &b, &n), *gc = loss_and_grads(m, &c, &n);
        double leak = kt_max_abs_diff(ga, gb, n), change = kt_max_abs_diff(ga, gc, n);
        ck_assert_msg(leak <= 1e-6, "%s: padded ids changed the loss or a gradient by %g", block_norm_names[norm], leak);
        ck_assert_msg(change > 1e-4, "%s: a real token changed nothing (%g): the check cannot fail",
                      block_norm_names[norm], change);
        free(ga);
        free(gb);
        free(gc);
        seq2seq_free(m);
    }
}
END_TEST

/* Logits [T, V] of one row decoded alone (no padding, no lengths). */
static void logits_alone(seq2seq_model *m, const int32_t *src, int s_len, const int32_t *tgt_in, int t_len, float *out) {
    int64_t ss[2] = {1, s_len}, ts[2] = {1, t_len};
    kiln_tensor *src_t = kt_tensor_i32(m->ctx, 2, ss, src), *tgt_t = kt_tensor_i32(m->ctx, 2, ts, tgt_in);
    kiln_tensor *logits = seq2seq_decode(m, seq2seq_encode(m, src_t, NULL, 0), NULL, tgt_t, 0);
    ck_assert_msg(logits != NULL, "%s", kiln_error_message());
    ck_assert_int_eq(kiln_download_f32(logits, out, (int64_t)t_len * V), KILN_OK);
    kiln_step_reset(m->ctx);
    kiln_tensor_free(src_t);
    kiln_tensor_free(tgt_t);
}

START_TEST(a_padded_row_gives_its_unpadded_logits) {
    kiln_ctx *ctx = kt_ctx();
    seq2seq_model *m = tiny_model(ctx, BLOCK_NORM_POST, 5);
    kiln_set_grad_enabled(ctx, 0);
    int32_t store[64];
    seq2seq_batch b;
    make_batch(&b, store, PAD, PAD, 4);
    int64_t ss[2] = {2, b.src_width}, ts[2] = {2, b.tgt_width}, two = 2;
    kiln_tensor *src = kt_tensor_i32(ctx, 2, ss, b.src), *len = kt_tensor_i32(ctx, 1, &two, b.src_len);
    kiln_tensor *tgt = kt_tensor_i32(ctx, 2, ts, b.tgt_in);
    kiln_tensor *logits = seq2seq_decode(m, seq2seq_encode(m, src, len, 0), len, tgt, 0);
    ck_assert_msg(logits != NULL, "%s", kiln_error_message());
    float batched[2 * 6 * V], alone[6 * V];
    ck_assert_int_eq(kiln_download_f32(logits, batched, 2 * b.tgt_width * V), KILN_OK);
    kiln_step_reset(ctx);
    /* the second row: 4 source ids (3 and EOS), 3 decoder inputs */
    logits_alone(m, b.src + b.src_width, 4, b.tgt_in + b.tgt_width, 3, alone);
    double d = kt_max_abs_diff(batched + b.tgt_width * V, alone, 3 * V);
    ck_assert_msg(d < 1e-4, "the padded row's logits differ from the row alone by %g", d);
    kiln_tensor_free(src);
    kiln_tensor_free(len);
    kiln_tensor_free(tgt);
    kiln_set_grad_enabled(ctx, 1);
    seq2seq_free(m);
}
END_TEST

/* Greedy tokens by full decoder passes over each prefix, no cache. */
static int greedy_by_full_passes(seq2seq_model *m, const int32_t *src, int n, int max_out, int32_t *out) {
    int32_t src_eos[MAXLEN], tgt[MAXLEN];
    memcpy(src_eos, src, (size_t)n * sizeof *src);
    src_eos[n] = EOS;
    tgt[0] = BOS;
    float *logits = malloc((size_t)MAXLEN * V * sizeof *logits);
    int len = 0;
    while (len < max_out) {
        logits_alone(m, src_eos, n + 1, tgt, len + 1, logits);
        const float *last = logits + (int64_t)len * V;
        int best = 0;
        for (int v = 1; v < V; v++)
            if (last[v] > last[best]) best = v;
        if (best == EOS) break;
        out[len++] = best;
        tgt[len] = best;
    }
    free(logits);
    return len;
}

START_TEST(cached_decoding_matches_full_passes) {
    kiln_ctx *ctx = kt_ctx();
    for (int norm = BLOCK_NORM_PRE; norm <= BLOCK_NORM_POST; norm++) {
        seq2seq_model *m = tiny_model(ctx, (block_norm)norm, 11);
        kiln_set_grad_enabled(ctx, 0);
        const int32_t src[5] = {1, 4, 2, 8, 5};
        int32_t want[MAXLEN], got[MAXLEN], beam1[MAXLEN];
        int n_want = greedy_by_full_passes(m, src, 5, 8, want);
        seq2seq_search_opts o = {.beam = 1, .max_len = 8, .bos = BOS, .eos = EOS};
        int n_got = seq2seq_translate(m, src, 5, &o, got, MAXLEN, NULL);
        ck_assert_msg(n_got >= 0, "%s", kiln_error_message());
        ck_assert_int_eq(n_got, n_want);
        for (int i = 0; i < n_got; i++) ck_assert_int_eq(got[i], want[i]);
        /* a beam of one with any length penalty is greedy */
        o.length_penalty = 0.6f;
        ck_assert_int_eq(seq2seq_translate(m, src, 5, &o, beam1, MAXLEN, NULL), n_want);
        for (int i = 0; i < n_want; i++) ck_assert_int_eq(beam1[i], want[i]);
        /* a wider beam finds a hypothesis at least as good as greedy's, on several sources */
        for (int k = 0; k < 6; k++) {
            const int32_t other[4] = {(int32_t)k, (int32_t)(9 - k), 3, (int32_t)((k * 7) % 10)};
            double greedy_score, beam_score;
            o.beam = 1;
            ck_assert_int_ge(seq2seq_translate(m, other, 4, &o, beam1, MAXLEN, &greedy_score), 0);
            o.beam = 8;
            int n_beam = seq2seq_translate(m, other, 4, &o, beam1, MAXLEN, &beam_score);
            ck_assert_msg(n_beam >= 0 && n_beam <= 8, "beam 8 gave %d tokens: %s", n_beam, kiln_error_message());
            ck_assert_msg(beam_score >= greedy_score - 1e-9, "source %d: beam %g below greedy %g", k, beam_score,
                          greedy_score);
        }
        kiln_set_grad_enabled(ctx, 1);
        seq2seq_free(m);
    }
}
END_TEST

START_TEST(checkpoint_round_trip_gives_the_same_logits) {
    kiln_ctx *ctx = kt_ctx();
    static const block_options variants[] = {
        {.norm = BLOCK_NORM_POST},
        {.norm = BLOCK_NORM_PRE, .sigma_reparam = 1},
        {.norm = BLOCK_NORM_POST, .residual = BLOCK_RESIDUAL_DEEPNORM},
        {.norm = BLOCK_NORM_PRE, .layer = BLOCK_LAYER_GAU, .gau_attn = BLOCK_GAU_SOFTMAX, .gau_s = 8},
    };
    char path[256], err[512];
    snprintf(path, sizeof path, "%s/kiln_s2s_%d.safetensors", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
    for (size_t k = 0; k < sizeof variants / sizeof variants[0]; k++) {
        seq2seq_config cfg = tiny_config(BLOCK_NORM_POST);
        cfg.block = variants[k];
        cfg.shared_vocab = k % 2 == 0;
        ck_assert_msg(seq2seq_config_check(&cfg, err, sizeof err) == 0, "%s", err);
        seq2seq_model *m = seq2seq_new(ctx, &cfg);
        ck_assert_msg(m && seq2seq_init(m, 7 + k) == KILN_OK, "%s", kiln_error_message());
        const int32_t src[4] = {3, 1, 4, EOS}, tgt[3] = {BOS, 9, 2};
        float a[3 * V], b[3 * V];
        kiln_set_grad_enabled(ctx, 0);
        logits_alone(m, src, 4, tgt, 3, a);
        model_meta extra = {.key = "step", .value = "12"};
        ck_assert_msg(seq2seq_checkpoint_save(m, path, &extra, 1, err, sizeof err) == 0, "%s", err);
        seq2seq_model *back;
        ck_assert_msg(seq2seq_checkpoint_load(ctx, path, &back, err, sizeof err) == 0, "%s", err);
        logits_alone(back, src, 4, tgt, 3, b);
        ck_assert_msg(kt_max_abs_diff(a, b, 3 * V) == 0.0, "variant %zu: logits differ after the round trip", k);
        char step[16];
        ck_assert_int_eq(model_checkpoint_meta(path, "step", step, sizeof step, err, sizeof err), 1);
        ck_assert_str_eq(step, "12");
        /* a GPT load names the file for what it is */
        gpt_model *g;
        ck_assert_int_eq(gpt_checkpoint_load(ctx, path, &g, err, sizeof err), -1);
        ck_assert_msg(strstr(err, "seq2seq") != NULL, "got: %s", err);
        kiln_set_grad_enabled(ctx, 1);
        seq2seq_free(back);
        seq2seq_free(m);
    }
    remove(path);
}
END_TEST

/* Greedy decoding of a padded batch of sources gives each source's own greedy translation. */
START_TEST(batched_greedy_matches_one_at_a_time) {
    kiln_ctx *ctx = kt_ctx();
    for (int norm = BLOCK_NORM_PRE; norm <= BLOCK_NORM_POST; norm++) {
        seq2seq_model *m = tiny_model(ctx, (block_norm)norm, 13);
        static const int32_t a[] = {1, 4, 2, 8, 5, 9, 3}, b[] = {7}, c[] = {2, 2, 6, 0}, d[] = {9, 8, 7, 6, 5};
        const int32_t *srcs[4] = {a, b, c, d};
        const int lens[4] = {7, 1, 4, 5};
        seq2seq_search_opts o = {.beam = 1, .max_len = 9, .bos = BOS, .eos = EOS};
        int32_t outs[4 * MAXLEN], one[MAXLEN];
        int out_lens[4];
        ck_assert_msg(seq2seq_translate_batch(m, srcs, lens, 4, &o, outs, MAXLEN, out_lens) == 0, "%s",
                      kiln_error_message());
        for (int r = 0; r < 4; r++) {
            int n = seq2seq_translate(m, srcs[r], lens[r], &o, one, MAXLEN, NULL);
            ck_assert_msg(n == out_lens[r], "row %d: %d tokens batched, %d alone", r, out_lens[r], n);
            for (int i = 0; i < n; i++) ck_assert_int_eq(outs[r * MAXLEN + i], one[i]);
        }
        seq2seq_free(m);
    }
}
END_TEST

START_TEST(bad_configs_are_refused) {
    char err[256];
    seq2seq_config c = tiny_config(BLOCK_NORM_POST);
    c.tgt_vocab = V + 1;
    ck_assert_int_eq(seq2seq_config_check(&c, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "shared vocabulary") != NULL, "got: %s", err);
    c = tiny_config(BLOCK_NORM_POST);
    c.block.layer = BLOCK_LAYER_GAU;
    ck_assert_int_eq(seq2seq_config_check(&c, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "gau-attn softmax") != NULL, "got: %s", err);
    c = tiny_config(BLOCK_NORM_POST);
    c.n_head = 3;
    ck_assert_int_eq(seq2seq_config_check(&c, err, sizeof err), -1);
    c = tiny_config(BLOCK_NORM_POST);
    ck_assert_int_eq(seq2seq_config_check(&c, err, sizeof err), 0);
}
END_TEST

static void add_tests(Suite *s, TCase *tc) {
    (void)s;
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, padding_cannot_leak);
    tcase_add_test(tc, fused_attention_matches_unfused);
    tcase_add_test(tc, a_padded_row_gives_its_unpadded_logits);
    tcase_add_test(tc, cached_decoding_matches_full_passes);
    tcase_add_test(tc, batched_greedy_matches_one_at_a_time);
    tcase_add_test(tc, checkpoint_round_trip_gives_the_same_logits);
    tcase_add_test(tc, bad_configs_are_refused);
}

int main(int argc, char **argv) { return kt_main(argc, argv, "host_seq2seq", add_tests, NULL, 0); }
