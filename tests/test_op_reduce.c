/* Reductions to a scalar (sum, mean, global L2 norm): hand-computed values and gradients,
 * error paths, finite-difference backwards, and (on GPU backends) agreement with the CPU
 * reference. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

START_TEST(sum_mean_by_hand) {
    kiln_ctx *ctx = kt_ctx();
    int64_t s[2] = {2, 3};
    const float v[6] = {1, -2, 3.5f, 4, 0.25f, -6};
    kiln_tensor *x = kt_tensor(ctx, KILN_F32, 2, s, v);
    kiln_set_requires_grad(x, 1);
    kiln_tensor *sum = kiln_sum(x), *mean = kiln_mean(x);
    const float total = 0.75f, avg = 0.125f;
    kt_expect_values(sum, &total, 1, 1e-6);
    kt_expect_values(mean, &avg, 1, 1e-6);
    ck_assert_int_eq(sum->ndim, 0);
    /* d(3 sum + mean)/dx = 3 + 1/6 everywhere */
    ck_assert_int_eq(kiln_backward(kiln_add(kiln_scale(sum, 3.0f), mean), 1.0f), KILN_OK);
    float g[6];
    for (int i = 0; i < 6; i++) g[i] = 3.0f + 1.0f / 6.0f;
    kt_expect_values(kiln_grad(x), g, 6, 1e-6);
    kiln_step_reset(ctx);
    kiln_tensor_free(x);
}
END_TEST

START_TEST(global_norm_by_hand) {
    kiln_ctx *ctx = kt_ctx();
    int64_t s2[1] = {2}, s1[2] = {1, 1}, s3[1] = {3};
    const float av[2] = {3, 4}, bv[1] = {12}, cv[3] = {1, 1, 1};
    kiln_tensor *a = kt_tensor(ctx, KILN_F32, 1, s2, av), *b = kt_tensor(ctx, KILN_F32, 2, s1, bv);
    kiln_tensor *c = kt_tensor(ctx, KILN_F32, 1, s3, cv);
    kiln_set_requires_grad(a, 1), kiln_set_requires_grad(b, 1); /* c is a constant */
    kiln_tensor *xs[3] = {a, b, c};
    /* sqrt(9 + 16 + 144) = 13; with c: sqrt(169 + 3) */
    const float thirteen = 13.0f, with_c = sqrtf(172.0f);
    kiln_tensor *n2 = kiln_global_norm(xs, 2);
    kt_expect_values(n2, &thirteen, 1, 1e-6);
    ck_assert_int_eq(n2->ndim, 0);
    kiln_tensor *n3 = kiln_global_norm(xs, 3);
    kt_expect_values(n3, &with_c, 1, 1e-6);
    /* seed 2 on the 2-tensor norm: dx = 2 x / 13 */
    ck_assert_int_eq(kiln_backward(n2, 2.0f), KILN_OK);
    const float da[2] = {6.0f / 13, 8.0f / 13}, db[1] = {24.0f / 13};
    kt_expect_values(kiln_grad(a), da, 2, 1e-6);
    kt_expect_values(kiln_grad(b), db, 1, 1e-6);
    ck_assert_ptr_null(kiln_grad(c));
    kiln_step_reset(ctx);
    kiln_tensor_free(a), kiln_tensor_free(b), kiln_tensor_free(c);
}
END_TEST

START_TEST(global_norm_large) {
    /* enough elements for the parallel reduction; x[i] = (i % 7) - 3 */
    kiln_ctx *ctx = kt_ctx();
    int64_t n = 70001;
    float *v = malloc((size_t)n * sizeof *v);
    double sumsq = 0;
    for (int64_t i = 0; i < n; i++) {
        v[i] = (float)(i % 7) - 3.0f;
        sumsq += (double)v[i] * v[i];
    }
    kiln_tensor *x = kt_tensor(ctx, KILN_F32, 1, &n, v);
    kiln_tensor *xs[2] = {x, x};
    const float expect = (float)sqrt(2 * sumsq); /* 2 * 10000 * 28 + 2 * 9 (the extra i = 70000) */
    kt_expect_values(kiln_global_norm(xs, 2), &expect, 1, 1e-6);
    kiln_step_reset(ctx);
    kiln_tensor_free(x);
    free(v);
}
END_TEST

START_TEST(reduce_errors) {
    kiln_ctx *ctx = kt_ctx();
    kiln_tensor *x = kiln_tensor_2d(ctx, KILN_F32, 2, 3), *ids = kiln_tensor_1d(ctx, KILN_I32, 3);
    kiln_tensor *h = kt_f16_ok("reduce_errors: f16 part") ? kiln_tensor_1d(ctx, KILN_F16, 3) : NULL;
    ck_assert_ptr_null(kiln_sum(ids));
    ck_assert_int_eq(kiln_error_status(), KILN_ERR_DTYPE);
    if (h) {
        /* an f16 input gives an f32 scalar: reductions keep their f32 accumulation */
        kiln_tensor *m16 = kiln_mean(h);
        ck_assert_ptr_nonnull(m16);
        ck_assert_int_eq(m16->dtype, KILN_F32);
        kiln_tensor *mixed[2] = {x, h};
        ck_assert_ptr_null(kiln_global_norm(mixed, 2));
        ck_assert_int_eq(kiln_error_status(), KILN_ERR_DTYPE);
        ck_assert_ptr_nonnull(strstr(kiln_error_message(), "tensor 1 is f16 but tensor 0 is f32"));
        ck_assert_ptr_nonnull(strstr(kiln_error_message(), "kiln_cast"));
    }
    ck_assert_ptr_null(kiln_global_norm(&x, 0));
    ck_assert_int_eq(kiln_error_status(), KILN_ERR_ARGUMENT);
    ck_assert_ptr_null(kiln_global_norm(NULL, 1));
    ck_assert_int_eq(kiln_error_status(), KILN_ERR_ARGUMENT);
    kiln_clear_error();
    kiln_tensor *with_null[2] = {x, NULL};
    ck_assert_ptr_null(kiln_global_norm(with_null, 2)); /* NULL propagates quietly */
    ck_assert_ptr_null(kiln_sum(NULL));
    ck_assert_int_eq(kiln_error_status(), KILN_OK);
    kiln_tensor_free(x), kiln_tensor_free(ids), kiln_tensor_free(h);
}
END_TEST

static void add_tests(Suite *s, TCase *tc) {
    (void)s;
    tcase_add_test(tc, sum_mean_by_hand);
    tcase_add_test(tc, global_norm_by_hand);
    tcase_add_test(tc, global_norm_large);
    tcase_add_test(tc, reduce_errors);
}

int main(int argc, char **argv) {
    return kt_main_group(argc, argv, "reduce", add_tests);
}
