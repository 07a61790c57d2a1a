/* The optimizer: Adam and AdamW steps against values worked out here in double, several
 * steps against a plain reference loop, clipping, the skip flag, f16 working copies and
 * the per-parameter decay switch. Every check runs on the process's backend (kt_ctx), so
 * the same file checks the GPU kernels. With --torch-reference FILE it also replays the
 * torch.optim trajectories that tests/optim_reference.py printed (see
 * tests/op_references.cmake). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

/* ---- helpers ---- */

/* A 1-d f32 parameter holding p, with its gradient allocated and set to g. */
static kiln_tensor *param_with_grad(kiln_ctx *ctx, int64_t n, const float *p, const float *g) {
    kiln_tensor *t = kt_tensor(ctx, KILN_F32, 1, &n, p);
    kiln_set_requires_grad(t, 1);
    ck_assert_msg(kiln_zero_grad(&t, 1) == KILN_OK, "%s", kiln_error_message());
    ck_assert(kiln_upload_f32(kiln_grad(t), g, n) == KILN_OK);
    return t;
}

static float *values_of(const kiln_tensor *t) {
    int64_t n = kiln_numel(t);
    float *v = malloc((size_t)n * sizeof *v);
    ck_assert(v && kiln_download_f32(t, v, n) == KILN_OK);
    return v;
}

/* Asserts |got - want| <= tol * (1 + |want|) element by element. */
static void expect_close(const kiln_tensor *t, const double *want, int64_t n, double tol, const char *what) {
    float *got = values_of(t);
    for (int64_t i = 0; i < n; i++)
        ck_assert_msg(!isnan(got[i]) && fabs(got[i] - want[i]) <= tol * (1 + fabs(want[i])),
                      "%s[%lld]: got %.9g, expected %.9g", what, (long long)i, got[i], want[i]);
    free(got);
}

static float read_scalar(const kiln_tensor *t) {
    float v = NAN;
    ck_assert_msg(kiln_read_scalar(t, &v) == KILN_OK, "%s", kiln_error_message());
    return v;
}

static kiln_adam_opts make_opts(float b1, float b2, float eps, float wd, int decoupled) {
    kiln_adam_opts o = {.beta1 = b1, .beta2 = b2, .eps = eps, .weight_decay = wd, .decoupled = decoupled};
    return o;
}

static kiln_adam_step_opts step_lr(float lr) {
    kiln_adam_step_opts s = {.lr = lr, .clip_norm = 0.0f, .grad_unscale = 0.0f};
    return s;
}

/* The reference: one Adam(W) update in double, straight from the paper's formulas. */
typedef struct ref_state {
    double *p, *m, *v;
    int64_t n;
} ref_state;

static void ref_step(ref_state *r, const double *g_raw, double coef, int64_t t, double lr,
                     const kiln_adam_opts *o, int decay) {
    double wd = decay ? o->weight_decay : 0.0;
    double bc1 = 1 - pow(o->beta1, (double)t), bc2 = 1 - pow(o->beta2, (double)t);
    for (int64_t i = 0; i < r->n; i++) {
        double g = g_raw[i] * coef;
        if (!o->decoupled) g += wd * r->p[i];
        r->m[i] = o->beta1 * r->m[i] + (1 - o->beta1) * g;
        r->v[i] = o->beta2 * r->v[i] + (1 - o->beta2) * g * g;
        if (o->decoupled) r->p[i] -= lr * wd * r->p[i];
        r->p[i] -= lr * (r->m[i] / bc1) / (sqrt(r->v[i] / bc2) + o->eps);
    }
}

/* ---- one step, by hand ---- */

