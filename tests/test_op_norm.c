/* LayerNorm and RMSNorm: hand-computed forwards and statistics, finite-difference backwards,
 * and (on GPU backends) agreement with the CPU reference. */
#include <string.h>

#include "core/internal.h" /* the tape record, to read the saved statistics */
#include "testutil.h"

/* Two rows of 4: row 0 has mean 2.5, variance 1.25; row 1 mean 3, variance 3. */
static const float g_x[8] = {1, 2, 3, 4, 2, 2, 2, 6};
static const float g_w[4] = {1, 2, -1, 0.5f}, g_b[4] = {0, 1, 0.5f, -1};
/* xhat = (x - mean) / sqrt(var): rstd 1/sqrt(1.25) = 0.8944272, 1/sqrt(3) = 0.5773503 */
static const float g_xhat[8] = {-1.3416408f, -0.4472136f, 0.4472136f, 1.3416408f,
                                -0.5773503f, -0.5773503f, -0.5773503f, 1.7320508f};

START_TEST(layernorm_by_hand) {
    kiln_ctx *ctx = kt_ctx();
    int64_t sx[2] = {2, 4}, sc[1] = {4};
    kiln_tensor *x = kt_tensor(ctx, KILN_F32, 2, sx, g_x);
    kiln_tensor *w = kt_tensor(ctx, KILN_F32, 1, sc, g_w), *b = kt_tensor(ctx, KILN_F32, 1, sc, g_b);
    kt_expect_values(kiln_layernorm(x, NULL, NULL, 0.0f), g_xhat, 8, 1e-6);
    float yw[8], ywb[8];
    for (int i = 0; i < 8; i++) {
        yw[i] = g_xhat[i] * g_w[i % 4];
        ywb[i] = yw[i] + g_b[i % 4];
    }
    kt_expect_values(kiln_layernorm(x, w, NULL, 0.0f), yw, 8, 1e-6);
    kt_expect_values(kiln_layernorm(x, w, b, 0.0f), ywb, 8, 1e-6);
    /* eps enters under the square root: row 0 with eps 0.75 has rstd 1/sqrt(2) */
    const float row0_eps[4] = {-1.0606602f, -0.3535534f, 0.3535534f, 1.0606602f};
    kiln_tensor *y = kiln_layernorm(kiln_view_rows(x, 0, 1), NULL, NULL, 0.75f);
    kt_expect_values(y, row0_eps, 4, 1e-6);
    kiln_step_reset(ctx);
    kiln_tensor_free(x), kiln_tensor_free(w), kiln_tensor_free(b);
}
END_TEST

START_TEST(layernorm_saves_statistics) {
    kiln_ctx *ctx = kt_ctx();
    int64_t sx[2] = {2, 4};
    kiln_tensor *x = kt_tensor(ctx, KILN_F32, 2, sx, g_x);
    kiln_set_requires_grad(x, 1);
    kiln_tensor *y = kiln_layernorm(x, NULL, NULL, 0.0f);
    ck_assert_ptr_nonnull(y);
    ck_assert_int_ge(y->tape_index, 0);
    kiln_tape_rec *rec = &ctx->tape[y->tape_index];
    const float mean[2] = {2.5f, 3.0f}, rstd[2] = {0.8944272f, 0.5773503f};
    kt_expect_values(rec->saved[0], mean, 2, 1e-6);
    kt_expect_values(rec->saved[1], rstd, 2, 1e-6);
    kiln_tensor *r = kiln_rmsnorm(x, NULL, 0.0f);
    ck_assert_ptr_nonnull(r);
    rec = &ctx->tape[r->tape_index];
    const float rms_rstd[2] = {0.36514837f, 0.28867513f}; /* 1/sqrt(30/4), 1/sqrt(48/4) */
    ck_assert_ptr_null(rec->saved[0]);
    kt_expect_values(rec->saved[1], rms_rstd, 2, 1e-6);
    kiln_step_reset(ctx);
    kiln_tensor_free(x);
}
END_TEST

START_TEST(layernorm_param_grads_by_hand) {
    /* loss = sum(y): dbias = number of rows, dweight = column sums of xhat, and with unit
     * weight dx = rstd * (1 - 1 - xhat * mean(xhat)) = 0 */
    kiln_ctx *ctx = kt_ctx();
    int64_t sx[2] = {2, 4}, sc[1] = {4};
    const float ones[4] = {1, 1, 1, 1};
    kiln_tensor *x = kt_tensor(ctx, KILN_F32, 2, sx, g_x);
    kiln_tensor *w = kt_tensor(ctx, KILN_F32, 1, sc, ones), *b = kt_tensor(ctx, KILN_F32, 1, sc, g_b);
    kiln_set_requires_grad(x, 1), kiln_set_requires_grad(w, 1), kiln_set_requires_grad(b, 1);
    ck_assert_int_eq(kiln_backward(kiln_sum(kiln_layernorm(x, w, b, 0.0f)), 1.0f), KILN_OK);
    const float dbias[4] = {2, 2, 2, 2}, zeros[8] = {0};
    float dweight[4];
    for (int j = 0; j < 4; j++) dweight[j] = g_xhat[j] + g_xhat[4 + j];
    kt_expect_values(kiln_grad(b), dbias, 4, 1e-6);
    kt_expect_values(kiln_grad(w), dweight, 4, 1e-6);
    kt_expect_values(kiln_grad(x), zeros, 8, 1e-6);
    kiln_step_reset(ctx);
    kiln_tensor_free(x), kiln_tensor_free(w), kiln_tensor_free(b);
}
END_TEST

