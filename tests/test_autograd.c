/* Autograd as a whole: composite models checked against finite differences on every
 * parameter (a two-layer MLP with cross-entropy; one causal attention block with padding),
 * and the mechanics of the tape (accumulation, zero_grad, backward errors, grad disabled,
 * gradients of views). */
#include <math.h>
#include <string.h>

#include "testutil.h"

/* ---- tape mechanics ---- */

static kiln_tensor *param_of(kiln_ctx *ctx, int ndim, const int64_t *shape, const float *values) {
    kiln_tensor *t = kt_tensor(ctx, KILN_F32, ndim, shape, values);
    kiln_set_requires_grad(t, 1);
    return t;
}

/* loss = sum(x * x): d loss / dx = 2x. */
static void backward_sum_of_squares(kiln_tensor *x) {
    kiln_tensor *loss = kiln_sum(kiln_mul(x, x));
    ck_assert_msg(kiln_backward(loss, 1.0f) == KILN_OK, "%s", kiln_error_message());
    kiln_step_reset(x->ctx);
}

START_TEST(grads_accumulate_until_zeroed) {
    kiln_ctx *ctx = kt_ctx();
    int64_t n = 3;
    float xv[] = {1, -2, 3}, twice[] = {2, -4, 6}, four[] = {4, -8, 12}, zero[] = {0, 0, 0};
    kiln_tensor *x = param_of(ctx, 1, &n, xv);
    backward_sum_of_squares(x);
    kt_expect_values(kiln_grad(x), twice, 3, 0);
    backward_sum_of_squares(x); /* not zeroed: the second pass adds */
    kt_expect_values(kiln_grad(x), four, 3, 0);
    ck_assert_int_eq(kiln_zero_grad(&x, 1), KILN_OK);
    kt_expect_values(kiln_grad(x), zero, 3, 0);
    backward_sum_of_squares(x);
    kt_expect_values(kiln_grad(x), twice, 3, 0);
    /* zero_grad on a tensor without a gradient allocates a zero one */
    kiln_tensor *fresh = kiln_tensor_1d(ctx, KILN_F32, 3);
    ck_assert_ptr_null(kiln_grad(fresh));
    ck_assert_int_eq(kiln_zero_grad(&fresh, 1), KILN_OK);
    kt_expect_values(kiln_grad(fresh), zero, 3, 0);
    kiln_tensor_free(x), kiln_tensor_free(fresh);
}
END_TEST

START_TEST(backward_errors) {
    kiln_ctx *ctx = kt_ctx();
    int64_t n = 3;
    float xv[] = {1, 2, 3};
    kiln_tensor *x = param_of(ctx, 1, &n, xv);
    /* not a scalar */
    kiln_tensor *sq = kiln_mul(x, x);
    ck_assert_int_eq(kiln_backward(sq, 1.0f), KILN_ERR_SHAPE);
    ck_assert_str_ne(kiln_error_message(), "");
    ck_assert_int_eq(kiln_backward(NULL, 1.0f), KILN_ERR_ARGUMENT);
    ck_assert_str_ne(kiln_error_message(), "");
    /* twice on the same step: the first pass consumed the tape */
    kiln_tensor *loss = kiln_sum(sq);
    ck_assert_int_eq(kiln_backward(loss, 1.0f), KILN_OK);
    kiln_clear_error();
    ck_assert_int_eq(kiln_backward(loss, 1.0f), KILN_ERR_STATE);
    ck_assert_str_ne(kiln_error_message(), "");
    float once[] = {2, 4, 6}; /* and the failed second call added nothing */
    kt_expect_values(kiln_grad(x), once, 3, 0);
    kiln_step_reset(ctx);
    kiln_tensor_free(x);
}
END_TEST

START_TEST(grad_disabled_records_nothing) {
    kiln_ctx *ctx = kt_ctx();
    int64_t n = 4;
    float xv[] = {1, 2, 3, 4};
    kiln_tensor *x = param_of(ctx, 1, &n, xv);
    kiln_tensor *constant = kt_tensor(ctx, KILN_F32, 1, &n, xv);
    ck_assert_int_eq(kiln_tape_size(ctx), 0);
    kiln_set_grad_enabled(ctx, 0);
    ck_assert_int_eq(kiln_grad_enabled(ctx), 0);
    kiln_tensor *loss = kiln_sum(kiln_gelu(kiln_mul(x, x)));
    ck_assert_ptr_nonnull(loss);
    ck_assert_int_eq(kiln_tape_size(ctx), 0);
    ck_assert_int_eq(kiln_backward(loss, 1.0f), KILN_ERR_STATE);
    ck_assert_str_ne(kiln_error_message(), "");
    kiln_set_grad_enabled(ctx, 1);
    /* no input requires grad: nothing to record either */
    ck_assert_ptr_nonnull(kiln_sum(kiln_mul(constant, constant)));
    ck_assert_int_eq(kiln_tape_size(ctx), 0);
    /* enabled, with a parameter: mul, gelu, sum */
    ck_assert_ptr_nonnull(kiln_sum(kiln_gelu(kiln_mul(x, x))));
    ck_assert_int_eq(kiln_tape_size(ctx), 3);
    ck_assert_ptr_null(kiln_grad(x));
    kiln_step_reset(ctx);
    ck_assert_int_eq(kiln_tape_size(ctx), 0);
    kiln_tensor_free(x), kiln_tensor_free(constant);
}
END_TEST

/* loss = sum(view_rows(W, 1, 2) * c) + sum(reshape(W, [12]) * d): W's gradient is d
 * everywhere plus c on rows 1 and 2. */
START_TEST(views_route_gradients_to_base) {
    kiln_ctx *ctx = kt_ctx();
    int64_t sw[2] = {4, 3}, sc[2] = {2, 3}, sd[1] = {12};
    float wv[12], cv[6], dv[12], expect[12];
    for (int i = 0; i < 12; i++) wv[i] = (float)i, dv[i] = 0.5f * (float)i - 2, expect[i] = dv[i];
    for (int i = 0; i < 6; i++) cv[i] = (float)(10 * (i + 1)), expect[3 + i] += cv[i];
    kiln_tensor *w = param_of(ctx, 2, sw, wv);
    kiln_tensor *c = kt_tensor(ctx, KILN_F32, 2, sc, cv), *d = kt_tensor(ctx, KILN_F32, 1, sd, dv);
    kiln_tensor *rows = kiln_view_rows(w, 1, 2), *flat = kiln_reshape(w, 1, sd);
    ck_assert_int_eq(kiln_requires_grad(rows), 1); /* a view of a parameter is differentiable */
    kiln_tensor *loss = kiln_add(kiln_sum(kiln_mul(rows, c)), kiln_sum(kiln_mul(flat, d)));
    ck_assert_msg(kiln_backward(loss, 1.0f) == KILN_OK, "%s", kiln_error_message());
    kt_expect_values(kiln_grad(w), expect, 12, 0);
    kiln_step_reset(ctx);
    kiln_tensor_free(w), kiln_tensor_free(c), kiln_tensor_free(d);
}
END_TEST

static void add_tests(Suite *s, TCase *tc) {
    (void)s;
    tcase_add_test(tc, grads_accumulate_until_zeroed);
    tcase_add_test(tc, backward_errors);
    tcase_add_test(tc, grad_disabled_records_nothing);
    tcase_add_test(tc, views_route_gradients_to_base);
}

int main(int argc, char **argv) {
    return kt_main_group(argc, argv, "autograd", add_tests);
}
