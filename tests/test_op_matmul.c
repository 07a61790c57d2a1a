/* matmul and the elementwise ops (add, sub, mul, div; b of a's shape, its trailing dims or
 * one element): hand-computed forwards, finite-difference backwards, and (on GPU backends)
 * agreement with the CPU reference. */
#include <string.h>

#include "testutil.h"

START_TEST(matmul_by_hand) {
    kiln_ctx *ctx = kt_ctx();
    int64_t sa[2] = {2, 3}, sb[2] = {3, 2}, sbias[1] = {2};
    float av[] = {1, 2, 3, 4, 5, 6}, bv[] = {7, 8, 9, 10, 11, 12}, biasv[] = {0.5f, -1};
    kiln_tensor *a = kt_tensor(ctx, KILN_F32, 2, sa, av), *b = kt_tensor(ctx, KILN_F32, 2, sb, bv);
    kiln_tensor *bias = kt_tensor(ctx, KILN_F32, 1, sbias, biasv);
    /* [1 2 3; 4 5 6] [7 8; 9 10; 11 12] = [58 64; 139 154] */
    float expect[] = {58.5f, 63, 139.5f, 153};
    kt_expect_values(kiln_matmul(a, b, bias, 0, 0), expect, 4, 1e-6);
    /* A^T A = [17 22 27; 22 29 36; 27 36 45] */
    float ata[] = {17, 22, 27, 22, 29, 36, 27, 36, 45};
    kt_expect_values(kiln_matmul(a, a, NULL, 1, 0), ata, 9, 1e-6);
    /* A A^T = [14 32; 32 77] */
    float aat[] = {14, 32, 32, 77};
    kt_expect_values(kiln_matmul(a, a, NULL, 0, 1), aat, 4, 1e-6);
    kiln_step_reset(ctx);
    kiln_tensor_free(a), kiln_tensor_free(b), kiln_tensor_free(bias);
}
END_TEST

START_TEST(elementwise_by_hand) {
    kiln_ctx *ctx = kt_ctx();
    int64_t sa[2] = {2, 3}, sb[1] = {3};
    float av[] = {1, 2, 3, 4, 5, 6}, bv[] = {10, 20, 30};
    kiln_tensor *a = kt_tensor(ctx, KILN_F32, 2, sa, av), *b = kt_tensor(ctx, KILN_F32, 1, sb, bv);
    float add[] = {11, 22, 33, 14, 25, 36}, sub[] = {-9, -18, -27, -6, -15, -24},
          mul[] = {10, 40, 90, 40, 100, 180}, div[] = {0.1f, 0.1f, 0.1f, 0.4f, 0.25f, 0.2f},
          sc[] = {-2, -4, -6, -8, -10, -12};
    kt_expect_values(kiln_add(a, b), add, 6, 0);
    kt_expect_values(kiln_sub(a, b), sub, 6, 0);
    kt_expect_values(kiln_mul(a, b), mul, 6, 0);
    kt_expect_values(kiln_div(a, b), div, 6, 1e-6); /* a GPU's f32 division may be off by an ulp or two */
    kt_expect_values(kiln_scale(a, -2), sc, 6, 0);
    kiln_step_reset(ctx);
    kiln_tensor_free(a), kiln_tensor_free(b);
}
END_TEST

/* b of one element, as [1] and as a 0-d tensor, forward and gradients by hand */
START_TEST(scalar_broadcast_by_hand) {
    kiln_ctx *ctx = kt_ctx();
    int64_t sa[2] = {2, 3}, s1[1] = {1};
    float av[] = {1, 2, 3, 4, 5, 6}, four = 4, minus2 = -2;
    kiln_tensor *a = kt_tensor(ctx, KILN_F32, 2, sa, av), *s = kt_tensor(ctx, KILN_F32, 1, s1, &four);
    kiln_tensor *s0 = kt_tensor(ctx, KILN_F32, 0, NULL, &minus2);
    float add[] = {5, 6, 7, 8, 9, 10}, sub[] = {-3, -2, -1, 0, 1, 2}, mul[] = {4, 8, 12, 16, 20, 24},
          div[] = {0.25f, 0.5f, 0.75f, 1, 1.25f, 1.5f}, mul0[] = {-2, -4, -6, -8, -10, -12},
          div0[] = {-0.5f, -1, -1.5f, -2, -2.5f, -3};
    kt_expect_values(kiln_add(a, s), add, 6, 0);
    kt_expect_values(kiln_sub(a, s), sub, 6, 0);
    kt_expect_values(kiln_mul(a, s), mul, 6, 0);
    kt_expect_values(kiln_div(a, s), div, 6, 0); /* exact: dividing by a power of two */
    kt_expect_values(kiln_mul(a, s0), mul0, 6, 0);
    kt_expect_values(kiln_div(a, s0), div0, 6, 0);
    /* loss = sum(a * s) + sum(a / s) + sum(a - s): ds = sum(a) - sum(a) / s^2 - 6 = 21 -
     * 21/16 - 6, da = s + 1/s + 1 */
    kiln_set_requires_grad(a, 1), kiln_set_requires_grad(s, 1);
    kiln_tensor *loss = kiln_add(kiln_add(kiln_sum(kiln_mul(a, s)), kiln_sum(kiln_div(a, s))), kiln_sum(kiln_sub(a, s)));
    ck_assert_int_eq(kiln_backward(loss, 1.0f), KILN_OK);
    const float ds = 21 - 21.0f / 16 - 6, da[6] = {5.25f, 5.25f, 5.25f, 5.25f, 5.25f, 5.25f};
    kt_expect_values(kiln_grad(s), &ds, 1, 1e-6);
    kt_expect_values(kiln_grad(a), da, 6, 1e-6);
    kiln_step_reset(ctx);
    kiln_tensor_free(a), kiln_tensor_free(s), kiln_tensor_free(s0);
}
END_TEST

