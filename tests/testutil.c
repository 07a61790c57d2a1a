/* Shared test machinery: see testutil.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static const char *g_backend = "cpu";
static kiln_ctx *g_ctx, *g_cpu;

const char *kt_backend(void) { return g_backend; }

static void close_contexts(void) {
    if (g_ctx && g_ctx != g_cpu) kiln_close(g_ctx);
    if (g_cpu) kiln_close(g_cpu);
    g_ctx = g_cpu = NULL;
}

kiln_ctx *kt_cpu(void) {
    if (!g_cpu) {
        ck_assert_msg(kiln_open("cpu", &g_cpu) == KILN_OK, "cpu: %s", kiln_error_message());
    }
    return g_cpu;
}

kiln_ctx *kt_ctx(void) {
    if (!strcmp(g_backend, "cpu")) return kt_cpu();
    if (!g_ctx) {
        ck_assert_msg(kiln_open(g_backend, &g_ctx) == KILN_OK, "%s: %s", g_backend, kiln_error_message());
    }
    return g_ctx;
}

int kt_f16_ok(const char *what) {
    kiln_ctx *ctx = kt_ctx();
    if (kiln_supports_dtype(ctx, KILN_F16)) return 1;
    printf("note: %s skipped: %s (%s) cannot store f16\n", what, g_backend, kiln_device_name(ctx));
    fflush(stdout);
    return 0;
}

kiln_tensor *kt_tensor(kiln_ctx *ctx, kiln_dtype dtype, int ndim, const int64_t *shape,
                       const float *values) {
    kiln_tensor *t = kiln_tensor_new(ctx, dtype, ndim, shape);
    ck_assert_msg(t != NULL, "kiln_tensor_new: %s", kiln_error_message());
    if (dtype == KILN_I32) {
        int64_t n = kiln_numel(t);
        int32_t *iv = malloc((size_t)n * sizeof *iv);
        for (int64_t i = 0; i < n; i++) iv[i] = (int32_t)values[i];
        ck_assert(kiln_upload(t, iv, (size_t)n * 4) == KILN_OK);
        free(iv);
    } else {
        ck_assert_msg(kiln_upload_f32(t, values, kiln_numel(t)) == KILN_OK, "%s", kiln_error_message());
    }
    return t;
}

kiln_tensor *kt_tensor_i32(kiln_ctx *ctx, int ndim, const int64_t *shape, const int32_t *values) {
    kiln_tensor *t = kiln_tensor_new(ctx, KILN_I32, ndim, shape);
    ck_assert_msg(t != NULL, "kiln_tensor_new: %s", kiln_error_message());
    ck_assert(kiln_upload(t, values, kiln_nbytes(t)) == KILN_OK);
    return t;
}

static float *download(const kiln_tensor *t) {
    int64_t n = kiln_numel(t);
    float *v = malloc((size_t)n * sizeof *v);
    ck_assert(v != NULL);
    if (t->dtype == KILN_I32) {
        int32_t *iv = malloc((size_t)n * 4);
        ck_assert(kiln_download(t, iv, (size_t)n * 4) == KILN_OK);
        for (int64_t i = 0; i < n; i++) v[i] = (float)iv[i];
        free(iv);
    } else {
        ck_assert_msg(kiln_download_f32(t, v, n) == KILN_OK, "%s", kiln_error_message());
    }
    return v;
}

void kt_expect_values(const kiln_tensor *t, const float *expected, int64_t n, double tol) {
    ck_assert_msg(t != NULL, "tensor is NULL: %s", kiln_error_message());
    ck_assert_int_eq(kiln_numel(t), n);
    float *v = download(t);
    for (int64_t i = 0; i < n; i++) {
        double diff = fabs((double)v[i] - expected[i]);
        ck_assert_msg(!isnan(v[i]) && diff <= tol + tol * fabs(expected[i]),
                      "element %lld: got %.7g, expected %.7g", (long long)i, v[i], expected[i]);
    }
    free(v);
}

double kt_normalized_error(const float *a, const float *b, int64_t n) {
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        if (isnan(a[i]) || isnan(b[i]) || isinf(a[i]) != isinf(b[i])) return INFINITY;
        double d = (double)a[i] - b[i];
        num += d * d;
        den += (double)a[i] * a[i];
    }
    return num / (den > 1e-30 ? den : 1e-30);
}

/* ---- case inputs ---- */

