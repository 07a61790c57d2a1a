/* Masked softmax: hand-computed rows (scale, temperature, causal with Tq <= Tk and Tq > Tk,
 * key lengths, the additive input, huge scores), fully masked rows that must be zeros and
 * not NaN, a hand-computed backward, argument errors, and the case table. */
#include <math.h>
#include <string.h>

#include "testutil.h"

static const int64_t ROW3[4] = {1, 1, 2, 3};

START_TEST(softmax_rows_by_hand) {
    kiln_ctx *ctx = kt_ctx();
    float xv[] = {1, 2, 3, 1000, 1001, 1000};
    kiln_tensor *x = kt_tensor(ctx, KILN_F32, 4, ROW3, xv);
    float plain[] = {0.09003057f, 0.24472847f, 0.66524096f, 0.21194156f, 0.57611688f, 0.21194156f};
    kt_expect_values(kiln_softmax(x, NULL), plain, 6, 1e-6);
    /* scale 2, temperature 4: z = x / 2 */
    kiln_softmax_opts o = {.scale = 2, .temperature = 4};
    float scaled[] = {0.18632372f, 0.30719589f, 0.50648039f, 0.27406862f, 0.45186276f, 0.27406862f};
    kt_expect_values(kiln_softmax(x, &o), scaled, 6, 1e-6);
    kiln_step_reset(ctx);
    kiln_tensor_free(x);
}
END_TEST

START_TEST(softmax_causal_by_hand) {
    kiln_ctx *ctx = kt_ctx();
    /* Tq = 2 < Tk = 3: query 0 sees keys 0..1, query 1 sees all three */
    float xv[] = {0, 0, 5, 1, 2, 3};
    kiln_tensor *x = kt_tensor(ctx, KILN_F32, 4, ROW3, xv);
    kiln_softmax_opts o = {.causal = 1};
    float expect[] = {0.5f, 0.5f, 0, 0.09003057f, 0.24472847f, 0.66524096f};
    kt_expect_values(kiln_softmax(x, &o), expect, 6, 1e-6);
    /* Tq = 3 > Tk = 2: query i sees keys j <= i - 1, so query 0 sees none (a zero row) */
    int64_t s32[4] = {1, 1, 3, 2};
    float yv[] = {1, 2, 3, 4, 0, 0};
    kiln_tensor *y = kt_tensor(ctx, KILN_F32, 4, s32, yv);
    float expect32[] = {0, 0, 1, 0, 0.5f, 0.5f};
    kt_expect_values(kiln_softmax(y, &o), expect32, 6, 1e-6);
    kiln_step_reset(ctx);
    kiln_tensor_free(x), kiln_tensor_free(y);
}
END_TEST

START_TEST(softmax_lengths_and_add_by_hand) {
    kiln_ctx *ctx = kt_ctx();
    /* B = 2, one query each; batch 0 has 2 keys, batch 1 none (all zeros, no NaN) */
    int64_t s[4] = {2, 1, 1, 3}, sl[1] = {2};
    float xv[] = {1, 2, 3, 1, 2, 3};
    int32_t lv[] = {2, 0};
    kiln_tensor *x = kt_tensor(ctx, KILN_F32, 4, s, xv), *len = kt_tensor_i32(ctx, 1, sl, lv);
    kiln_softmax_opts o = {.key_lengths = len};
    float expect[] = {0.26894142f, 0.73105858f, 0, 0, 0, 0};
    kt_expect_values(kiln_softmax(x, &o), expect, 6, 1e-6);
    /* RealFormer add: softmax((3 x + add) / 2) */
    int64_t s1[4] = {1, 1, 1, 3};
    float av[] = {0.5f, -1, 2}, addv[] = {1, 0, -1};
    kiln_tensor *a = kt_tensor(ctx, KILN_F32, 4, s1, av), *add = kt_tensor(ctx, KILN_F32, 4, s1, addv);
    kiln_softmax_opts oa = {.scale = 3, .temperature = 2, .add = add};
    float expect_add[] = {0.21957412f, 0.0140369f, 0.76638898f};
    kt_expect_values(kiln_softmax(a, &oa), expect_add, 3, 1e-6);
    kiln_step_reset(ctx);
    kiln_tensor_free(x), kiln_tensor_free(len), kiln_tensor_free(a), kiln_tensor_free(add);
}
END_TEST

/* y = softmax(x / 2) of [1, 2, 3]; loss = y[2]: g = y * (e_2 - y_2), dx = g * scale / T,
 * dadd = g / T. The second row is fully masked by its key length: zero gradient. */