/* The shapes that still do not broadcast: b broadcasts over a, never a over b. */
START_TEST(elementwise_errors) {
    kiln_ctx *ctx = kt_ctx();
    int64_t s23[2] = {2, 3}, s2[1] = {2}, s31[2] = {3, 1}, s1[1] = {1};
    kiln_tensor *a = kiln_tensor_new(ctx, KILN_F32, 2, s23), *lead = kiln_tensor_new(ctx, KILN_F32, 1, s2);
    kiln_tensor *col = kiln_tensor_new(ctx, KILN_F32, 2, s31), *one = kiln_tensor_new(ctx, KILN_F32, 1, s1);
    const struct {
        kiln_tensor *(*op)(kiln_tensor *a, kiln_tensor *b);
        kiln_tensor *a, *b;
        const char *message;
    } refused[] = {
        {.op = kiln_div, .a = a, .b = lead, .message = "div: shapes [2, 3] and [2] do not match"}, /* a leading dim */
        {.op = kiln_mul, .a = a, .b = col, .message = "mul: shapes [2, 3] and [3, 1] do not match"}, /* 3 elements, not a suffix */
        {.op = kiln_add, .a = lead, .b = a, .message = "add: shapes [2] and [2, 3] do not match"},  /* b larger than a */
        {.op = kiln_sub, .a = one, .b = a, .message = "sub: shapes [1] and [2, 3] do not match"},   /* a scalar a */
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        kiln_clear_error();
        ck_assert_ptr_null(refused[i].op(refused[i].a, refused[i].b));
        ck_assert_int_eq(kiln_error_status(), KILN_ERR_SHAPE);
        ck_assert_msg(strstr(kiln_error_message(), refused[i].message), "case %zu: %s", i, kiln_error_message());
    }
    kiln_clear_error();
    kiln_tensor_free(a), kiln_tensor_free(lead), kiln_tensor_free(col), kiln_tensor_free(one);
}
END_TEST

START_TEST(matmul_errors) {
    kiln_ctx *ctx = kt_ctx();
    kiln_tensor *a = kiln_tensor_2d(ctx, KILN_F32, 2, 3), *b = kiln_tensor_2d(ctx, KILN_F32, 4, 2);
    kiln_tensor *ids = kiln_tensor_2d(ctx, KILN_I32, 3, 2);
    ck_assert_ptr_null(kiln_matmul(a, b, NULL, 0, 0));
    ck_assert_int_eq(kiln_error_status(), KILN_ERR_SHAPE);
    ck_assert_ptr_nonnull(strstr(kiln_error_message(), "inner dims"));
    ck_assert_ptr_null(kiln_matmul(a, ids, NULL, 0, 0));
    ck_assert_int_eq(kiln_error_status(), KILN_ERR_DTYPE);
    ck_assert_ptr_null(kiln_add(a, b));
    ck_assert_int_eq(kiln_error_status(), KILN_ERR_SHAPE);
    kiln_clear_error();
    ck_assert_ptr_null(kiln_matmul(NULL, b, NULL, 0, 0)); /* NULL propagates quietly */
    ck_assert_int_eq(kiln_error_status(), KILN_OK);
    kiln_tensor_free(a), kiln_tensor_free(b), kiln_tensor_free(ids);
}
END_TEST

static void add_tests(Suite *s, TCase *tc) {
    (void)s;
    tcase_add_test(tc, matmul_by_hand);
    tcase_add_test(tc, elementwise_by_hand);
    tcase_add_test(tc, scalar_broadcast_by_hand);
    tcase_add_test(tc, elementwise_errors);
    tcase_add_test(tc, matmul_errors);
}

int main(int argc, char **argv) {
    return kt_main_groups(argc, argv, "matmul_elementwise", (const char *const[]){"matmul", "elementwise", NULL}, add_tests);
}