START_TEST(adam_one_step_by_hand) {
    /* Adam with L2 decay: g' = g + wd p. After one step mhat = g', vhat = g'^2, so the
     * update is lr * g' / (|g'| + eps). */
    kiln_ctx *ctx = kt_ctx();
    const float p0[] = {0.5f, -1.0f, 2.0f}, g0[] = {0.1f, -0.2f, 0.3f};
    const double lr = 0.01, wd = 0.1, eps = 1e-8;
    kiln_tensor *p = param_with_grad(ctx, 3, p0, g0);
    kiln_adam_opts o = make_opts(0.9f, 0.999f, (float)eps, (float)wd, 0);
    kiln_adam *opt = kiln_adam_new(ctx, &p, 1, &o);
    ck_assert_msg(opt != NULL, "%s", kiln_error_message());
    kiln_adam_step_opts s = step_lr((float)lr);
    ck_assert_msg(kiln_adam_step(opt, &s) == KILN_OK, "%s", kiln_error_message());

    double want_p[3], want_m[3], want_v[3];
    for (int i = 0; i < 3; i++) {
        double g = (double)g0[i] + wd * p0[i]; /* 0.15, -0.3, 0.5 */
        want_m[i] = (1 - 0.9) * g;
        want_v[i] = (1 - (double)0.999f) * g * g;
        want_p[i] = p0[i] - lr * g / (fabs(g) + eps);
    }
    /* the values, written out: 0.5 - 0.01, -1 + 0.01, 2 - 0.01 (g' never vanishes) */
    ck_assert(fabs(want_p[0] - 0.49) < 1e-7 && fabs(want_p[1] + 0.99) < 1e-7 && fabs(want_p[2] - 1.99) < 1e-7);
    expect_close(p, want_p, 3, 1e-6, "p");
    expect_close(kiln_adam_m(opt, 0), want_m, 3, 1e-6, "m");
    expect_close(kiln_adam_v(opt, 0), want_v, 3, 1e-6, "v");
    ck_assert_int_eq(kiln_adam_steps(opt), 1);
    kiln_adam_free(opt);
    kiln_tensor_free(p);
}
END_TEST

START_TEST(adamw_one_step_by_hand) {
    /* AdamW: p <- p (1 - lr wd), then p -= lr g / (|g| + eps). eps = 0.5 makes the step
     * depend on |g|, which a unit-eps-free Adam step would hide. */
    kiln_ctx *ctx = kt_ctx();
    const float p0[] = {1.0f, -2.0f, 0.25f, 3.0f}, g0[] = {0.5f, -1.5f, 0.0f, 2.0f};
    const double lr = 0.1, wd = 0.2, eps = 0.5;
    kiln_tensor *p = param_with_grad(ctx, 4, p0, g0);
    kiln_adam_opts o = make_opts(0.8f, 0.99f, (float)eps, (float)wd, 1);
    kiln_adam *opt = kiln_adam_new(ctx, &p, 1, &o);
    ck_assert_msg(opt != NULL, "%s", kiln_error_message());
    kiln_adam_step_opts s = step_lr((float)lr);
    ck_assert(kiln_adam_step(opt, &s) == KILN_OK);
    /* element 0: 1 * 0.98 - 0.1 * 0.5 / 1.0 = 0.93
     * element 1: -2 * 0.98 + 0.1 * 1.5 / 2.0 = -1.885
     * element 2: 0.25 * 0.98 - 0 = 0.245
     * element 3: 3 * 0.98 - 0.1 * 2 / 2.5 = 2.86 */
    const double want_p[] = {0.93, -1.885, 0.245, 2.86};
    expect_close(p, want_p, 4, 1e-6, "p");
    double want_m[4], want_v[4];
    for (int i = 0; i < 4; i++) {
        want_m[i] = (1 - (double)0.8f) * g0[i];
        want_v[i] = (1 - (double)0.99f) * g0[i] * g0[i];
    }
    expect_close(kiln_adam_m(opt, 0), want_m, 4, 1e-6, "m");
    expect_close(kiln_adam_v(opt, 0), want_v, 4, 1e-6, "v");
    kiln_adam_free(opt);
    kiln_tensor_free(p);
}
END_TEST

/* ---- several steps against the reference loop ---- */

/* Gradients that change every step and never sit near zero for long. */
static double synthetic_grad(int64_t step, int param, int64_t i) {
    return sin(0.37 * (double)i + 1.3 * (double)step + param) * (1.0 + 0.1 * (double)(i % 5)) + 0.05 * (double)step;
}

