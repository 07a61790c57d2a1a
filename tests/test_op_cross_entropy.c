/* Cross-entropy: hand values (uniform logits give log V, smoothing, ignore_index, huge
 * logits), the hand-computed gradient, all rows ignored (loss 0 and zero gradient, no NaN),
 * an out-of-range target, shape and dtype errors, and the case table. */
#include <math.h>
#include <string.h>

#include "core/internal.h" /* kiln_check_device_errors */
#include "testutil.h"

#define IGNORE (-100)

START_TEST(xent_uniform_logits) {
    kiln_ctx *ctx = kt_ctx();
    int64_t sl[2] = {3, 5}, st[1] = {3};
    float zv[15] = {0};
    int32_t tv[] = {0, 2, 4};
    kiln_tensor *z = kt_tensor(ctx, KILN_F32, 2, sl, zv), *t = kt_tensor_i32(ctx, 1, st, tv);
    kiln_set_requires_grad(z, 1);
    float log5[] = {1.60943791f};
    kt_expect_values(kiln_cross_entropy(z, t, 0.0f, IGNORE), log5, 1, 1e-6);
    /* smoothing mixes in the mean over the vocabulary, which is also log V here */
    kiln_tensor *loss = kiln_cross_entropy(z, t, 0.2f, IGNORE);
    kt_expect_values(loss, log5, 1, 1e-6);
    ck_assert_msg(kiln_backward(loss, 1.0f) == KILN_OK, "%s", kiln_error_message());
    /* d/dz = (softmax - (1 - s) onehot - s / V) / rows = (0.2 - 0.8 [v == t] - 0.04) / 3 */
    float g[15];
    for (int r = 0; r < 3; r++)
        for (int v = 0; v < 5; v++) g[r * 5 + v] = (0.16f - (v == tv[r] ? 0.8f : 0.0f)) / 3.0f;
    kt_expect_values(kiln_grad(z), g, 15, 1e-6);
    kiln_step_reset(ctx);
    kiln_tensor_free(z), kiln_tensor_free(t);
}
END_TEST

START_TEST(xent_smoothing_and_ignore_by_hand) {
    kiln_ctx *ctx = kt_ctx();
    /* row 0: lse([1,2,3]) - 3 = 0.40760596; row 1 ignored; row 2: log 3 */
    int64_t sl[2] = {3, 3}, st[1] = {3};
    float zv[] = {1, 2, 3, 5, 5, 5, 0, 0, 0};
    int32_t tv[] = {2, IGNORE, 0};
    kiln_tensor *z = kt_tensor(ctx, KILN_F32, 2, sl, zv), *t = kt_tensor_i32(ctx, 1, st, tv);
    kiln_set_requires_grad(z, 1);
    kiln_tensor *loss = kiln_cross_entropy(z, t, 0.0f, IGNORE);
    float mean2[] = {0.75310913f};
    kt_expect_values(loss, mean2, 1, 1e-6);
    ck_assert_msg(kiln_backward(loss, 1.0f) == KILN_OK, "%s", kiln_error_message());
    /* (softmax - onehot) / 2 on the two counted rows; nothing on the ignored one */
    float g[] = {0.04501529f, 0.12236424f, -0.16737952f, 0, 0, 0, -0.33333333f, 0.16666667f, 0.16666667f};
    kt_expect_values(kiln_grad(z), g, 9, 1e-6);
    /* one row with smoothing 0.1: 0.9 (lse - 3) + 0.1 (lse - 2) = lse - 2.9 */
    int64_t s1[2] = {1, 3}, st1[1] = {1};
    int32_t t1v[] = {2};
    kiln_tensor *z1 = kt_tensor(ctx, KILN_F32, 2, s1, zv), *t1 = kt_tensor_i32(ctx, 1, st1, t1v);
    float smooth[] = {0.50760596f};
    kt_expect_values(kiln_cross_entropy(z1, t1, 0.1f, IGNORE), smooth, 1, 1e-6);
    kiln_step_reset(ctx);
    kiln_tensor_free(z), kiln_tensor_free(t), kiln_tensor_free(z1), kiln_tensor_free(t1);
}
END_TEST

START_TEST(xent_huge_logits_and_leading_dims) {
    kiln_ctx *ctx = kt_ctx();
    /* logits [2, 1, 3], targets [2, 1]: losses ~0 and 1000, mean 500; no overflow */
    int64_t sl[3] = {2, 1, 3}, st[2] = {2, 1};
    float zv[] = {1000, 0, -1000, 1000, 0, -1000};
    int32_t tv[] = {0, 1};
    kiln_tensor *z = kt_tensor(ctx, KILN_F32, 3, sl, zv), *t = kt_tensor_i32(ctx, 2, st, tv);
    float expect[] = {500.0f};
    kt_expect_values(kiln_cross_entropy(z, t, 0.0f, IGNORE), expect, 1, 1e-6);
    kiln_step_reset(ctx);
    kiln_tensor_free(z), kiln_tensor_free(t);
}
END_TEST

