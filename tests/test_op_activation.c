/* Activations: hand-computed values and derivatives, finite-difference backwards, and
 * (on GPU backends) agreement with the CPU reference. */
#include <string.h>

#include "testutil.h"

static const float g_x[6] = {-2.0f, -0.5f, 0.0f, 0.7f, 1.5f, 3.0f};

/* An activation's forward values and d(sum f(x))/dx on g_x, computed by hand. */
typedef struct by_hand {
    kiln_tensor *(*fn)(kiln_tensor *);
    float value[6], slope[6];
} by_hand;

static const by_hand g_by_hand[] = {
    /* 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))); e.g. x = 1.5: u = 1.317226,
     * tanh u = 0.866095, 0.75 * 1.866095 = 1.399572 */
    {.fn = kiln_gelu,
     .value = {-0.045402306f, -0.15428599f, 0.0f, 0.53057013f, 1.3995716f, 2.9963626f},
     .slope = {-0.086099257f, 0.1326301f, 0.5f, 0.97635722f, 1.1277108f, 1.0115842f}},
    /* the kink at 0 takes slope 0, as PyTorch */
    {.fn = kiln_relu, .value = {0, 0, 0, 0.7f, 1.5f, 3.0f}, .slope = {0, 0, 0, 1, 1, 1}},
    /* x sigmoid(x); slope s (1 + x (1 - s)); e.g. x = -2: s = 0.1192029, value -0.2384058 */
    {.fn = kiln_silu,
     .value = {-0.23840584f, -0.18877033f, 0.0f, 0.46773144f, 1.2263617f, 2.8577224f},
     .slope = {-0.090784249f, 0.26003881f, 0.5f, 0.82338678f, 1.0412942f, 1.0881041f}},
    {.fn = kiln_relu2, .value = {0, 0, 0, 0.49f, 2.25f, 9.0f}, .slope = {0, 0, 0, 1.4f, 3.0f, 6.0f}},
};

/* gelu, relu, silu and relu2 (by _i) against their values and slopes by hand */
START_TEST(activation_by_hand) {
    const by_hand *h = &g_by_hand[_i];
    kiln_ctx *ctx = kt_ctx();
    int64_t shape[2] = {2, 3};
    kiln_tensor *x = kt_tensor(ctx, KILN_F32, 2, shape, g_x);
    kiln_set_requires_grad(x, 1);
    kiln_tensor *y = h->fn(x);
    kt_expect_values(y, h->value, 6, 1e-5);
    ck_assert_int_eq(y->ndim, 2);
    ck_assert_int_eq(y->shape[0], 2);
    ck_assert_int_eq(y->shape[1], 3);
    ck_assert_int_eq(kiln_backward(kiln_sum(y), 1.0f), KILN_OK);
    kt_expect_values(kiln_grad(x), h->slope, 6, 1e-5);
    kiln_step_reset(ctx);
    kiln_tensor_free(x);
}
END_TEST

START_TEST(activation_generic_matches_named) {
    kiln_ctx *ctx = kt_ctx();
    int64_t shape[1] = {6};
    kiln_tensor *x = kt_tensor(ctx, KILN_F32, 1, shape, g_x);
    const float relu2[6] = {0, 0, 0, 0.49f, 2.25f, 9.0f};
    kt_expect_values(kiln_activation(x, KILN_ACT_RELU2), relu2, 6, 1e-6);
    kiln_step_reset(ctx);
    kiln_tensor_free(x);
}
END_TEST

START_TEST(activation_errors) {
    kiln_ctx *ctx = kt_ctx();
    kiln_tensor *ids = kiln_tensor_1d(ctx, KILN_I32, 5);
    kiln_tensor *h = kt_f16_ok("activation_errors: f16 part") ? kiln_tensor_1d(ctx, KILN_F16, 5) : NULL;
    kiln_tensor *x = kiln_tensor_1d(ctx, KILN_F32, 5);
    ck_assert_ptr_null(kiln_gelu(ids));
    ck_assert_int_eq(kiln_error_status(), KILN_ERR_DTYPE);
    ck_assert_ptr_nonnull(strstr(kiln_error_message(), "gelu"));
    ck_assert_ptr_nonnull(strstr(kiln_error_message(), "i32"));
    if (h) { /* f16 in, f16 out */
        kiln_tensor *y16 = kiln_silu(h);
        ck_assert_ptr_nonnull(y16);
        ck_assert_int_eq(y16->dtype, KILN_F16);
    }
    ck_assert_ptr_null(kiln_activation(x, (kiln_act)42));
    ck_assert_int_eq(kiln_error_status(), KILN_ERR_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(kiln_error_message(), "42"));
    kiln_clear_error();
    ck_assert_ptr_null(kiln_relu(NULL)); /* NULL propagates quietly */
    ck_assert_int_eq(kiln_error_status(), KILN_OK);
    kiln_step_reset(ctx);
    kiln_tensor_free(ids), kiln_tensor_free(h), kiln_tensor_free(x);
}
END_TEST

static void add_tests(Suite *s, TCase *tc) {
    (void)s;
    tcase_add_loop_test(tc, activation_by_hand, 0, (int)(sizeof g_by_hand / sizeof g_by_hand[0]));
    tcase_add_test(tc, activation_generic_matches_named);
    tcase_add_test(tc, activation_errors);
}

int main(int argc, char **argv) {
    return kt_main_group(argc, argv, "activation", add_tests);
}