static void run_against_reference(int decoupled, float clip) {
    kiln_ctx *ctx = kt_ctx();
    enum { NP = 3, STEPS = 6 };
    const int64_t sizes[NP] = {37, 35, 1};
    kiln_adam_opts o = make_opts(0.9f, 0.95f, 1e-6f, 0.05f, decoupled);
    kiln_tensor *params[NP];
    ref_state ref[NP];
    for (int j = 0; j < NP; j++) {
        int64_t n = sizes[j];
        float *init = malloc((size_t)n * sizeof *init), *zero = calloc((size_t)n, sizeof *zero);
        ref[j].n = n;
        ref[j].p = malloc((size_t)n * sizeof(double));
        ref[j].m = calloc((size_t)n, sizeof(double));
        ref[j].v = calloc((size_t)n, sizeof(double));
        for (int64_t i = 0; i < n; i++) init[i] = (float)cos(0.11 * (double)i + j), ref[j].p[i] = init[i];
        params[j] = param_with_grad(ctx, n, init, zero);
        free(init), free(zero);
    }
    kiln_adam *opt = kiln_adam_new(ctx, params, NP, &o);
    ck_assert_msg(opt != NULL, "%s", kiln_error_message());
    kiln_adam_set_decay(opt, 2, 0); /* the 1-element "bias" is not decayed */
    for (int64_t t = 1; t <= STEPS; t++) {
        double *g[NP], sumsq = 0;
        for (int j = 0; j < NP; j++) {
            g[j] = malloc((size_t)sizes[j] * sizeof(double));
            float *gf = malloc((size_t)sizes[j] * sizeof *gf);
            for (int64_t i = 0; i < sizes[j]; i++) {
                gf[i] = (float)(synthetic_grad(t, j, i) * (j == 1 ? 4.0 : 1.0));
                g[j][i] = gf[i];
                sumsq += g[j][i] * g[j][i];
            }
            ck_assert(kiln_upload_f32(kiln_grad(params[j]), gf, sizes[j]) == KILN_OK);
            free(gf);
        }
        double norm = sqrt(sumsq), coef = 1.0;
        if (clip > 0 && clip / (norm + 1e-6) < 1) coef = clip / (norm + 1e-6);
        double lr = 0.01 * (double)t; /* a warm-up schedule: lr changes every step */
        kiln_adam_step_opts s = {.lr = (float)lr, .clip_norm = clip, .grad_unscale = 0.0f};
        ck_assert_msg(kiln_adam_step(opt, &s) == KILN_OK, "%s", kiln_error_message());
        for (int j = 0; j < NP; j++) ref_step(&ref[j], g[j], coef, t, (float)lr, &o, j != 2), free(g[j]);
        ck_assert_msg(fabs(read_scalar(kiln_adam_grad_norm(opt)) - norm) <= 1e-5 * norm,
                      "step %lld: norm %g, expected %g", (long long)t, read_scalar(kiln_adam_grad_norm(opt)), norm);
    }
    ck_assert_int_eq(kiln_adam_steps(opt), STEPS);
    for (int j = 0; j < NP; j++) {
        expect_close(params[j], ref[j].p, sizes[j], 2e-5, "p");
        expect_close(kiln_adam_m(opt, j), ref[j].m, sizes[j], 2e-5, "m");
        expect_close(kiln_adam_v(opt, j), ref[j].v, sizes[j], 2e-5, "v");
        free(ref[j].p), free(ref[j].m), free(ref[j].v);
    }
    kiln_adam_free(opt);
    for (int j = 0; j < NP; j++) kiln_tensor_free(params[j]);
}

START_TEST(adamw_steps_match_reference) { run_against_reference(1, 0.0f); }
END_TEST
START_TEST(adam_l2_steps_match_reference) { run_against_reference(0, 0.0f); }
END_TEST
START_TEST(adamw_clipped_steps_match_reference) { run_against_reference(1, 1.0f); }
END_TEST

/* ---- clipping ---- */

/* Two parameters with gradients (3, 4) and (12): global norm 13. eps = 1 makes the
 * update lr * g / (|g| + 1), which shows the clipped magnitude. */