START_TEST(xent_all_ignored) {
    kiln_ctx *ctx = kt_ctx();
    int64_t sl[2] = {2, 4}, st[1] = {2};
    float zv[] = {1, 2, 3, 4, -1, 0, 1, 2};
    int32_t tv[] = {-1, -1};
    kiln_tensor *z = kt_tensor(ctx, KILN_F32, 2, sl, zv), *t = kt_tensor_i32(ctx, 1, st, tv);
    kiln_set_requires_grad(z, 1);
    kiln_tensor *loss = kiln_cross_entropy(z, t, 0.1f, -1);
    float zero[8] = {0};
    kt_expect_values(loss, zero, 1, 0); /* kt_expect_values also rejects NaN */
    ck_assert_msg(kiln_backward(loss, 1.0f) == KILN_OK, "%s", kiln_error_message());
    kt_expect_values(kiln_grad(z), zero, 8, 0);
    kiln_step_reset(ctx);
    kiln_tensor_free(z), kiln_tensor_free(t);
}
END_TEST

/* A bad target fails at once on the cpu (with the row in the message); a device backend
 * raises a flag that the engine reports on the next check. */
static void expect_range_error(kiln_ctx *ctx, kiln_tensor *loss, const char *cpu_message) {
    kiln_status s = loss ? kiln_check_device_errors(ctx) : kiln_error_status();
    ck_assert_int_eq(s, KILN_ERR_RANGE);
    ck_assert_str_ne(kiln_error_message(), "");
    if (!loss) ck_assert_msg(strstr(kiln_error_message(), cpu_message), "message: %s", kiln_error_message());
    kiln_clear_error();
}

START_TEST(xent_errors) {
    kiln_ctx *ctx = kt_ctx();
    int64_t sl[2] = {2, 3}, st[1] = {2}, st_bad[1] = {3};
    float zv[6] = {0};
    int32_t too_big[] = {0, 3}, negative[] = {-1, 0};
    kiln_tensor *z = kt_tensor(ctx, KILN_F32, 2, sl, zv);
    kiln_tensor *t_big = kt_tensor_i32(ctx, 1, st, too_big), *t_neg = kt_tensor_i32(ctx, 1, st, negative);
    kiln_tensor *t_shape = kiln_tensor_new(ctx, KILN_I32, 1, st_bad), *t_f32 = kiln_tensor_new(ctx, KILN_F32, 1, st);
    kiln_tensor *z_i32 = kiln_tensor_new(ctx, KILN_I32, 2, sl);
    expect_range_error(ctx, kiln_cross_entropy(z, t_big, 0.0f, IGNORE), "target 3 at row 1");
    expect_range_error(ctx, kiln_cross_entropy(z, t_neg, 0.0f, IGNORE), "target -1 at row 0");
    ck_assert_ptr_null(kiln_cross_entropy(z, t_shape, 0.0f, IGNORE));
    ck_assert_int_eq(kiln_error_status(), KILN_ERR_SHAPE);
    ck_assert_ptr_null(kiln_cross_entropy(z, t_f32, 0.0f, IGNORE));
    ck_assert_int_eq(kiln_error_status(), KILN_ERR_DTYPE);
    ck_assert_ptr_null(kiln_cross_entropy(z_i32, t_neg, 0.0f, IGNORE));
    ck_assert_int_eq(kiln_error_status(), KILN_ERR_DTYPE);
    ck_assert_ptr_null(kiln_cross_entropy(z, t_neg, 1.5f, -1));
    ck_assert_int_eq(kiln_error_status(), KILN_ERR_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(kiln_error_message(), "label_smoothing"));
    kiln_step_reset(ctx);
    kiln_tensor_free(z), kiln_tensor_free(t_big), kiln_tensor_free(t_neg);
    kiln_tensor_free(t_shape), kiln_tensor_free(t_f32), kiln_tensor_free(z_i32);
}
END_TEST

static void add_tests(Suite *s, TCase *tc) {
    (void)s;
    tcase_add_test(tc, xent_uniform_logits);
    tcase_add_test(tc, xent_smoothing_and_ignore_by_hand);
    tcase_add_test(tc, xent_huge_logits_and_leading_dims);
    tcase_add_test(tc, xent_all_ignored);
    tcase_add_test(tc, xent_errors);
}

int main(int argc, char **argv) {
    return kt_main_group(argc, argv, "cross_entropy", add_tests);
}
