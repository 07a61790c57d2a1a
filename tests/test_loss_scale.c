/* Dynamic loss scaling (kiln/loss_scale.h): the scale's state machine (growth after
 * `interval` clean steps, backoff and counter reset on overflow, the skipped-step count,
 * the f32 range limits), the overflow check over every gradient the optimizer reads, and
 * skip-on-overflow: after a step whose gradients hold an inf or NaN the master weights,
 * their f16 copies and both Adam moments are bit-identical to before, and the optimizer's
 * step counter has not moved. Everything runs on the process's backend (kt_ctx), so the
 * same file checks the device flag and the skip inside the GPU Adam kernels. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/loss_scale.h"
#include "testutil.h"

/* ---- helpers ---- */

#define N 37 /* odd: no kernel sees a multiple of its vector or tile width */

/* One f32 master parameter with an f16 working copy whose gradient is allocated, under an
 * AdamW optimizer that reads the copy's gradient: the mixed-precision setup of the kiln
 * program, one tensor wide. */
typedef struct rig {
    kiln_tensor *p, *copy;
    kiln_adam *opt;
    kiln_loss_scaler *ls;
} rig;

static void rig_init(rig *r, int half, const kiln_loss_scale_opts *lo) {
    kiln_ctx *ctx = kt_ctx();
    float p0[N];
    for (int i = 0; i < N; i++) p0[i] = 0.05f * (float)(i % 11) - 0.2f;
    int64_t n = N;
    r->p = kt_tensor(ctx, KILN_F32, 1, &n, p0);
    r->copy = NULL;
    kiln_adam_opts o = kiln_adam_defaults();
    o.weight_decay = 0.1f;
    r->opt = kiln_adam_new(ctx, &r->p, 1, &o);
    ck_assert_msg(r->opt != NULL, "%s", kiln_error_message());
    if (half) {
        r->copy = kt_tensor(ctx, KILN_F16, 1, &n, p0);
        kiln_set_requires_grad(r->copy, 1);
        ck_assert(kiln_zero_grad(&r->copy, 1) == KILN_OK);
        ck_assert_msg(kiln_adam_set_half_copies(r->opt, &r->copy) == KILN_OK, "%s", kiln_error_message());
    } else {
        kiln_set_requires_grad(r->p, 1);
        ck_assert(kiln_zero_grad(&r->p, 1) == KILN_OK);
    }
    r->ls = kiln_loss_scaler_new(ctx, lo);
    ck_assert_msg(r->ls != NULL, "%s", kiln_error_message());
}

static void rig_free(rig *r) {
    kiln_loss_scaler_free(r->ls);
    kiln_adam_free(r->opt);
    kiln_tensor_free(r->p);
    kiln_tensor_free(r->copy);
}

/* The gradient the optimizer reads. */
static kiln_tensor *rig_grad(rig *r) { return kiln_grad(r->copy ? r->copy : r->p); }

/* Sets that gradient to `scale` times a fixed pattern (exact in f16 for power-of-two
 * scales up to 2^10), with `poison` (inf or NaN) at element `at` when at >= 0. */
static void set_grads(rig *r, float scale, int at, float poison) {
    float g[N];
    for (int i = 0; i < N; i++) g[i] = scale * (0.125f * (float)(i % 5) - 0.25f + (i % 2 ? 0.0625f : 0.0f));
    if (at >= 0) g[at] = poison;
    ck_assert(kiln_upload_f32(rig_grad(r), g, N) == KILN_OK);
}

/* One loss-scaled step; returns whether it was skipped. */
static int step(rig *r) {
    kiln_adam_step_opts s = {.lr = 0.01f, .clip_norm = 0.0f, .grad_unscale = 0.0f};
    int skipped = -1;
    ck_assert_msg(kiln_loss_scaled_step(r->ls, r->opt, &s, &skipped) == KILN_OK, "%s", kiln_error_message());
    ck_assert(skipped == 0 || skipped == 1);
    return skipped;
}

static void expect_state(const rig *r, double scale, int64_t clean, int64_t skipped) {
    kiln_loss_scale_state st = kiln_loss_scaler_state(r->ls);
    ck_assert_msg(st.scale == scale && st.clean_steps == clean && st.skipped_steps == skipped,
                  "state (S %g, clean %lld, skipped %lld), expected (S %g, clean %lld, skipped %lld)", st.scale,
                  (long long)st.clean_steps, (long long)st.skipped_steps, scale, (long long)clean,
                  (long long)skipped);
    ck_assert(kiln_loss_scale_value(r->ls) == (float)scale);
}

