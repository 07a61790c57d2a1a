/* Fused attention: hand-computed outputs (causal offset, grouped-query heads, scale and
 * temperature), fully masked rows that give zeros and zero gradients (never NaN), the
 * dropout streams it takes (those kiln_dropout would take on the unfused path), memory that
 * stays linear in the context, argument errors, and the case table (the fused op against
 * the unfused composition on every backend, finite differences on the CPU). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

/* One head of width 1: q {1, 2}, k {0, 1, 2}, v {1, 2, 4}. Causal with Tq = 2 < Tk = 3: query
 * 0 sees keys 0 and 1 (softmax(0, 1)), query 1 all three (softmax(0, 2, 4)). */
START_TEST(attention_by_hand) {
    kiln_ctx *ctx = kt_ctx();
    int64_t sq[3] = {1, 2, 1}, sk[3] = {1, 3, 1};
    float qv[] = {1, 2}, kv[] = {0, 1, 2}, vv[] = {1, 2, 4};
    kiln_tensor *q = kt_tensor(ctx, KILN_F32, 3, sq, qv), *k = kt_tensor(ctx, KILN_F32, 3, sk, kv);
    kiln_tensor *v = kt_tensor(ctx, KILN_F32, 3, sk, vv);
    kiln_attention_opts o = {.n_head = 1, .scale = 1, .causal = 1};
    float causal[] = {1.73105858f, 3.71775042f};
    kt_expect_values(kiln_attention(q, k, v, &o), causal, 2, 1e-6);
    /* the second query alone (Tq = 1: the decode step sees every key): scale 0.5 at
     * temperature 0.5 is scale 1, and temperature 2 gives softmax(0, 1, 2) */
    int64_t s1[3] = {1, 1, 1};
    kiln_tensor *q1 = kt_tensor(ctx, KILN_F32, 3, s1, qv + 1);
    kiln_attention_opts ot = {.n_head = 1, .scale = 0.5f, .temperature = 0.5f, .causal = 1};
    float tempered[] = {3.71775042f};
    kt_expect_values(kiln_attention(q1, k, v, &ot), tempered, 1, 1e-6);
    ot.temperature = 2, ot.scale = 1;
    float cooled[] = {3.24045070f};
    kt_expect_values(kiln_attention(q1, k, v, &ot), cooled, 1, 1e-6);
    kiln_step_reset(ctx);
    kiln_tensor_free(q), kiln_tensor_free(k), kiln_tensor_free(v), kiln_tensor_free(q1);
}
END_TEST

/* Two query heads on one kv head: q {1, -1} over k {0, 1}, v {1, 2} without a mask. */
START_TEST(attention_gqa_by_hand) {
    kiln_ctx *ctx = kt_ctx();
    int64_t sq[3] = {1, 1, 2}, sk[3] = {1, 2, 1};
    float qv[] = {1, -1}, kv[] = {0, 1}, vv[] = {1, 2};
    kiln_tensor *q = kt_tensor(ctx, KILN_F32, 3, sq, qv), *k = kt_tensor(ctx, KILN_F32, 3, sk, kv);
    kiln_tensor *v = kt_tensor(ctx, KILN_F32, 3, sk, vv);
    kiln_attention_opts o = {.n_head = 2, .n_kv_head = 1, .scale = 1};
    float expect[] = {1.73105858f, 1.26894142f};
    kt_expect_values(kiln_attention(q, k, v, &o), expect, 2, 1e-6);
    kiln_step_reset(ctx);
    kiln_tensor_free(q), kiln_tensor_free(k), kiln_tensor_free(v);
}
END_TEST

/* Batch 1's key length 0 masks all of its keys: y = 0 there and its q, k, v get zero
 * gradients, while batch 0 (length 2 of 3) is an ordinary softmax. */