static void clip_case(float clip, float unscale, double expect_coef) {
    kiln_ctx *ctx = kt_ctx();
    const float S = unscale != 0 ? 1.0f / unscale : 1.0f; /* gradients arrive multiplied by S */
    const float pa0[] = {1, 1}, ga[] = {3 * S, 4 * S}, pb0[] = {-1}, gb[] = {12 * S};
    kiln_tensor *params[2] = {param_with_grad(ctx, 2, pa0, ga), param_with_grad(ctx, 1, pb0, gb)};
    kiln_adam_opts o = make_opts(0.9f, 0.999f, 1.0f, 0.0f, 1);
    kiln_adam *opt = kiln_adam_new(ctx, params, 2, &o);
    ck_assert(opt != NULL);
    kiln_adam_step_opts s = {.lr = 0.1f, .clip_norm = clip, .grad_unscale = unscale};
    ck_assert_msg(kiln_adam_step(opt, &s) == KILN_OK, "%s", kiln_error_message());
    ck_assert_msg(fabs(read_scalar(kiln_adam_grad_norm(opt)) - 13.0) < 1e-5 * 13,
                  "reported norm %g, expected 13", read_scalar(kiln_adam_grad_norm(opt)));
    double wa[2], wb[1];
    const double g_true[3] = {3, 4, 12};
    for (int i = 0; i < 3; i++) {
        double g = g_true[i] * expect_coef;
        double w = (i < 2 ? 1.0 : -1.0) - 0.1 * g / (fabs(g) + 1.0);
        if (i < 2) wa[i] = w; else wb[0] = w;
    }
    expect_close(params[0], wa, 2, 1e-6, "pa");
    expect_close(params[1], wb, 1, 1e-6, "pb");
    kiln_adam_free(opt);
    kiln_tensor_free(params[0]), kiln_tensor_free(params[1]);
}

START_TEST(clip_above_threshold) { clip_case(6.5f, 0.0f, 6.5 / (13 + 1e-6)); }
END_TEST
START_TEST(clip_below_threshold) { clip_case(100.0f, 0.0f, 1.0); }
END_TEST
START_TEST(clip_with_loss_scale) { clip_case(6.5f, 1.0f / 1024, 6.5 / (13 + 1e-6)); }
END_TEST
START_TEST(no_clip_with_loss_scale) { clip_case(0.0f, 1.0f / 256, 1.0); }
END_TEST

/* ---- the skip flag ---- */

static void *raw_of(const kiln_tensor *t) {
    void *r = malloc(kiln_nbytes(t));
    ck_assert(r && kiln_download(t, r, kiln_nbytes(t)) == KILN_OK);
    return r;
}

START_TEST(skip_flag_leaves_state_bit_identical) {
    if (!kt_f16_ok("skip_flag_leaves_state_bit_identical (it checks an f16 working copy)")) return;
    kiln_ctx *ctx = kt_ctx();
    const float p0[] = {0.3f, -0.7f, 1.1f, 0.0f, 2.5f}, g0[] = {0.2f, 0.4f, -0.6f, 1.0f, -0.1f};
    kiln_tensor *p = param_with_grad(ctx, 5, p0, g0);
    int64_t one = 1;
    kiln_tensor *copy = kiln_tensor_new(ctx, KILN_F16, 1, (int64_t[]){5});
    kiln_tensor *flag = kiln_tensor_new(ctx, KILN_I32, 0, &one);
    ck_assert(copy && flag);
    kiln_set_requires_grad(copy, 1);
    ck_assert(kiln_zero_grad(&copy, 1) == KILN_OK);
    ck_assert(kiln_upload_f32(kiln_grad(copy), g0, 5) == KILN_OK);
    kiln_adam_opts o = make_opts(0.9f, 0.999f, 1e-8f, 0.1f, 1);
    kiln_adam *opt = kiln_adam_new(ctx, &p, 1, &o);
    ck_assert(opt != NULL);
    ck_assert(kiln_adam_set_half_copies(opt, &copy) == KILN_OK);
    kiln_adam_step_opts s = {.lr = 0.05f, .clip_norm = 1.0f, .grad_unscale = 0.5f, .skip_flag = flag};
    ck_assert(kiln_adam_step(opt, &s) == KILN_OK); /* flag 0: a real step, moments nonzero */
    void *p1 = raw_of(p), *m1 = raw_of(kiln_adam_m(opt, 0)), *v1 = raw_of(kiln_adam_v(opt, 0)), *c1 = raw_of(copy);
    ck_assert_msg(memcmp(p1, p0, sizeof p0) != 0, "the unskipped step changed nothing");

    ck_assert(kiln_fill(flag, 1) == KILN_OK);
    ck_assert(kiln_adam_step(opt, &s) == KILN_OK);
    ck_assert_int_eq(kiln_adam_steps(opt), 2); /* counted, until the caller uncounts it */
    kiln_adam_uncount_step(opt);
    ck_assert_int_eq(kiln_adam_steps(opt), 1);
    void *p2 = raw_of(p), *m2 = raw_of(kiln_adam_m(opt, 0)), *v2 = raw_of(kiln_adam_v(opt, 0)), *c2 = raw_of(copy);
    ck_assert(memcmp(p1, p2, 5 * 4) == 0);
    ck_assert(memcmp(m1, m2, 5 * 4) == 0);
    ck_assert(memcmp(v1, v2, 5 * 4) == 0);
    ck_assert(memcmp(c1, c2, 5 * 2) == 0);

    ck_assert(kiln_fill(flag, 0) == KILN_OK); /* and a clear flag steps again */
    ck_assert(kiln_adam_step(opt, &s) == KILN_OK);
    void *p3 = raw_of(p);
    ck_assert(memcmp(p2, p3, 5 * 4) != 0);
    free(p1), free(m1), free(v1), free(c1), free(p2), free(m2), free(v2), free(c2), free(p3);
    kiln_adam_free(opt);
    kiln_tensor_free(p), kiln_tensor_free(copy), kiln_tensor_free(flag);
}
END_TEST