static float *input_values(const kt_case *c, int which) {
    const kt_input *in = &c->in[which];
    int64_t n = 1;
    for (int d = 0; d < in->ndim; d++) n *= in->shape[d];
    float *v = malloc((size_t)n * sizeof *v);
    uint64_t seed = 0x5eed;
    for (const char *p = c->name; *p; p++) seed = seed * 131 + (unsigned char)*p;
    for (int64_t i = 0; i < n; i++) {
        switch (in->init) {
        case KT_NORMAL:
            v[i] = in->lo + (in->hi ? in->hi : 1.0f) * kiln_rng_normal(seed, (uint64_t)which, (uint64_t)i);
            break;
        case KT_UNIFORM:
            v[i] = in->lo + (in->hi - in->lo) * kiln_rng_uniform(seed, (uint64_t)which, (uint64_t)i);
            break;
        case KT_AWAY0: {
            float x = kiln_rng_normal(seed, (uint64_t)which, (uint64_t)i);
            v[i] = x + (x >= 0 ? 0.1f : -0.1f);
            break;
        }
        case KT_INT: {
            int64_t span = (int64_t)in->hi - (int64_t)in->lo + 1;
            v[i] = (float)((int64_t)in->lo + (int64_t)(kiln_rng_u32(seed, (uint64_t)which, (uint64_t)i) % (uint64_t)span));
            break;
        }
        }
    }
    return v;
}

/* How a run builds the case's inputs: as declared, or for an f16 comparison with every
 * floating input's values rounded to f16 and built as f16 (the backend under test) or as
 * f32 (the reference). */
typedef enum kt_precision { KT_AS_DECLARED = 0, KT_F16_UNDER_TEST, KT_F16_REFERENCE } kt_precision;

static float round_f16(float v) { return kiln_f16_to_f32(kiln_f32_to_f16(v)); }

static void make_inputs(kiln_ctx *ctx, const kt_case *c, kiln_tensor **t, float **values, kt_precision prec) {
    for (int i = 0; i < c->n_in; i++) {
        const kt_input *in = &c->in[i];
        kiln_dtype dtype = in->dtype;
        values[i] = input_values(c, i);
        if (prec != KT_AS_DECLARED && dtype != KILN_I32) {
            int64_t n = 1;
            for (int d = 0; d < in->ndim; d++) n *= in->shape[d];
            for (int64_t e = 0; e < n; e++) values[i][e] = round_f16(values[i][e]);
            dtype = prec == KT_F16_UNDER_TEST ? KILN_F16 : KILN_F32;
        }
        t[i] = kt_tensor(ctx, dtype, in->ndim, in->shape, values[i]);
        if (in->grad) kiln_set_requires_grad(t[i], 1);
    }
}

static void free_inputs(const kt_case *c, kiln_tensor **t, float **values) {
    for (int i = 0; i < c->n_in; i++) {
        kiln_tensor_free(t[i]);
        free(values[i]);
    }
}

/* A fixed random weighting of the output: loss = sum(out * w), so every output element
 * contributes to the gradient with a different weight. Rounded to f16 values for f16
 * runs, so that an f16 output's weight tensor holds exactly the reference's weights. */
static float *output_weights(int64_t n, int f16_values) {
    float *w = malloc((size_t)n * sizeof *w);
    for (int64_t i = 0; i < n; i++) {
        w[i] = kiln_rng_normal(0xfeed, 7, (uint64_t)i);
        if (f16_values) w[i] = round_f16(w[i]);
    }
    return w;
}

