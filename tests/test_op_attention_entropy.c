/* Attention entropy: hand-computed heads (uniform, one-hot, mixed rows), a hand-computed
 * backward with the p == 0 convention, errors, and the case table (including the entropy of
 * a causal softmax, whose masked probabilities are exactly 0). */
#include <math.h>
#include <string.h>

#include "testutil.h"

START_TEST(entropy_by_hand) {
    kiln_ctx *ctx = kt_ctx();
    /* head 0 uniform over 4 keys: log 4; head 1 one-hot: 0 */
    int64_t s[4] = {1, 2, 1, 4};
    float pv[] = {0.25f, 0.25f, 0.25f, 0.25f, 1, 0, 0, 0};
    kiln_tensor *p = kt_tensor(ctx, KILN_F32, 4, s, pv);
    float expect[] = {1.38629436f, 0};
    kt_expect_values(kiln_attention_entropy(p), expect, 2, 1e-6);
    /* B = 2, Tq = 2: rows with entropy log 2, 0, log 2, log 2, averaged: 0.75 log 2 */
    int64_t s2[4] = {2, 1, 2, 2};
    float qv[] = {0.5f, 0.5f, 1, 0, 0.5f, 0.5f, 0.5f, 0.5f};
    kiln_tensor *q = kt_tensor(ctx, KILN_F32, 4, s2, qv);
    float expect2[] = {0.51986038f};
    kt_expect_values(kiln_attention_entropy(q), expect2, 1, 1e-6);
    kiln_step_reset(ctx);
    kiln_tensor_free(p), kiln_tensor_free(q);
}
END_TEST

/* loss = sum_h out[h]: dp = -(log p + 1) / (B * Tq), and 0 where p == 0. */
START_TEST(entropy_backward_by_hand) {
    kiln_ctx *ctx = kt_ctx();
    int64_t s[4] = {1, 2, 1, 4};
    float pv[] = {0.25f, 0.25f, 0.25f, 0.25f, 1, 0, 0, 0};
    kiln_tensor *p = kt_tensor(ctx, KILN_F32, 4, s, pv);
    kiln_set_requires_grad(p, 1);
    ck_assert_msg(kiln_backward(kiln_sum(kiln_attention_entropy(p)), 1.0f) == KILN_OK, "%s",
                  kiln_error_message());
    float g = 0.38629436f; /* -(log 0.25 + 1) */
    float expect[] = {g, g, g, g, -1, 0, 0, 0};
    kt_expect_values(kiln_grad(p), expect, 8, 1e-6);
    kiln_step_reset(ctx);
    kiln_tensor_free(p);
}
END_TEST

START_TEST(entropy_errors) {
    kiln_ctx *ctx = kt_ctx();
    int64_t s3[3] = {2, 3, 4}, s4[4] = {1, 2, 3, 4};
    kiln_tensor *p3 = kiln_tensor_new(ctx, KILN_F32, 3, s3), *pi = kiln_tensor_new(ctx, KILN_I32, 4, s4);
    ck_assert_ptr_null(kiln_attention_entropy(p3));
    ck_assert_int_eq(kiln_error_status(), KILN_ERR_SHAPE);
    ck_assert_ptr_nonnull(strstr(kiln_error_message(), "[B, H, Tq, Tk]"));
    ck_assert_ptr_null(kiln_attention_entropy(pi));
    ck_assert_int_eq(kiln_error_status(), KILN_ERR_DTYPE);
    kiln_clear_error();
    ck_assert_ptr_null(kiln_attention_entropy(NULL));
    ck_assert_int_eq(kiln_error_status(), KILN_OK);
    kiln_tensor_free(p3), kiln_tensor_free(pi);
}
END_TEST

static void add_tests(Suite *s, TCase *tc) {
    (void)s;
    tcase_add_test(tc, entropy_by_hand);
    tcase_add_test(tc, entropy_backward_by_hand);
    tcase_add_test(tc, entropy_errors);
}

int main(int argc, char **argv) {
    return kt_main_group(argc, argv, "attention_entropy", add_tests);
}