/* ---- f16 working copies ---- */

START_TEST(half_copies_read_f16_grads_and_receive_weights) {
    if (!kt_f16_ok("half_copies_read_f16_grads_and_receive_weights")) return;
    /* A parameter longer than the optimizer's f16 chunk (2^20), so the norm of f16
     * gradients is summed over more than one chunk. */
    kiln_ctx *ctx = kt_ctx();
    const int64_t n = ((int64_t)1 << 20) + 77;
    float *p0 = malloc((size_t)n * sizeof *p0), *g0 = malloc((size_t)n * sizeof *g0);
    for (int64_t i = 0; i < n; i++) {
        p0[i] = (float)sin(0.001 * (double)i);
        g0[i] = (i % 3 == 0 ? 0.5f : -0.25f) + (float)(i % 7) * 0.125f; /* exact in f16 */
    }
    kiln_tensor *p = kt_tensor(ctx, KILN_F32, 1, &n, p0);
    kiln_tensor *copy = kt_tensor(ctx, KILN_F16, 1, &n, p0);
    kiln_set_requires_grad(copy, 1);
    ck_assert(kiln_zero_grad(&copy, 1) == KILN_OK);
    ck_assert(kiln_upload_f32(kiln_grad(copy), g0, n) == KILN_OK);
    kiln_adam_opts o = make_opts(0.9f, 0.999f, 0.25f, 0.01f, 1);
    kiln_adam *opt = kiln_adam_new(ctx, &p, 1, &o);
    ck_assert(opt != NULL);
    ck_assert_msg(kiln_adam_set_half_copies(opt, &copy) == KILN_OK, "%s", kiln_error_message());
    const float unscale = 0.5f; /* the gradients carry a loss scale of 2 */
    kiln_adam_step_opts s = {.lr = 0.01f, .clip_norm = 0.0f, .grad_unscale = unscale};
    ck_assert_msg(kiln_adam_step(opt, &s) == KILN_OK, "%s", kiln_error_message());

    double sumsq = 0;
    ref_state r = {.p = malloc((size_t)n * sizeof(double)), .m = calloc((size_t)n, sizeof(double)),
                   .v = calloc((size_t)n, sizeof(double)), .n = n};
    double *g = malloc((size_t)n * sizeof *g);
    for (int64_t i = 0; i < n; i++) r.p[i] = p0[i], g[i] = g0[i], sumsq += g[i] * g[i];
    ref_step(&r, g, unscale, 1, 0.01f, &o, 1);
    double norm = sqrt(sumsq) * unscale;
    ck_assert_msg(fabs(read_scalar(kiln_adam_grad_norm(opt)) - norm) < 1e-4 * norm, "norm %g, expected %g",
                  read_scalar(kiln_adam_grad_norm(opt)), norm);
    float *pm = values_of(p), *pc = values_of(copy);
    for (int64_t i = 0; i < n; i++) {
        ck_assert_msg(fabs(pm[i] - r.p[i]) <= 1e-6 * (1 + fabs(r.p[i])), "p[%lld] %.9g vs %.9g", (long long)i, pm[i], r.p[i]);
        /* the copy holds the master weight rounded to f16 (values_of widens it back) */
        ck_assert_msg(pc[i] == kiln_f16_to_f32(kiln_f32_to_f16(pm[i])), "copy[%lld] %g vs master %g", (long long)i, pc[i], pm[i]);
    }
    free(pm), free(pc), free(p0), free(g0), free(g), free(r.p), free(r.m), free(r.v);
    kiln_adam_free(opt);
    kiln_tensor_free(p), kiln_tensor_free(copy);
}
END_TEST

