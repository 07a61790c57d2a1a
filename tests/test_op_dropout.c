/* Dropout: the kept fraction, the kept values, the mask as the documented function of
 * (seed, stream, index), stream bookkeeping, the identity cases, the backward, errors, and
 * the case table (each build pins the stream so repeated forwards draw one fixed mask). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static float *download_all(const kiln_tensor *t) {
    int64_t n = kiln_numel(t);
    float *v = malloc((size_t)n * sizeof *v);
    ck_assert(v != NULL);
    ck_assert_msg(kiln_download_f32(t, v, n) == KILN_OK, "%s", kiln_error_message());
    return v;
}

/* x[i] = 1 + i % 7: nonzero everywhere, so a zero output means a dropped element. */
static kiln_tensor *ramp(kiln_ctx *ctx, int64_t n, float **values) {
    float *v = malloc((size_t)n * sizeof *v);
    ck_assert(v != NULL);
    for (int64_t i = 0; i < n; i++) v[i] = 1.0f + (float)(i % 7);
    kiln_tensor *t = kt_tensor(ctx, KILN_F32, 1, &n, v);
    *values = v;
    return t;
}

START_TEST(dropout_mask_statistics_and_values) {
    kiln_ctx *ctx = kt_ctx();
    const int64_t n = 100000;
    const float p = 0.3f;
    float *xv;
    kiln_tensor *x = ramp(ctx, n, &xv);
    kiln_set_rng_stream(ctx, 11);
    float *y = download_all(kiln_dropout(x, p));
    int64_t kept = 0;
    for (int64_t i = 0; i < n; i++) {
        /* the mask is exactly the documented draw, on every backend */
        int keep = kiln_rng_uniform(kiln_seed(ctx), 11, (uint64_t)i) >= p;
        /* relative 1e-6: GPU divisions may be a few ulp off */
        ck_assert_msg(keep ? fabsf(y[i] - xv[i] / (1.0f - p)) <= 1e-6f * y[i] : y[i] == 0.0f,
                      "element %lld: x %g -> y %g (keep %d)", (long long)i, xv[i], y[i], keep);
        kept += keep;
    }
    /* the binomial standard deviation of the fraction is 0.0014 */
    double frac = (double)kept / (double)n;
    ck_assert_msg(fabs(frac - (1.0 - p)) < 0.01, "kept fraction %.4f, expected about %.2f", frac, 1.0 - p);
    free(y);
    free(xv);
    kiln_step_reset(ctx);
    kiln_tensor_free(x);
}
END_TEST

START_TEST(dropout_streams_and_seeds) {
    kiln_ctx *ctx = kt_ctx();
    const int64_t n = 4099;
    float *xv;
    kiln_tensor *x = ramp(ctx, n, &xv);
    kiln_set_rng_stream(ctx, 5);
    kiln_tensor *a = kiln_dropout(x, 0.5f);
    ck_assert_int_eq((int)kiln_rng_stream(ctx), 6); /* each call takes the next stream */
    kiln_tensor *b = kiln_dropout(x, 0.5f);         /* stream 6: another mask */
    kiln_set_rng_stream(ctx, 5);
    kiln_tensor *c = kiln_dropout(x, 0.5f); /* stream 5 again: a's mask */
    kiln_set_seed(ctx, 1234);
    kiln_set_rng_stream(ctx, 5);
    kiln_tensor *d = kiln_dropout(x, 0.5f); /* another seed: another mask */
    kiln_set_seed(ctx, 1);
    float *av = download_all(a), *bv = download_all(b), *cv = download_all(c), *dv = download_all(d);
    ck_assert_msg(memcmp(av, cv, (size_t)n * 4) == 0, "same seed and stream gave different masks");
    int64_t differ_b = 0, differ_d = 0;
    for (int64_t i = 0; i < n; i++) {
        differ_b += (av[i] == 0) != (bv[i] == 0);
        differ_d += (av[i] == 0) != (dv[i] == 0);
    }
    /* independent masks at p = 0.5 disagree on about half the elements */
    ck_assert_msg(differ_b > n / 3 && differ_d > n / 3, "masks too similar: %lld and %lld of %lld differ",
                  (long long)differ_b, (long long)differ_d, (long long)n);
    free(av), free(bv), free(cv), free(dv), free(xv);
    kiln_step_reset(ctx);
    kiln_tensor_free(x);
}
END_TEST