START_TEST(softmax_backward_by_hand) {
    kiln_ctx *ctx = kt_ctx();
    int64_t s[4] = {2, 1, 1, 3}, sl[1] = {2};
    float xv[] = {1, 2, 3, 4, 5, 6}, wv[] = {0, 0, 1, 1, 1, 1};
    int32_t lv[] = {3, 0};
    kiln_tensor *x = kt_tensor(ctx, KILN_F32, 4, s, xv), *w = kt_tensor(ctx, KILN_F32, 4, s, wv);
    kiln_tensor *add = kiln_tensor_new(ctx, KILN_F32, 4, s), *len = kt_tensor_i32(ctx, 1, sl, lv);
    kiln_set_requires_grad(x, 1);
    kiln_set_requires_grad(add, 1);
    kiln_softmax_opts o = {.scale = 2, .temperature = 4, .add = add, .key_lengths = len};
    kiln_tensor *loss = kiln_sum(kiln_mul(kiln_softmax(x, &o), w));
    ck_assert_msg(kiln_backward(loss, 1.0f) == KILN_OK, "%s", kiln_error_message());
    float dx[] = {-0.04718466f, -0.07779435f, 0.124979f, 0, 0, 0};
    float dadd[] = {-0.02359233f, -0.03889717f, 0.0624895f, 0, 0, 0};
    kt_expect_values(kiln_grad(x), dx, 6, 1e-5);
    kt_expect_values(kiln_grad(add), dadd, 6, 1e-5);
    kiln_step_reset(ctx);
    kiln_tensor_free(x), kiln_tensor_free(w), kiln_tensor_free(add), kiln_tensor_free(len);
}
END_TEST

START_TEST(softmax_errors) {
    kiln_ctx *ctx = kt_ctx();
    int64_t s4[4] = {2, 1, 3, 3}, s3[3] = {2, 3, 3}, bad_len[1] = {3};
    kiln_tensor *x = kiln_tensor_new(ctx, KILN_F32, 4, s4), *x3 = kiln_tensor_new(ctx, KILN_F32, 3, s3);
    kiln_tensor *xi = kiln_tensor_new(ctx, KILN_I32, 4, s4);
    kiln_tensor *len3 = kiln_tensor_new(ctx, KILN_I32, 1, bad_len), *lenf = kiln_tensor_1d(ctx, KILN_F32, 2);
    kiln_tensor *add3 = kiln_tensor_new(ctx, KILN_F32, 3, s3);
    ck_assert_ptr_null(kiln_softmax(x3, NULL));
    ck_assert_int_eq(kiln_error_status(), KILN_ERR_SHAPE);
    ck_assert_ptr_nonnull(strstr(kiln_error_message(), "[B, H, Tq, Tk]"));
    ck_assert_ptr_null(kiln_softmax(xi, NULL));
    ck_assert_int_eq(kiln_error_status(), KILN_ERR_DTYPE);
    kiln_softmax_opts o = {.key_lengths = len3};
    ck_assert_ptr_null(kiln_softmax(x, &o));
    ck_assert_int_eq(kiln_error_status(), KILN_ERR_SHAPE);
    ck_assert_ptr_nonnull(strstr(kiln_error_message(), "key_lengths"));
    o.key_lengths = lenf;
    ck_assert_ptr_null(kiln_softmax(x, &o));
    ck_assert_ptr_nonnull(strstr(kiln_error_message(), "key_lengths"));
    kiln_softmax_opts oa = {.add = add3};
    ck_assert_ptr_null(kiln_softmax(x, &oa));
    ck_assert_int_eq(kiln_error_status(), KILN_ERR_SHAPE);
    ck_assert_ptr_nonnull(strstr(kiln_error_message(), "add"));
    kiln_softmax_opts ot = {.temperature = -1};
    ck_assert_ptr_null(kiln_softmax(x, &ot));
    ck_assert_int_eq(kiln_error_status(), KILN_ERR_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(kiln_error_message(), "temperature"));
    kiln_tensor_free(x), kiln_tensor_free(x3), kiln_tensor_free(xi);
    kiln_tensor_free(len3), kiln_tensor_free(lenf), kiln_tensor_free(add3);
}
END_TEST

static void add_tests(Suite *s, TCase *tc) {
    (void)s;
    tcase_add_test(tc, softmax_rows_by_hand);
    tcase_add_test(tc, softmax_causal_by_hand);
    tcase_add_test(tc, softmax_lengths_and_add_by_hand);
    tcase_add_test(tc, softmax_backward_by_hand);
    tcase_add_test(tc, softmax_errors);
}

int main(int argc, char **argv) {
    return kt_main_group(argc, argv, "softmax", add_tests);
}