/* ---- the decay switch, and parameters without gradients ---- */

static void decay_switch_case(int decoupled) {
    /* Zero gradients: m = v = 0 and the Adam term vanishes, so decay alone moves p. */
    kiln_ctx *ctx = kt_ctx();
    const float p0[] = {1.5f, -2.0f, 0.75f}, zero[] = {0, 0, 0};
    kiln_tensor *params[2] = {param_with_grad(ctx, 3, p0, zero), param_with_grad(ctx, 3, p0, zero)};
    kiln_adam_opts o = make_opts(0.9f, 0.999f, 1e-8f, 0.5f, decoupled);
    kiln_adam *opt = kiln_adam_new(ctx, params, 2, &o);
    ck_assert(opt != NULL);
    kiln_adam_set_decay(opt, 1, 0);
    kiln_adam_step_opts s = step_lr(0.1f);
    ck_assert(kiln_adam_step(opt, &s) == KILN_OK);
    float got_on[3], got_off[3];
    ck_assert(kiln_download_f32(params[0], got_on, 3) == KILN_OK);
    ck_assert(kiln_download_f32(params[1], got_off, 3) == KILN_OK);
    ck_assert(memcmp(got_off, p0, sizeof p0) == 0); /* exactly untouched */
    for (int i = 0; i < 3; i++) {
        /* decoupled: p (1 - lr wd) = 0.95 p. L2: g' = wd p, a full-size Adam step of
         * lr against the sign of p. */
        double want = decoupled ? p0[i] * (1 - 0.1 * 0.5) : p0[i] - 0.1 * (p0[i] > 0 ? 1 : -1);
        ck_assert_msg(fabs(got_on[i] - want) < 1e-6, "p[%d] %g, expected %g", i, got_on[i], want);
    }
    kiln_adam_free(opt);
    kiln_tensor_free(params[0]), kiln_tensor_free(params[1]);
}

START_TEST(decay_off_leaves_parameter_undecayed) { decay_switch_case(1); }
END_TEST
START_TEST(decay_off_without_decoupling) { decay_switch_case(0); }
END_TEST

START_TEST(parameter_without_gradient_is_untouched) {
    kiln_ctx *ctx = kt_ctx();
    const float p0[] = {1, 2, 3}, g0[] = {1, 1, 1};
    int64_t n = 3;
    kiln_tensor *with = param_with_grad(ctx, 3, p0, g0);
    kiln_tensor *without = kt_tensor(ctx, KILN_F32, 1, &n, p0);
    kiln_tensor *params[2] = {with, without};
    kiln_adam *opt = kiln_adam_new(ctx, params, 2, NULL);
    ck_assert(opt != NULL);
    kiln_adam_step_opts s = step_lr(0.1f);
    ck_assert(kiln_adam_step(opt, &s) == KILN_OK);
    float got[3];
    ck_assert(kiln_download_f32(without, got, 3) == KILN_OK);
    ck_assert(memcmp(got, p0, sizeof p0) == 0);
    ck_assert(kiln_download_f32(with, got, 3) == KILN_OK);
    ck_assert(got[0] < 1 && got[1] < 2 && got[2] < 3);
    kiln_adam_free(opt);
    kiln_tensor_free(with), kiln_tensor_free(without);
}
END_TEST