/* p == 0 and evaluation mode return x itself (no copy, no record). Training calls take a
 * stream even at p == 0; evaluation calls take none. */
START_TEST(dropout_identity) {
    kiln_ctx *ctx = kt_ctx();
    kiln_tensor *x = kiln_tensor_1d(ctx, KILN_F32, 9);
    kiln_set_rng_stream(ctx, 0);
    ck_assert_ptr_eq(kiln_dropout(x, 0.0f), x);
    ck_assert_int_eq((int)kiln_rng_stream(ctx), 1);
    kiln_set_training(ctx, 0);
    ck_assert_ptr_eq(kiln_dropout(x, 0.9f), x);
    ck_assert_int_eq((int)kiln_rng_stream(ctx), 1);
    kiln_set_training(ctx, 1);
    kiln_tensor_free(x);
}
END_TEST

/* loss = sum(dropout(x)): dx = keep / (1 - p) = y / x. */
START_TEST(dropout_backward_by_hand) {
    kiln_ctx *ctx = kt_ctx();
    const int64_t n = 1001;
    const float p = 0.25f;
    float *xv;
    kiln_tensor *x = ramp(ctx, n, &xv);
    kiln_set_requires_grad(x, 1);
    kiln_tensor *y = kiln_dropout(x, p);
    ck_assert_msg(kiln_backward(kiln_sum(y), 1.0f) == KILN_OK, "%s", kiln_error_message());
    float *yv = download_all(y), *gv = download_all(kiln_grad(x));
    for (int64_t i = 0; i < n; i++) {
        float expect = yv[i] != 0 ? 1.0f / (1.0f - p) : 0.0f;
        ck_assert_msg(fabsf(gv[i] - expect) <= 1e-6f * expect, "element %lld: grad %g, expected %g", (long long)i, gv[i], expect);
    }
    free(yv), free(gv), free(xv);
    kiln_step_reset(ctx);
    kiln_tensor_free(x);
}
END_TEST

START_TEST(dropout_errors) {
    kiln_ctx *ctx = kt_ctx();
    kiln_tensor *x = kiln_tensor_1d(ctx, KILN_F32, 4), *xi = kiln_tensor_1d(ctx, KILN_I32, 4);
    const float bad[] = {-0.1f, 1.0f, 1.5f, NAN};
    for (int i = 0; i < 4; i++) {
        kiln_clear_error();
        ck_assert_ptr_null(kiln_dropout(x, bad[i]));
        ck_assert_int_eq(kiln_error_status(), KILN_ERR_ARGUMENT);
        ck_assert_ptr_nonnull(strstr(kiln_error_message(), "[0, 1)"));
    }
    ck_assert_ptr_null(kiln_dropout(xi, 0.5f));
    ck_assert_int_eq(kiln_error_status(), KILN_ERR_DTYPE);
    kiln_tensor_free(x), kiln_tensor_free(xi);
}
END_TEST

static void add_tests(Suite *s, TCase *tc) {
    (void)s;
    tcase_add_test(tc, dropout_mask_statistics_and_values);
    tcase_add_test(tc, dropout_streams_and_seeds);
    tcase_add_test(tc, dropout_identity);
    tcase_add_test(tc, dropout_backward_by_hand);
    tcase_add_test(tc, dropout_errors);
}

int main(int argc, char **argv) {
    return kt_main_group(argc, argv, "dropout", add_tests);
}