static double weighted_sum(const kiln_tensor *out, const float *w) {
    float *v = download(out);
    double s = 0;
    for (int64_t i = 0; i < kiln_numel(out); i++) s += (double)v[i] * w[i];
    free(v);
    return s;
}

/* Builds out and, when asked, runs backward from sum(out * w); w has out's dtype (an f16
 * output is weighted in f16: ops take one dtype), with f16 values in f16 runs. NULL (with
 * a note) when the case makes f16 tensors itself (a cast) on a device that cannot store
 * f16: the case does not apply there. */
static kiln_tensor *forward(kiln_ctx *ctx, const kt_case *c, kiln_tensor **in, float **w,
                            int backward, kt_precision prec) {
    kiln_set_grad_enabled(ctx, backward);
    kiln_tensor *out = c->build(in, c->param);
    if (!out && kiln_error_status() == KILN_ERR_UNSUPPORTED && !kiln_supports_dtype(ctx, KILN_F16)) {
        printf("note: %s skipped: %s\n", c->name, kiln_error_message());
        fflush(stdout);
        kiln_set_grad_enabled(ctx, 1);
        return NULL;
    }
    ck_assert_msg(out != NULL, "%s%s: build failed: %s", c->name, prec ? " (f16)" : "", kiln_error_message());
    if (backward) {
        int64_t n = kiln_numel(out);
        if (!*w) *w = output_weights(n, prec != KT_AS_DECLARED);
        kiln_tensor *wt = kiln_tensor_temp(ctx, out->dtype, out->ndim, out->shape);
        ck_assert(wt && kiln_upload_f32(wt, *w, n) == KILN_OK);
        kiln_tensor *loss = kiln_sum(kiln_mul(out, wt));
        ck_assert_msg(loss != NULL, "%s: loss: %s", c->name, kiln_error_message());
        ck_assert_msg(kiln_backward(loss, 1.0f) == KILN_OK, "%s: backward: %s", c->name, kiln_error_message());
    }
    kiln_set_grad_enabled(ctx, 1);
    return out;
}

/* Central finite differences on the CPU reference, on up to 48 elements of each input. */
static void gradcheck(const kt_case *c) {
    kiln_ctx *ctx = kt_cpu();
    kiln_tensor *in[KT_MAX_INPUTS];
    float *vals[KT_MAX_INPUTS], *w = NULL;
    make_inputs(ctx, c, in, vals, KT_AS_DECLARED);
    forward(ctx, c, in, &w, 1, KT_AS_DECLARED);
    double eps = c->fd_eps > 0 ? c->fd_eps : 1e-2;
    double tol = c->bwd_tol > 0 ? c->bwd_tol : 1e-4;
    for (int i = 0; i < c->n_in; i++) {
        if (!c->in[i].grad) continue;
        ck_assert_msg(in[i]->grad != NULL, "%s: input %d received no gradient", c->name, i);
        float *analytic = download(in[i]->grad);
        int64_t n = kiln_numel(in[i]);
        int64_t step = n <= 48 ? 1 : n / 48;
        int64_t count = 0;
        float *fd = malloc((size_t)(n / step + 1) * sizeof *fd);
        float *an = malloc((size_t)(n / step + 1) * sizeof *an);
        for (int64_t e = (n <= 48 ? 0 : 3 % step); e < n; e += step) {
            float orig = vals[i][e];
            double plus, minus;
            vals[i][e] = orig + (float)eps;
            kiln_upload_f32(in[i], vals[i], n);
            plus = weighted_sum(forward(ctx, c, in, &w, 0, KT_AS_DECLARED), w);
            vals[i][e] = orig - (float)eps;
            kiln_upload_f32(in[i], vals[i], n);
            minus = weighted_sum(forward(ctx, c, in, &w, 0, KT_AS_DECLARED), w);
            vals[i][e] = orig;
            kiln_upload_f32(in[i], vals[i], n);
            /* the perturbation actually applied, after f32 rounding */
            double h = ((double)(orig + (float)eps) - (double)(orig - (float)eps));
            fd[count] = (float)((plus - minus) / h);
            an[count] = analytic[e];
            count++;
        }
        double err = kt_normalized_error(fd, an, count);
        if (!(err <= tol)) {
            for (int64_t j = 0; j < count && j < 8; j++)
                fprintf(stderr, "  %s input %d sample %lld: fd %.6g analytic %.6g\n", c->name, i,
                        (long long)j, fd[j], an[j]);
        }
        ck_assert_msg(err <= tol, "%s: gradient of input %d vs finite differences: normalized error %.3g > %.3g",
                      c->name, i, err, tol);
        free(fd);
        free(an);
        free(analytic);
    }
    free(w);
    kiln_step_reset(ctx);
    free_inputs(c, in, vals);
}

