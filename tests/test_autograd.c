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

/* What kiln_backward_notify saw: the order of the leaves, and each one's gradient at the
 * moment it was called ready. */
typedef struct ready_log {
    kiln_tensor **leaves;
    int order[3], n;
    float seen[3][3];
} ready_log;

static kiln_status log_ready(void *user, int index) {
    ready_log *log = user;
    log->order[log->n++] = index;
    return kiln_download_f32(kiln_grad(log->leaves[index]), log->seen[index], 3);
}

static kiln_status refuse_ready(void *user, int index) {
    (void)user, (void)index;
    return kiln_set_error(KILN_ERR_STATE, "refused");
}

/* loss = sum(x * a * b) + sum(reshape(a) * d), c unused: c is ready first (nothing
 * reaches it), then b (its only use is the second multiply), then a, whose first use is
 * the first op although a view of it is used last. Each gradient is already final when
 * its leaf is called ready. */
START_TEST(backward_notify_calls_leaves_when_final) {
    kiln_ctx *ctx = kt_ctx();
    int64_t n = 3;
    float xv[] = {1, 2, 3}, av[] = {0.5f, -1, 2}, bv[] = {3, 4, -5}, dv[] = {7, 8, 9}, zero[] = {0, 0, 0};
    kiln_tensor *x = kt_tensor(ctx, KILN_F32, 1, &n, xv), *d = kt_tensor(ctx, KILN_F32, 1, &n, dv);
    kiln_tensor *leaves[3] = {param_of(ctx, 1, &n, av), param_of(ctx, 1, &n, bv), param_of(ctx, 1, &n, zero)};
    ck_assert_int_eq(kiln_zero_grad(leaves, 3), KILN_OK);
    kiln_tensor *a = leaves[0], *b = leaves[1];
    kiln_tensor *loss = kiln_add(kiln_sum(kiln_mul(kiln_mul(x, a), b)), kiln_sum(kiln_mul(kiln_reshape(a, 1, &n), d)));
    ready_log log = {.leaves = leaves};
    ck_assert_msg(kiln_backward_notify(loss, 1.0f, leaves, 3, log_ready, &log) == KILN_OK, "%s",
                  kiln_error_message());
    ck_assert_int_eq(log.n, 3);
    ck_assert_int_eq(log.order[0], 2);
    ck_assert_int_eq(log.order[1], 1);
    ck_assert_int_eq(log.order[2], 0);
    float da[3], db[3];
    for (int i = 0; i < 3; i++) da[i] = xv[i] * bv[i] + dv[i], db[i] = xv[i] * av[i];
    kt_expect_values(kiln_grad(a), da, 3, 0);
    kt_expect_values(kiln_grad(b), db, 3, 0);
    for (int i = 0; i < 3; i++) {
        ck_assert_float_eq(log.seen[0][i], da[i]);
        ck_assert_float_eq(log.seen[1][i], db[i]);
        ck_assert_float_eq(log.seen[2][i], 0.0f);
    }
    /* no callback is an argument error; a failing callback stops the backward with its status */
    kiln_step_reset(ctx);
    loss = kiln_sum(kiln_mul(x, a));
    ck_assert_int_eq(kiln_backward_notify(loss, 1.0f, leaves, 3, NULL, NULL), KILN_ERR_ARGUMENT);
    ck_assert_int_eq(kiln_backward_notify(loss, 1.0f, leaves, 3, refuse_ready, NULL), KILN_ERR_STATE);
    ck_assert_int_eq(kiln_tape_size(ctx), 0);
    kiln_step_reset(ctx);
    for (int i = 0; i < 3; i++) kiln_tensor_free(leaves[i]);
    kiln_tensor_free(x), kiln_tensor_free(d);
}
END_TEST

static void add_tests(Suite *s, TCase *tc) {
    (void)s;
    tcase_add_test(tc, grads_accumulate_until_zeroed);
    tcase_add_test(tc, backward_errors);
    tcase_add_test(tc, grad_disabled_records_nothing);
    tcase_add_test(tc, views_route_gradients_to_base);
    tcase_add_test(tc, backward_notify_calls_leaves_when_final);
}

int main(int argc, char **argv) {
    return kt_main_group(argc, argv, "autograd", add_tests);
}