START_TEST(optimizer_errors) {
    kiln_ctx *ctx = kt_ctx();
    const int f16 = kt_f16_ok("optimizer_errors: f16 parts");
    kiln_tensor *h = f16 ? kiln_tensor_1d(ctx, KILN_F16, 4) : NULL, *f = kiln_tensor_1d(ctx, KILN_F32, 4);
    kiln_tensor *h5 = f16 ? kiln_tensor_1d(ctx, KILN_F16, 5) : NULL, *bad_flag = kiln_tensor_1d(ctx, KILN_F32, 1);
    if (f16) {
        ck_assert_ptr_null(kiln_adam_new(ctx, &h, 1, NULL));
        ck_assert_int_eq(kiln_error_status(), KILN_ERR_DTYPE);
    }
    kiln_adam_opts o = make_opts(1.0f, 0.999f, 1e-8f, 0, 1);
    ck_assert_ptr_null(kiln_adam_new(ctx, &f, 1, &o));
    ck_assert_int_eq(kiln_error_status(), KILN_ERR_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(kiln_error_message(), "beta"));
    kiln_adam *opt = kiln_adam_new(ctx, &f, 1, NULL);
    ck_assert(opt != NULL);
    if (f16) ck_assert_int_eq(kiln_adam_set_half_copies(opt, &h5), KILN_ERR_SHAPE);
    ck_assert_int_eq(kiln_adam_set_half_copies(opt, &f), KILN_ERR_DTYPE);
    kiln_adam_step_opts s = {.lr = 0.1f, .skip_flag = bad_flag};
    ck_assert_int_eq(kiln_adam_step(opt, &s), KILN_ERR_ARGUMENT);
    ck_assert_int_eq(kiln_adam_steps(opt), 0);
    ck_assert_ptr_null(kiln_adam_m(opt, 1));
    ck_assert_int_eq(kiln_error_status(), KILN_ERR_RANGE);
    kiln_adam_free(opt);
    kiln_tensor_free(h), kiln_tensor_free(f), kiln_tensor_free(h5), kiln_tensor_free(bad_flag);
}
END_TEST

/* ---- torch.optim trajectories (tests/optim_reference.py) ----
 * The file is whitespace-separated words:
 *   scenario NAME decoupled b1 b2 eps wd clip steps nparams
 *   param J n decay            then n initial values
 *   step T lr                  then for each parameter: n gradient values, and after all
 *                              gradients: norm, then for each parameter n expected values
 *   end
 * All numbers are f32 values printed exactly. */
static const char *g_torch_file;

static double next_num(FILE *f) {
    double x;
    ck_assert_msg(fscanf(f, "%lf", &x) == 1, "optim reference: expected a number");
    return x;
}

static void expect_word(FILE *f, const char *want) {
    char w[64];
    ck_assert_msg(fscanf(f, "%63s", w) == 1 && !strcmp(w, want), "optim reference: expected '%s'", want);
}