/* KT_REPORT=1 in the environment prints every comparison's error: the margin a tolerance
 * leaves, when choosing one. */
static void report(const kt_case *c, const char *how, const char *what, double err, double tol) {
    const char *r = getenv("KT_REPORT");
    if (r && r[0] == '1')
        printf("report: %-32s %s%-6s %-12s error %.3g (tolerance %.3g)\n", c->name, g_backend, how, what, err, tol);
}

/* Forward output and every gradient of the case on `dev` (inputs built per `prec`) against
 * the CPU reference (inputs per `ref_prec`), under ftol and btol. */
static void compare_runs(const kt_case *c, kiln_ctx *dev, kt_precision prec, kt_precision ref_prec, double ftol,
                         double btol) {
    kiln_ctx *cpu = kt_cpu();
    const char *how = prec == KT_F16_UNDER_TEST ? " in f16" : "";
    kiln_tensor *in_c[KT_MAX_INPUTS], *in_d[KT_MAX_INPUTS];
    float *vc[KT_MAX_INPUTS], *vd[KT_MAX_INPUTS], *w = NULL;
    make_inputs(cpu, c, in_c, vc, ref_prec);
    make_inputs(dev, c, in_d, vd, prec);
    int backward = !c->no_grad;
    kiln_tensor *oc = forward(cpu, c, in_c, &w, backward, ref_prec);
    kiln_tensor *od = forward(dev, c, in_d, &w, backward, prec);
    if (!od) { /* the case needs f16, which this device cannot store */
        free(w);
        kiln_step_reset(cpu);
        kiln_step_reset(dev);
        free_inputs(c, in_c, vc);
        free_inputs(c, in_d, vd);
        return;
    }
    float *a = download(oc), *b = download(od);
    double err = kt_normalized_error(a, b, kiln_numel(oc));
    report(c, how, "forward", err, ftol);
    ck_assert_msg(err <= ftol, "%s on %s%s: forward vs cpu: normalized error %.3g > %.3g", c->name, g_backend, how,
                  err, ftol);
    free(a);
    free(b);
    for (int i = 0; backward && i < c->n_in; i++) {
        if (!c->in[i].grad) continue;
        ck_assert_msg(in_d[i]->grad != NULL, "%s on %s%s: input %d received no gradient", c->name, g_backend, how, i);
        ck_assert_msg(in_d[i]->grad->dtype == in_d[i]->dtype, "%s on %s%s: the gradient of %s input %d is %s",
                      c->name, g_backend, how, kiln_dtype_name(in_d[i]->dtype), i,
                      kiln_dtype_name(in_d[i]->grad->dtype));
        a = download(in_c[i]->grad);
        b = download(in_d[i]->grad);
        err = kt_normalized_error(a, b, kiln_numel(in_c[i]));
        char what[32];
        snprintf(what, sizeof what, "gradient %d", i);
        report(c, how, what, err, btol);
        ck_assert_msg(err <= btol, "%s on %s%s: gradient of input %d vs cpu: normalized error %.3g > %.3g", c->name,
                      g_backend, how, i, err, btol);
        free(a);
        free(b);
    }
    free(w);
    kiln_step_reset(cpu);
    kiln_step_reset(dev);
    free_inputs(c, in_c, vc);
    free_inputs(c, in_d, vd);
}