/* The bytes of a tensor, for bit-for-bit comparisons. */
static void *raw_of(const kiln_tensor *t) {
    void *b = malloc(kiln_nbytes(t));
    ck_assert(b && kiln_download(t, b, kiln_nbytes(t)) == KILN_OK);
    return b;
}

typedef struct snapshot {
    void *p, *copy, *m, *v;
    int64_t steps;
} snapshot;

static snapshot take(rig *r) {
    snapshot s = {.p = raw_of(r->p), .copy = r->copy ? raw_of(r->copy) : NULL, .m = raw_of(kiln_adam_m(r->opt, 0)),
                  .v = raw_of(kiln_adam_v(r->opt, 0)), .steps = kiln_adam_steps(r->opt)};
    return s;
}

static void drop(snapshot *s) { free(s->p), free(s->copy), free(s->m), free(s->v); }

/* 1 when every byte of weights, copy and moments and the step counter agree. */
static int same(const snapshot *a, const snapshot *b) {
    return !memcmp(a->p, b->p, N * 4) && !memcmp(a->m, b->m, N * 4) && !memcmp(a->v, b->v, N * 4) &&
           (!a->copy || !memcmp(a->copy, b->copy, N * 2)) && a->steps == b->steps;
}

/* ---- options ---- */

START_TEST(defaults_and_bad_options) {
    kiln_loss_scale_opts d = kiln_loss_scale_defaults();
    ck_assert(d.init == 65536.0 && d.growth == 2.0 && d.backoff == 0.5 && d.interval == 2000);
    kiln_ctx *ctx = kt_ctx();
    struct {
        kiln_loss_scale_opts o;
        const char *word;
    } bad[] = {
        {.o = {.init = 0.0, .growth = 2, .backoff = 0.5, .interval = 10}, .word = "initial scale"},
        {.o = {.init = NAN, .growth = 2, .backoff = 0.5, .interval = 10}, .word = "initial scale"},
        {.o = {.init = 1e38, .growth = 2, .backoff = 0.5, .interval = 10}, .word = "initial scale"},
        {.o = {.init = -4.0, .growth = 2, .backoff = 0.5, .interval = 10}, .word = "initial scale"},
        {.o = {.init = 8, .growth = 0.5, .backoff = 0.5, .interval = 10}, .word = "growth"},
        {.o = {.init = 8, .growth = INFINITY, .backoff = 0.5, .interval = 10}, .word = "growth"},
        {.o = {.init = 8, .growth = 2, .backoff = 0.0, .interval = 10}, .word = "backoff"},
        {.o = {.init = 8, .growth = 2, .backoff = 1.5, .interval = 10}, .word = "backoff"},
        {.o = {.init = 8, .growth = 2, .backoff = 0.5, .interval = 0}, .word = "interval"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_ptr_null(kiln_loss_scaler_new(ctx, &bad[i].o));
        ck_assert_int_eq(kiln_error_status(), KILN_ERR_ARGUMENT);
        ck_assert_msg(strstr(kiln_error_message(), bad[i].word), "case %zu: '%s' does not name %s", i,
                      kiln_error_message(), bad[i].word);
    }
    kiln_loss_scaler *ls = kiln_loss_scaler_new(ctx, NULL);
    ck_assert(ls != NULL);
    ck_assert(kiln_loss_scale_value(ls) == 65536.0f);
    kiln_loss_scale_state st = kiln_loss_scaler_state(ls);
    ck_assert(st.scale == 65536.0 && st.clean_steps == 0 && st.skipped_steps == 0);
    /* set_state refuses what could not have been saved */
    kiln_loss_scale_state bad_states[] = {{.scale = 0.0},
                                          {.scale = INFINITY},
                                          {.scale = 0.1},
                                          {.scale = 8.0, .clean_steps = -1},
                                          {.scale = 8.0, .skipped_steps = -3}};
    for (size_t i = 0; i < sizeof bad_states / sizeof bad_states[0]; i++)
        ck_assert_int_eq(kiln_loss_scaler_set_state(ls, &bad_states[i]), KILN_ERR_ARGUMENT);
    kiln_loss_scale_state good = {.scale = 1024.0, .clean_steps = 17, .skipped_steps = 3};
    ck_assert(kiln_loss_scaler_set_state(ls, &good) == KILN_OK);
    st = kiln_loss_scaler_state(ls);
    ck_assert(st.scale == 1024.0 && st.clean_steps == 17 && st.skipped_steps == 3);
    ck_assert(kiln_loss_scale_value(ls) == 1024.0f);
    kiln_loss_scaler_free(ls);
}
END_TEST

/* ---- the state machine ---- */

START_TEST(growth_backoff_and_counter_reset) {
    kiln_loss_scale_opts lo = {.init = 8.0, .growth = 2.0, .backoff = 0.5, .interval = 3};
    rig r;
    rig_init(&r, 1, &lo);
    /* two clean steps: S stays, the counter counts */
    for (int i = 0; i < 2; i++) {
        set_grads(&r, 8.0f, -1, 0);
        ck_assert_int_eq(step(&r), 0);
    }
    expect_state(&r, 8.0, 2, 0);
    ck_assert_int_eq(kiln_adam_steps(r.opt), 2);
    /* an overflow: skipped, S halves, the counter restarts, Adam's counter does not move */
    set_grads(&r, 8.0f, 5, INFINITY);
    ck_assert_int_eq(step(&r), 1);
    expect_state(&r, 4.0, 0, 1);
    ck_assert_int_eq(kiln_adam_steps(r.opt), 2);
    /* the flag was cleared: three clean steps in a row grow S and restart the counter */
    for (int i = 0; i < 3; i++) {
        set_grads(&r, 4.0f, -1, 0);
        ck_assert_int_eq(step(&r), 0);
        expect_state(&r, i < 2 ? 4.0 : 8.0, i < 2 ? i + 1 : 0, 1);
    }
    ck_assert_int_eq(kiln_adam_steps(r.opt), 5);
    /* NaN counts as overflow too, and so does -inf; two in a row back off twice */
    set_grads(&r, 8.0f, 0, NAN);
    ck_assert_int_eq(step(&r), 1);
    set_grads(&r, 4.0f, N - 1, -INFINITY);
    ck_assert_int_eq(step(&r), 1);
    expect_state(&r, 2.0, 0, 3);
    /* a clean step after an overflow mid-count: the counter starts from 0, not from before */
    set_grads(&r, 2.0f, -1, 0);
    ck_assert_int_eq(step(&r), 0);
    set_grads(&r, 2.0f, 3, INFINITY);
    ck_assert_int_eq(step(&r), 1);
    expect_state(&r, 1.0, 0, 4);
    for (int i = 0; i < 2; i++) {
        set_grads(&r, 1.0f, -1, 0);
        ck_assert_int_eq(step(&r), 0);
    }
    expect_state(&r, 1.0, 2, 4);
    ck_assert_int_eq(kiln_adam_steps(r.opt), 8);
    rig_free(&r);
}
END_TEST

START_TEST(scale_stays_within_f32) {
    /* growth at the top of the range (2^126, where 1/S is still a normal f32) keeps S */
    kiln_loss_scale_opts top = {.init = ldexp(1.0, 126), .growth = 2.0, .backoff = 0.5, .interval = 1};
    rig r;
    rig_init(&r, 0, &top);
    set_grads(&r, 1.0f, -1, 0);
    ck_assert_int_eq(step(&r), 0);
    expect_state(&r, ldexp(1.0, 126), 0, 0);
    rig_free(&r);
    /* backoff below 2^-126 is an error that says why */
    kiln_loss_scale_opts bottom = {.init = ldexp(1.0, -126), .growth = 2.0, .backoff = 0.5, .interval = 100};
    rig_init(&r, 0, &bottom);
    set_grads(&r, 1.0f, 2, INFINITY);
    kiln_adam_step_opts s = {.lr = 0.01f, .clip_norm = 0.0f, .grad_unscale = 0.0f};
    ck_assert_int_eq(kiln_loss_scaled_step(r.ls, r.opt, &s, NULL), KILN_ERR_STATE);
    ck_assert_ptr_nonnull(strstr(kiln_error_message(), "overflows"));
    rig_free(&r);
}
END_TEST

START_TEST(check_by_hand_covers_every_gradient) {
    /* the pieces kiln_loss_scaled_step is made of, used separately: NULL gradients are
     * skipped, an inf in the last of several gradients is found, the flag is what Adam's
     * skip reads, and update() clears it */
    kiln_ctx *ctx = kt_ctx();
    kiln_loss_scale_opts lo = {.init = 16.0, .growth = 2.0, .backoff = 0.25, .interval = 5};
    kiln_loss_scaler *ls = kiln_loss_scaler_new(ctx, &lo);
    ck_assert(ls != NULL);
    int64_t n1 = 1000, n2 = 3;
    float *ones = malloc((size_t)n1 * sizeof *ones);
    for (int64_t i = 0; i < n1; i++) ones[i] = 1.0f;
    kiln_tensor *a = kt_tensor(ctx, KILN_F16, 1, &n1, ones);
    kiln_tensor *b = kt_tensor(ctx, KILN_F32, 1, &n2, ones);
    kiln_tensor *grads[3] = {a, NULL, b};
    int skipped = -1;
    ck_assert(kiln_loss_scaler_check(ls, grads, 3) == KILN_OK);
    ck_assert(kiln_loss_scaler_update(ls, &skipped) == KILN_OK);
    ck_assert_int_eq(skipped, 0);
    float bad[3] = {1.0f, 2.0f, INFINITY};
    ck_assert(kiln_upload_f32(b, bad, 3) == KILN_OK);
    ck_assert(kiln_loss_scaler_check(ls, grads, 3) == KILN_OK);
    int32_t flag = 0;
    ck_assert(kiln_download(kiln_loss_scaler_flag(ls), &flag, sizeof flag) == KILN_OK);
    ck_assert_int_ne(flag, 0);
    ck_assert(kiln_loss_scaler_update(ls, &skipped) == KILN_OK);
    ck_assert_int_eq(skipped, 1);
    ck_assert(kiln_loss_scale_value(ls) == 4.0f);
    ck_assert(kiln_download(kiln_loss_scaler_flag(ls), &flag, sizeof flag) == KILN_OK);
    ck_assert_int_eq(flag, 0);
    /* an f16 overflow: 70000 rounds to inf in f16 */
    ones[999] = 70000.0f;
    ck_assert(kiln_upload_f32(a, ones, n1) == KILN_OK);
    ck_assert(kiln_loss_scaler_check(ls, grads, 1) == KILN_OK);
    ck_assert(kiln_loss_scaler_update(ls, &skipped) == KILN_OK);
    ck_assert_int_eq(skipped, 1);
    kiln_loss_scale_state st = kiln_loss_scaler_state(ls);
    ck_assert(st.scale == 1.0 && st.skipped_steps == 2);
    ck_assert_int_eq(kiln_loss_scaler_check(ls, NULL, 2), KILN_ERR_ARGUMENT);
    free(ones);
    kiln_tensor_free(a), kiln_tensor_free(b);
    kiln_loss_scaler_free(ls);
}
END_TEST

/* ---- skip on overflow ---- */

static void skipped_step_changes_nothing(int half, float poison) {
    kiln_loss_scale_opts lo = {.init = 1024.0, .growth = 2.0, .backoff = 0.5, .interval = 2000};
    rig r;
    rig_init(&r, half, &lo);
    set_grads(&r, 1024.0f, -1, 0);
    ck_assert_int_eq(step(&r), 0); /* a real step first: moments nonzero, p moved */
    snapshot before = take(&r);
    set_grads(&r, 1024.0f, 17, poison);
    ck_assert_int_eq(step(&r), 1);
    snapshot after = take(&r);
    ck_assert_msg(same(&before, &after), "a skipped step changed the weights, the copy, a moment or the step count");
    expect_state(&r, 512.0, 0, 1);
    /* and training goes on: a clean step at the new scale moves the weights again */
    set_grads(&r, 512.0f, -1, 0);
    ck_assert_int_eq(step(&r), 0);
    snapshot later = take(&r);
    ck_assert(memcmp(before.p, later.p, N * 4) != 0);
    ck_assert_int_eq(later.steps, before.steps + 1);
    drop(&before), drop(&after), drop(&later);
    rig_free(&r);
}

START_TEST(skip_on_inf_f16_grads) { skipped_step_changes_nothing(1, INFINITY); }
END_TEST
START_TEST(skip_on_nan_f16_grads) { skipped_step_changes_nothing(1, NAN); }
END_TEST
START_TEST(skip_on_inf_f32_grads) { skipped_step_changes_nothing(0, -INFINITY); }
END_TEST

START_TEST(skipped_step_leaves_no_trace) {
    /* clean, overflow, clean == clean, clean: the skipped step is as if it never happened
     * (bias corrections included, since Adam's counter was not advanced). Power-of-two
     * scales make the scaled gradients times 1/S exactly the unscaled ones. */
    kiln_loss_scale_opts lo = {.init = 256.0, .growth = 2.0, .backoff = 0.5, .interval = 2000};
    rig a, b;
    rig_init(&a, 1, &lo);
    rig_init(&b, 1, &lo);
    set_grads(&a, 256.0f, -1, 0);
    ck_assert_int_eq(step(&a), 0);
    set_grads(&a, 256.0f, 8, INFINITY);
    ck_assert_int_eq(step(&a), 1);
    set_grads(&a, 128.0f, -1, 0);
    ck_assert_int_eq(step(&a), 0);
    set_grads(&b, 256.0f, -1, 0);
    ck_assert_int_eq(step(&b), 0);
    kiln_loss_scale_state half = {.scale = 128.0};
    ck_assert(kiln_loss_scaler_set_state(b.ls, &half) == KILN_OK);
    set_grads(&b, 128.0f, -1, 0);
    ck_assert_int_eq(step(&b), 0);
    snapshot sa = take(&a), sb = take(&b);
    ck_assert_msg(same(&sa, &sb), "a run with a skipped step differs from the run without it");
    drop(&sa), drop(&sb);
    rig_free(&a), rig_free(&b);
}
END_TEST

START_TEST(unscale_is_fused_into_the_step) {
    /* gradients scaled by S with grad_unscale 1/S step exactly as the unscaled gradients
     * with no scaling (power-of-two S: every product is exact) */
    kiln_loss_scale_opts scaled = {.init = 4096.0, .growth = 2.0, .backoff = 0.5, .interval = 2000},
                         plain = {.init = 1.0, .growth = 2.0, .backoff = 0.5, .interval = 2000};
    rig a, b;
    rig_init(&a, 1, &scaled);
    rig_init(&b, 1, &plain);
    for (int i = 0; i < 3; i++) {
        set_grads(&a, 4096.0f / (float)(1 << i), -1, 0);
        set_grads(&b, 1.0f / (float)(1 << i), -1, 0);
        ck_assert_int_eq(step(&a), 0);
        ck_assert_int_eq(step(&b), 0);
    }
    snapshot sa = take(&a), sb = take(&b);
    ck_assert_msg(same(&sa, &sb), "scaled-and-unscaled gradients step differently from plain ones");
    float na = 0, nb = 0;
    ck_assert(kiln_read_scalar(kiln_adam_grad_norm(a.opt), &na) == KILN_OK);
    ck_assert(kiln_read_scalar(kiln_adam_grad_norm(b.opt), &nb) == KILN_OK);
    /* within rounding: a device's sqrt need not be correctly rounded */
    ck_assert_msg(na > 0 && fabsf(na - nb) <= 1e-6f * nb, "the reported norm is not the unscaled one: %g vs %g", na, nb);
    drop(&sa), drop(&sb);
    rig_free(&a), rig_free(&b);
}
END_TEST

static void add_tests(Suite *s, TCase *tc) {
    (void)s;
    tcase_add_test(tc, defaults_and_bad_options);
    tcase_add_test(tc, growth_backoff_and_counter_reset);
    tcase_add_test(tc, scale_stays_within_f32);
    tcase_add_test(tc, check_by_hand_covers_every_gradient);
    tcase_add_test(tc, skip_on_inf_f16_grads);
    tcase_add_test(tc, skip_on_nan_f16_grads);
    tcase_add_test(tc, skip_on_inf_f32_grads);
    tcase_add_test(tc, skipped_step_leaves_no_trace);
    tcase_add_test(tc, unscale_is_fused_into_the_step);
}

int main(int argc, char **argv) { return kt_main(argc, argv, "loss_scale", add_tests, NULL, 0); }