START_TEST(rmsnorm_by_hand) {
    kiln_ctx *ctx = kt_ctx();
    int64_t sx[2] = {2, 4}, sc[1] = {4};
    kiln_tensor *x = kt_tensor(ctx, KILN_F32, 2, sx, g_x);
    kiln_tensor *w = kt_tensor(ctx, KILN_F32, 1, sc, g_w);
    /* row 0: mean(x^2) = 7.5, rstd 0.3651484; row 1: mean(x^2) = 12, rstd 0.2886751 */
    const float y[8] = {0.3651484f, 0.7302967f, 1.0954451f, 1.4605935f,
                        0.5773503f, 0.5773503f, 0.5773503f, 1.7320508f};
    kt_expect_values(kiln_rmsnorm(x, NULL, 0.0f), y, 8, 1e-6);
    float yw[8];
    for (int i = 0; i < 8; i++) yw[i] = y[i] * g_w[i % 4];
    kt_expect_values(kiln_rmsnorm(x, w, 0.0f), yw, 8, 1e-6);
    /* eps 0.5 on row 0: rstd = 1/sqrt(8) */
    const float row0_eps[4] = {0.3535534f, 0.7071068f, 1.0606602f, 1.4142136f};
    kt_expect_values(kiln_rmsnorm(kiln_view_rows(x, 0, 1), NULL, 0.5f), row0_eps, 4, 1e-6);
    kiln_step_reset(ctx);
    kiln_tensor_free(x), kiln_tensor_free(w);
}
END_TEST

START_TEST(norm_errors) {
    kiln_ctx *ctx = kt_ctx();
    kiln_tensor *x = kiln_tensor_2d(ctx, KILN_F32, 3, 5), *w5 = kiln_tensor_1d(ctx, KILN_F32, 5);
    kiln_tensor *w3 = kiln_tensor_1d(ctx, KILN_F32, 3);
    kiln_tensor *h5 = kt_f16_ok("norm_errors: f16 part") ? kiln_tensor_1d(ctx, KILN_F16, 5) : NULL;
    kiln_tensor *ids = kiln_tensor_2d(ctx, KILN_I32, 3, 5), *scalar = kiln_tensor_new(ctx, KILN_F32, 0, NULL);
    ck_assert_ptr_null(kiln_layernorm(x, w3, NULL, 1e-5f));
    ck_assert_int_eq(kiln_error_status(), KILN_ERR_SHAPE);
    ck_assert_ptr_nonnull(strstr(kiln_error_message(), "weight is [3]"));
    ck_assert_ptr_nonnull(strstr(kiln_error_message(), "[5]"));
    ck_assert_ptr_null(kiln_layernorm(x, w5, w3, 1e-5f));
    ck_assert_int_eq(kiln_error_status(), KILN_ERR_SHAPE);
    ck_assert_ptr_nonnull(strstr(kiln_error_message(), "bias"));
    if (h5) {
        ck_assert_ptr_null(kiln_layernorm(x, w5, h5, 1e-5f));
        ck_assert_int_eq(kiln_error_status(), KILN_ERR_DTYPE);
    }
    ck_assert_ptr_null(kiln_layernorm(ids, NULL, NULL, 1e-5f));
    ck_assert_int_eq(kiln_error_status(), KILN_ERR_DTYPE);
    ck_assert_ptr_null(kiln_layernorm(scalar, NULL, NULL, 1e-5f));
    ck_assert_int_eq(kiln_error_status(), KILN_ERR_SHAPE);
    ck_assert_ptr_null(kiln_layernorm(x, NULL, NULL, -1.0f));
    ck_assert_int_eq(kiln_error_status(), KILN_ERR_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(kiln_error_message(), "eps"));
    ck_assert_ptr_null(kiln_rmsnorm(x, w3, 1e-5f));
    ck_assert_int_eq(kiln_error_status(), KILN_ERR_SHAPE);
    ck_assert_ptr_nonnull(strstr(kiln_error_message(), "rmsnorm"));
    kiln_clear_error();
    ck_assert_ptr_null(kiln_rmsnorm(NULL, w5, 1e-5f));
    ck_assert_int_eq(kiln_error_status(), KILN_OK);
    kiln_tensor_free(x), kiln_tensor_free(w5), kiln_tensor_free(w3), kiln_tensor_free(h5);
    kiln_tensor_free(ids), kiln_tensor_free(scalar);
}
END_TEST

static void add_tests(Suite *s, TCase *tc) {
    (void)s;
    tcase_add_test(tc, layernorm_by_hand);
    tcase_add_test(tc, layernorm_saves_statistics);
    tcase_add_test(tc, layernorm_param_grads_by_hand);
    tcase_add_test(tc, rmsnorm_by_hand);
    tcase_add_test(tc, norm_errors);
}

int main(int argc, char **argv) {
    return kt_main_group(argc, argv, "norm", add_tests);
}