void kt_run_case(const kt_case *c) {
    for (int i = 0; i < c->n_in; i++) {
        if (c->in[i].dtype != KILN_F16) continue;
        char what[96];
        snprintf(what, sizeof what, "%s (an f16 input)", c->name);
        if (!kt_f16_ok(what)) return;
        break;
    }
    if (!strcmp(g_backend, "cpu")) {
        if (!c->no_grad) gradcheck(c);
    } else {
        compare_runs(c, kt_ctx(), KT_AS_DECLARED, KT_AS_DECLARED, c->fwd_tol > 0 ? c->fwd_tol : 1e-10,
                     c->bwd_tol > 0 ? c->bwd_tol : 1e-8);
    }
}

void kt_run_case_f16(const kt_case *c) {
    int floating = 0;
    for (int i = 0; i < c->n_in; i++) floating |= c->in[i].dtype != KILN_I32;
    if (c->no_f16 || !floating) return;
    char what[96];
    snprintf(what, sizeof what, "%s in f16", c->name);
    if (!kt_f16_ok(what)) return;
    kiln_ctx *dev = kt_ctx();
    double tol = c->f16_tol > 0 ? c->f16_tol : KT_F16_TOL;
    compare_runs(c, dev, KT_F16_UNDER_TEST, KT_F16_REFERENCE, tol, tol);
}

static const kt_case *g_cases;

START_TEST(test_case_table) { kt_run_case(&g_cases[_i]); }
END_TEST

START_TEST(test_case_table_f16) { kt_run_case_f16(&g_cases[_i]); }
END_TEST

const char *kt_parse_backend(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--backend") && i + 1 < argc) g_backend = argv[++i];
    }
    return g_backend;
}

int kt_main(int argc, char **argv, const char *suite_name, void (*add_tests)(Suite *s, TCase *tc),
            const kt_case *cases, int n_cases) {
    kt_parse_backend(argc, argv);
    atexit(close_contexts);
    if (strcmp(g_backend, "cpu")) {
        kiln_ctx *probe;
        if (kiln_open(g_backend, &probe) != KILN_OK) {
            fprintf(stderr, "skipping: %s\n", kiln_error_message());
            return 77;
        }
        kiln_close(probe);
    }
    Suite *s = suite_create(suite_name);
    TCase *tc = tcase_create(g_backend);
    tcase_set_timeout(tc, 600);
    if (add_tests) add_tests(s, tc);
    g_cases = cases;
    if (n_cases > 0) {
        tcase_add_loop_test(tc, test_case_table, 0, n_cases);
        tcase_add_loop_test(tc, test_case_table_f16, 0, n_cases);
    }
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    /* close here, not only at exit: exit() runs thread-local destructors before atexit
     * handlers, and a driver with thread-local state (oclgrind's runtime) then corrupts
     * the heap when the contexts are released */
    close_contexts();
    return failed ? 1 : 0;
}

int kt_require_backend(const char *backend) {
    kiln_ctx *probe;
    if (kiln_open(backend, &probe) != KILN_OK) {
        fprintf(stderr, "skipping: %s\n", kiln_error_message());
        return 77;
    }
    kiln_close(probe);
    return 0;
}

int kt_run_tests(const char *suite_name, const char *tcase_name, void (*add_tests)(TCase *tc)) {
    Suite *s = suite_create(suite_name);
    TCase *tc = tcase_create(tcase_name);
    tcase_set_timeout(tc, 600);
    add_tests(tc);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}

int kt_run_tests_on(const char *backend, kiln_ctx **ctx, const char *suite_name, const char *tcase_name,
                    void (*add_tests)(TCase *tc)) {
    int skip = kt_require_backend(backend);
    if (skip) return skip;
    if (kiln_open(backend, ctx) != KILN_OK) {
        fprintf(stderr, "%s\n", kiln_error_message());
        return 1;
    }
    int failed = kt_run_tests(suite_name, tcase_name, add_tests);
    kiln_close(*ctx);
    *ctx = NULL;
    return failed;
}