START_TEST(attention_masked_rows) {
    kiln_ctx *ctx = kt_ctx();
    int64_t s[3] = {2, 3, 4}, sl[1] = {2};
    float vals[24];
    for (int i = 0; i < 24; i++) vals[i] = sinf((float)i);
    int32_t lv[] = {2, 0};
    kiln_tensor *q = kt_tensor(ctx, KILN_F32, 3, s, vals), *k = kt_tensor(ctx, KILN_F32, 3, s, vals);
    kiln_tensor *v = kt_tensor(ctx, KILN_F32, 3, s, vals), *len = kt_tensor_i32(ctx, 1, sl, lv);
    kiln_set_requires_grad(q, 1), kiln_set_requires_grad(k, 1), kiln_set_requires_grad(v, 1);
    kiln_attention_opts o = {.n_head = 2, .key_lengths = len};
    kiln_tensor *y = kiln_attention(q, k, v, &o);
    ck_assert_ptr_nonnull(y);
    ck_assert_msg(kiln_backward(kiln_sum(kiln_mul(y, y)), 1.0f) == KILN_OK, "%s", kiln_error_message());
    float out[24], g[3][24];
    ck_assert_int_eq(kiln_download_f32(y, out, 24), KILN_OK);
    ck_assert_int_eq(kiln_download_f32(kiln_grad(q), g[0], 24), KILN_OK);
    ck_assert_int_eq(kiln_download_f32(kiln_grad(k), g[1], 24), KILN_OK);
    ck_assert_int_eq(kiln_download_f32(kiln_grad(v), g[2], 24), KILN_OK);
    for (int i = 0; i < 12; i++) {
        ck_assert_msg(out[12 + i] == 0.0f, "masked y[%d] = %g", 12 + i, out[12 + i]);
        for (int t = 0; t < 3; t++) ck_assert_msg(g[t][12 + i] == 0.0f, "masked gradient %d[%d] = %g", t, i, g[t][12 + i]);
    }
    /* batch 0: the keys past its length get no gradient, its values do not reach y */
    for (int i = 8; i < 12; i++) ck_assert(g[1][i] == 0.0f && g[2][i] == 0.0f);
    for (int i = 0; i < 12; i++) ck_assert(isfinite(out[i]) && out[i] != 0.0f);
    kiln_step_reset(ctx);
    kiln_tensor_free(q), kiln_tensor_free(k), kiln_tensor_free(v), kiln_tensor_free(len);
}
END_TEST

/* One stream in training mode with dropout > 0, where the model calls kiln_dropout on the
 * probabilities; none without dropout or outside training, where the output is dropout's
 * identity. */
START_TEST(attention_dropout_streams) {
    kiln_ctx *ctx = kt_ctx();
    int64_t s[3] = {1, 5, 8};
    float vals[40];
    for (int i = 0; i < 40; i++) vals[i] = cosf(0.7f * (float)i);
    kiln_tensor *x = kt_tensor(ctx, KILN_F32, 3, s, vals);
    kiln_attention_opts o = {.n_head = 2, .causal = 1, .dropout = 0.5f};
    uint64_t before = kiln_rng_stream(ctx);
    float plain[40], dropped[40], eval[40];
    ck_assert_int_eq(kiln_download_f32(kiln_attention(x, x, x, &o), dropped, 40), KILN_OK);
    ck_assert_uint_eq(kiln_rng_stream(ctx), before + 1);
    o.dropout = 0;
    ck_assert_int_eq(kiln_download_f32(kiln_attention(x, x, x, &o), plain, 40), KILN_OK);
    ck_assert_uint_eq(kiln_rng_stream(ctx), before + 1);
    kiln_set_training(ctx, 0);
    o.dropout = 0.5f;
    ck_assert_int_eq(kiln_download_f32(kiln_attention(x, x, x, &o), eval, 40), KILN_OK);
    kiln_set_training(ctx, 1);
    ck_assert_uint_eq(kiln_rng_stream(ctx), before + 1);
    ck_assert(memcmp(plain, eval, sizeof plain) == 0);
    ck_assert(kt_max_abs_diff(plain, dropped, 40) > 1e-3);
    kiln_step_reset(ctx);
    kiln_tensor_free(x);
}
END_TEST

/* A training step at T = 4096 (one head of 16) keeps no [T, T] tensor: its arena stays far
 * below the 64 MiB one score matrix would take. */
START_TEST(attention_memory_linear) {
    kiln_ctx *ctx = kt_ctx();
    const int64_t T = 4096, D = 16;
    int64_t s[3] = {1, T, D};
    kiln_tensor *q = kiln_tensor_new(ctx, KILN_F32, 3, s), *k = kiln_tensor_new(ctx, KILN_F32, 3, s);
    kiln_tensor *v = kiln_tensor_new(ctx, KILN_F32, 3, s);
    ck_assert_int_eq(kiln_fill(q, 0.01f), KILN_OK);
    ck_assert_int_eq(kiln_fill(k, 0.02f), KILN_OK);
    ck_assert_int_eq(kiln_fill(v, 1.0f), KILN_OK);
    kiln_set_requires_grad(q, 1), kiln_set_requires_grad(k, 1), kiln_set_requires_grad(v, 1);
    kiln_attention_opts o = {.n_head = 1, .causal = 1};
    ck_assert_msg(kiln_backward(kiln_sum(kiln_attention(q, k, v, &o)), 1.0f) == KILN_OK, "%s", kiln_error_message());
    /* every query sees key 0, whose value gradient is the sum of its probabilities */
    float *dv = malloc((size_t)(T * D) * sizeof *dv);
    ck_assert_int_eq(kiln_download_f32(kiln_grad(v), dv, T * D), KILN_OK);
    ck_assert_msg(dv[0] > 1.0f && isfinite(dv[0]), "dv[0] = %g", dv[0]);
    free(dv);
    kiln_step_reset(ctx);
    size_t peak = kiln_memory_arena_peak(ctx), scores = (size_t)(T * T) * sizeof(float);
    ck_assert_msg(peak < scores / 16, "a step's arena peaked at %zu bytes (one score matrix: %zu)", peak, scores);
    kiln_tensor_free(q), kiln_tensor_free(k), kiln_tensor_free(v);
}
END_TEST