static int replay_scenario(FILE *f) {
    char word[64], name[64];
    if (fscanf(f, "%63s", word) != 1) return 0;
    ck_assert_msg(!strcmp(word, "scenario"), "optim reference: expected 'scenario', got '%s'", word);
    ck_assert(fscanf(f, "%63s", name) == 1);
    kiln_adam_opts o = {0};
    int mode = (int)next_num(f); /* 0: Adam (L2), 1: AdamW, 2: RAdam (L2) */
    o.decoupled = mode == 1;
    o.rectified = mode == 2;
    o.beta1 = (float)next_num(f), o.beta2 = (float)next_num(f), o.eps = (float)next_num(f);
    o.weight_decay = (float)next_num(f);
    float clip = (float)next_num(f);
    int steps = (int)next_num(f), np = (int)next_num(f);
    ck_assert(np > 0 && np <= 8);
    kiln_ctx *ctx = kt_ctx();
    kiln_tensor *params[8];
    int64_t sizes[8];
    int decay[8];
    for (int j = 0; j < np; j++) {
        expect_word(f, "param");
        ck_assert_int_eq((int)next_num(f), j);
        sizes[j] = (int64_t)next_num(f);
        decay[j] = (int)next_num(f);
        float *init = malloc((size_t)sizes[j] * sizeof *init), *zero = calloc((size_t)sizes[j], sizeof *zero);
        for (int64_t i = 0; i < sizes[j]; i++) init[i] = (float)next_num(f);
        params[j] = param_with_grad(ctx, sizes[j], init, zero);
        free(init), free(zero);
    }
    kiln_adam *opt = kiln_adam_new(ctx, params, np, &o);
    ck_assert_msg(opt != NULL, "%s", kiln_error_message());
    for (int j = 0; j < np; j++) kiln_adam_set_decay(opt, j, decay[j]);
    for (int t = 1; t <= steps; t++) {
        expect_word(f, "step");
        ck_assert_int_eq((int)next_num(f), t);
        float lr = (float)next_num(f);
        for (int j = 0; j < np; j++) {
            float *g = malloc((size_t)sizes[j] * sizeof *g);
            for (int64_t i = 0; i < sizes[j]; i++) g[i] = (float)next_num(f);
            ck_assert(kiln_upload_f32(kiln_grad(params[j]), g, sizes[j]) == KILN_OK);
            free(g);
        }
        kiln_adam_step_opts s = {.lr = lr, .clip_norm = clip, .grad_unscale = 0.0f};
        ck_assert_msg(kiln_adam_step(opt, &s) == KILN_OK, "%s", kiln_error_message());
        double norm = next_num(f);
        float got_norm = read_scalar(kiln_adam_grad_norm(opt));
        ck_assert_msg(fabs(got_norm - norm) <= 1e-5 * norm, "%s step %d: norm %g, torch %g", name, t, got_norm, norm);
        for (int j = 0; j < np; j++) {
            double *want = malloc((size_t)sizes[j] * sizeof *want);
            for (int64_t i = 0; i < sizes[j]; i++) want[i] = next_num(f);
            char what[160];
            snprintf(what, sizeof what, "%s step %d param %d", name, t, j);
            expect_close(params[j], want, sizes[j], 1e-5, what);
            free(want);
        }
    }
    expect_word(f, "end");
    kiln_adam_free(opt);
    for (int j = 0; j < np; j++) kiln_tensor_free(params[j]);
    return 1;
}

START_TEST(matches_torch_optim) {
    FILE *f = fopen(g_torch_file, "r");
    ck_assert_msg(f != NULL, "cannot open %s", g_torch_file);
    int scenarios = 0;
    while (replay_scenario(f)) scenarios++;
    fclose(f);
    ck_assert_msg(scenarios >= 2, "the reference file held %d scenarios", scenarios);
}
END_TEST

static void add_tests(Suite *s, TCase *tc) {
    (void)s;
    tcase_add_test(tc, adam_one_step_by_hand);
    tcase_add_test(tc, adamw_one_step_by_hand);
    tcase_add_test(tc, adamw_steps_match_reference);
    tcase_add_test(tc, adam_l2_steps_match_reference);
    tcase_add_test(tc, adamw_clipped_steps_match_reference);
    tcase_add_test(tc, clip_above_threshold);
    tcase_add_test(tc, clip_below_threshold);
    tcase_add_test(tc, clip_with_loss_scale);
    tcase_add_test(tc, no_clip_with_loss_scale);
    tcase_add_test(tc, skip_flag_leaves_state_bit_identical);
    tcase_add_test(tc, half_copies_read_f16_grads_and_receive_weights);
    tcase_add_test(tc, decay_off_leaves_parameter_undecayed);
    tcase_add_test(tc, decay_off_without_decoupling);
    tcase_add_test(tc, parameter_without_gradient_is_untouched);
    tcase_add_test(tc, optimizer_errors);
    if (g_torch_file) tcase_add_test(tc, matches_torch_optim);
}

int main(int argc, char **argv) {
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--torch-reference")) g_torch_file = argv[i + 1];
    return kt_main_group(argc, argv, "optim", add_tests);
}
