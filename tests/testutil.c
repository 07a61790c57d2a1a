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

double kt_normalized_error(const float *a, const float *b, int64_t n) { return kiln_verify_normalized_error(a, b, n); }

/* ---- case tables ---- */

/* One run of a case with the device's GEMM left to choose (variant NULL) or forced. */
static void run_case_variant(const kiln_verify_case *c, kiln_verify_precision p, const char *variant) {
    kiln_ctx *dev = kt_ctx();
    kiln_verify_result r;
    char how[48];
    snprintf(how, sizeof how, "%s%s%s", p == KILN_VERIFY_F16 ? " in f16" : "", variant ? ", gemm " : "",
             variant ? variant : "");
    ck_assert_msg(kiln_set_gemm_variant(dev, variant) == KILN_OK, "%s", kiln_error_message());
    kiln_status st = kiln_verify_run(dev, kt_cpu(), c, p, &r);
    kiln_set_gemm_variant(dev, NULL);
    ck_assert_msg(st == KILN_OK, "%s%s on %s: %s", c->name, how, g_backend, kiln_error_message());
    /* KT_REPORT=1 prints each run's closest comparison: the margin a tolerance leaves,
     * when choosing one */
    const char *report = getenv("KT_REPORT");
    if (report && report[0] == '1' && r.comparisons)
        printf("report: %-32s %s%-6s %-12s error %.3g (tolerance %.3g)\n", c->name, g_backend, how, r.what, r.error,
               r.tolerance);
    if (r.verdict == KILN_VERIFY_SKIP) printf("note: %s%s skipped: %s\n", c->name, how, r.message);
    fflush(stdout);
    ck_assert_msg(r.verdict != KILN_VERIFY_FAIL, "%s%s on %s: %s", c->name, how, g_backend, r.message);
}

/* A case, and whether it runs once per GEMM variant of the device too (its group's flag). */
typedef struct table_entry {
    const kiln_verify_case *c;
    int gemm_variants;
} table_entry;

/* KT_GEMM_VARIANTS=0 in the environment: the device's own GEMM choice only (oclgrind, which
 * interprets every work-item, runs the variants in test_opencl_gemm instead). */
static int gemm_variants_wanted(void) {
    const char *v = getenv("KT_GEMM_VARIANTS");
    return !(v && !strcmp(v, "0"));
}

static void run_entry(const table_entry *e, kiln_verify_precision p) {
    run_case_variant(e->c, p, NULL);
    const char *names[8];
    int n = e->gemm_variants && gemm_variants_wanted() ? kiln_gemm_variants(kt_ctx(), names, 8) : 0;
    for (int v = 0; v < n; v++) run_case_variant(e->c, p, names[v]);
}

static table_entry *g_entries;
static int g_n_entries;

START_TEST(test_case_table) { run_entry(&g_entries[_i], KILN_VERIFY_DECLARED); }
END_TEST

START_TEST(test_case_table_f16) {
    if (kiln_verify_has_f16_form(g_entries[_i].c)) run_entry(&g_entries[_i], KILN_VERIFY_F16);
}
END_TEST

const char *kt_parse_backend(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--backend") && i + 1 < argc) g_backend = argv[++i];
    }
    return g_backend;
}

int kt_main(int argc, char **argv, const char *suite_name, void (*add_tests)(Suite *s, TCase *tc),
            const kiln_verify_case *cases, int n_cases) {
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
    if (cases) { /* else kt_main_groups has filled the entries */
        free(g_entries);
        g_entries = calloc((size_t)(n_cases > 0 ? n_cases : 1), sizeof *g_entries);
        if (!g_entries) return 1;
        for (int i = 0; i < n_cases; i++) g_entries[i].c = &cases[i];
        g_n_entries = n_cases;
    }
    n_cases = g_n_entries;
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
    free(g_entries);
    g_entries = NULL, g_n_entries = 0;
    return failed ? 1 : 0;
}

int kt_main_groups(int argc, char **argv, const char *suite_name, const char *const *groups,
                   void (*add_tests)(Suite *s, TCase *tc)) {
    int total = 0;
    for (int i = 0; groups[i]; i++) {
        const kiln_verify_group *g = kiln_verify_group_find(groups[i]);
        if (!g) {
            fprintf(stderr, "no verification group %s in the library\n", groups[i]);
            return 1;
        }
        total += g->count;
    }
    g_entries = calloc((size_t)(total > 0 ? total : 1), sizeof *g_entries);
    if (!g_entries) return 1;
    for (int i = 0; groups[i]; i++) {
        const kiln_verify_group *g = kiln_verify_group_find(groups[i]);
        for (int j = 0; j < g->count; j++)
            g_entries[g_n_entries++] = (table_entry){.c = &g->cases[j], .gemm_variants = g->gemm_variants};
    }
    return kt_main(argc, argv, suite_name, add_tests, NULL, 0);
}

int kt_main_group(int argc, char **argv, const char *group, void (*add_tests)(Suite *s, TCase *tc)) {
    return kt_main_groups(argc, argv, group, (const char *const[]){group, NULL}, add_tests);
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

int kt_run_tcase(const char *suite_name, const char *tcase_name, int timeout_s, void (*add_tests)(TCase *tc)) {
    Suite *s = suite_create(suite_name);
    TCase *tc = tcase_create(tcase_name);
    if (timeout_s) tcase_set_timeout(tc, timeout_s);
    add_tests(tc);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}

int kt_run_tests(const char *suite_name, const char *tcase_name, void (*add_tests)(TCase *tc)) {
    return kt_run_tcase(suite_name, tcase_name, 600, add_tests);
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

double kt_max_abs_diff(const float *a, const float *b, int64_t n) {
    double d = 0;
    /* as fmax (a NaN is never taken), written out: gcc 12's vectorizer crashes on this fmax
     * reduction on aarch64 (-O3) */
    for (int64_t i = 0; i < n; i++) {
        double e = fabs((double)a[i] - b[i]);
        if (e > d) d = e;
    }
    return d;
}

float *kt_loss_and_grads(kiln_ctx *ctx, kiln_tensor *const *weights, int n, kiln_tensor *(*loss_fn)(void *user),
                         void *user, int64_t *n_out) {
    int64_t total = 1;
    for (int i = 0; i < n; i++) total += kiln_numel(weights[i]);
    ck_assert_int_eq(kiln_zero_grad(weights, n), KILN_OK);
    kiln_set_grad_enabled(ctx, 1);
    kiln_tensor *loss = loss_fn(user);
    ck_assert_msg(loss != NULL, "%s", kiln_error_message());
    ck_assert_int_eq(kiln_backward(loss, 1.0f), KILN_OK);
    float *out = malloc((size_t)total * sizeof *out);
    ck_assert_int_eq(kiln_read_scalar(loss, &out[0]), KILN_OK);
    int64_t at = 1;
    for (int i = 0; i < n; i++) {
        int64_t k = kiln_numel(weights[i]);
        ck_assert_int_eq(kiln_download_f32(kiln_grad(weights[i]), out + at, k), KILN_OK);
        at += k;
    }
    kiln_step_reset(ctx);
    *n_out = total;
    return out;
}