/* Expects kiln_attention(q, k, v, o) to fail with `status` and a message naming the op and
 * `word`. */
static void expect_error(kiln_tensor *q, kiln_tensor *k, kiln_tensor *v, const kiln_attention_opts *o,
                         kiln_status status, const char *word) {
    ck_assert_ptr_null(kiln_attention(q, k, v, o));
    ck_assert_int_eq(kiln_error_status(), status);
    const char *msg = kiln_error_message();
    ck_assert_msg(strstr(msg, "attention") && strstr(msg, word), "message \"%s\" should name %s", msg, word);
    ck_assert_ptr_null(strchr(msg, '\n'));
}

START_TEST(attention_errors) {
    kiln_ctx *ctx = kt_ctx();
    int64_t s[3] = {2, 3, 8}, s2[2] = {6, 8}, s_half[3] = {2, 3, 4}, s_wide[3] = {1, 2, 520}, sl[1] = {2}, sl3[1] = {3};
    kiln_tensor *q = kiln_tensor_new(ctx, KILN_F32, 3, s), *q2 = kiln_tensor_new(ctx, KILN_F32, 2, s2);
    kiln_tensor *qi = kiln_tensor_new(ctx, KILN_I32, 3, s), *half = kiln_tensor_new(ctx, KILN_F32, 3, s_half);
    kiln_tensor *wide = kiln_tensor_new(ctx, KILN_F32, 3, s_wide), *len = kiln_tensor_new(ctx, KILN_I32, 1, sl);
    kiln_tensor *len3 = kiln_tensor_new(ctx, KILN_I32, 1, sl3), *lenf = kiln_tensor_new(ctx, KILN_F32, 1, sl);
    kiln_attention_opts o = {.n_head = 2};
    expect_error(q2, q, q, &o, KILN_ERR_SHAPE, "[B, T, heads*head_dim]");
    expect_error(qi, q, q, &o, KILN_ERR_DTYPE, "q");
    expect_error(wide, wide, wide, &o, KILN_ERR_SHAPE, "head_dim");
    expect_error(q, half, half, &o, KILN_ERR_SHAPE, "k must be");
    expect_error(q, q, half, &o, KILN_ERR_SHAPE, "k and v");
    if (kt_f16_ok("attention's dtype error")) {
        kiln_tensor *qh = kiln_tensor_new(ctx, KILN_F16, 3, s);
        expect_error(q, qh, q, &o, KILN_ERR_DTYPE, "k");
        kiln_tensor_free(qh);
    }
    kiln_attention_opts bad = o;
    bad.n_head = 0;
    expect_error(q, q, q, &bad, KILN_ERR_ARGUMENT, "n_head");
    expect_error(q, q, q, NULL, KILN_ERR_ARGUMENT, "n_head");
    bad.n_head = 3; /* 8 channels are no whole number of heads */
    expect_error(q, q, q, &bad, KILN_ERR_SHAPE, "n_head");
    bad = o, bad.n_kv_head = 3;
    expect_error(q, q, q, &bad, KILN_ERR_ARGUMENT, "n_kv_head");
    bad = o, bad.temperature = -1;
    expect_error(q, q, q, &bad, KILN_ERR_ARGUMENT, "temperature");
    bad = o, bad.scale = NAN;
    expect_error(q, q, q, &bad, KILN_ERR_ARGUMENT, "scale");
    bad = o, bad.dropout = 1;
    expect_error(q, q, q, &bad, KILN_ERR_ARGUMENT, "dropout");
    bad = o, bad.key_lengths = len3;
    expect_error(q, q, q, &bad, KILN_ERR_SHAPE, "key_lengths");
    bad.key_lengths = lenf;
    expect_error(q, q, q, &bad, KILN_ERR_SHAPE, "key_lengths");
    bad.key_lengths = len; /* the right one passes */
    ck_assert_int_eq(kiln_fill(len, 0), KILN_OK);
    ck_assert_ptr_nonnull(kiln_attention(q, q, q, &bad));
    kiln_step_reset(ctx);
    kiln_tensor_free(q), kiln_tensor_free(q2), kiln_tensor_free(qi), kiln_tensor_free(half), kiln_tensor_free(wide);
    kiln_tensor_free(len), kiln_tensor_free(len3), kiln_tensor_free(lenf);
}
END_TEST

static void add_tests(Suite *s, TCase *tc) {
    (void)s;
    tcase_add_test(tc, attention_by_hand);
    tcase_add_test(tc, attention_gqa_by_hand);
    tcase_add_test(tc, attention_masked_rows);
    tcase_add_test(tc, attention_dropout_streams);
    tcase_add_test(tc, attention_memory_linear);
    tcase_add_test(tc, attention_errors);
}

int main(int argc, char **argv) {
    return kt_main_group(argc, argv, "attention", add_tests);
}
