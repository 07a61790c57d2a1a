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

typedef struct mm_param { int ta, tb, bias; } mm_param;
static kiln_tensor *build_matmul(kiln_tensor **in, const void *param) {
    const mm_param *p = param;
    return kiln_matmul(in[0], in[1], p->bias ? in[2] : NULL, p->ta, p->tb);
}
static kiln_tensor *build_add(kiln_tensor **in, const void *p) { (void)p; return kiln_add(in[0], in[1]); }
static kiln_tensor *build_sub(kiln_tensor **in, const void *p) { (void)p; return kiln_sub(in[0], in[1]); }
static kiln_tensor *build_mul(kiln_tensor **in, const void *p) { (void)p; return kiln_mul(in[0], in[1]); }
static kiln_tensor *build_div(kiln_tensor **in, const void *p) { (void)p; return kiln_div(in[0], in[1]); }
/* b is a: the gradient is 0, reached only when db's term is added onto a complete da */
static kiln_tensor *build_div_by_itself(kiln_tensor **in, const void *p) { (void)p; return kiln_div(in[0], in[0]); }
static kiln_tensor *build_scale(kiln_tensor **in, const void *p) { (void)p; return kiln_scale(in[0], -1.75f); }

static const mm_param NN = {.bias = 1}, NT = {.tb = 1}, TN = {.ta = 1, .bias = 1}, TT = {.ta = 1, .tb = 1};
static const kt_case cases[] = {
    {.name = "matmul_nn_bias", .build = build_matmul, .param = &NN, .n_in = 3,
     .in = {{.dtype = KILN_F32, .ndim = 2, .shape = {7, 5}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 2, .shape = {5, 9}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 1, .shape = {9}, .grad = 1}},
     .fwd_tol = 1e-10},
    {.name = "matmul_nt", .build = build_matmul, .param = &NT, .n_in = 2,
     .in = {{.dtype = KILN_F32, .ndim = 2, .shape = {7, 5}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 2, .shape = {9, 5}, .grad = 1}},
     .fwd_tol = 1e-10},
    {.name = "matmul_tn_bias", .build = build_matmul, .param = &TN, .n_in = 3,
     .in = {{.dtype = KILN_F32, .ndim = 2, .shape = {5, 7}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 2, .shape = {5, 9}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 1, .shape = {9}, .grad = 1}},
     .fwd_tol = 1e-10},
    {.name = "matmul_tt", .build = build_matmul, .param = &TT, .n_in = 2,
     .in = {{.dtype = KILN_F32, .ndim = 2, .shape = {5, 7}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 2, .shape = {9, 5}, .grad = 1}},
     .fwd_tol = 1e-10},
    {.name = "matmul_batched_nn", .build = build_matmul, .param = &NN, .n_in = 3,
     .in = {{.dtype = KILN_F32, .ndim = 3, .shape = {3, 6, 5}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 3, .shape = {3, 5, 4}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 1, .shape = {4}, .grad = 1}},
     .fwd_tol = 1e-10},
    {.name = "matmul_batched_nt", .build = build_matmul, .param = &NT, .n_in = 2,
     .in = {{.dtype = KILN_F32, .ndim = 4, .shape = {2, 2, 6, 5}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 4, .shape = {2, 2, 4, 5}, .grad = 1}},
     .fwd_tol = 1e-10},
    {.name = "matmul_batched_tt", .build = build_matmul, .param = &TT, .n_in = 2,
     .in = {{.dtype = KILN_F32, .ndim = 3, .shape = {3, 5, 6}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 3, .shape = {3, 4, 5}, .grad = 1}},
     .fwd_tol = 1e-10},
    {.name = "matmul_shared_b", .build = build_matmul, .param = &NN, .n_in = 3,
     .in = {{.dtype = KILN_F32, .ndim = 3, .shape = {3, 7, 5}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 2, .shape = {5, 11}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 1, .shape = {11}, .grad = 1}},
     .fwd_tol = 1e-10},
    {.name = "matmul_shared_b_nt", .build = build_matmul, .param = &NT, .n_in = 2,
     .in = {{.dtype = KILN_F32, .ndim = 3, .shape = {3, 7, 5}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 2, .shape = {11, 5}, .grad = 1}},
     .fwd_tol = 1e-10},
    {.name = "matmul_shared_b_tn", .build = build_matmul, .param = &TN, .n_in = 3,
     .in = {{.dtype = KILN_F32, .ndim = 3, .shape = {2, 5, 7}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 2, .shape = {5, 3}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 1, .shape = {3}, .grad = 1}},
     .fwd_tol = 1e-10},
    {.name = "matmul_shared_b_tt", .build = build_matmul, .param = &TT, .n_in = 2,
     .in = {{.dtype = KILN_F32, .ndim = 3, .shape = {2, 5, 7}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 2, .shape = {3, 5}, .grad = 1}},
     .fwd_tol = 1e-10},
    {.name = "matmul_large_odd", .build = build_matmul, .param = &NT, .n_in = 2,
     .in = {{.dtype = KILN_F32, .ndim = 2, .shape = {67, 131}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 2, .shape = {45, 131}, .grad = 1}},
     .fwd_tol = 1e-10},
    {.name = "add_same", .build = build_add, .n_in = 2,
     .in = {{.dtype = KILN_F32, .ndim = 2, .shape = {5, 3}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 2, .shape = {5, 3}, .grad = 1}}},
    {.name = "add_broadcast", .build = build_add, .n_in = 2,
     .in = {{.dtype = KILN_F32, .ndim = 3, .shape = {2, 5, 3}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 2, .shape = {5, 3}, .grad = 1}}},
    {.name = "sub_broadcast", .build = build_sub, .n_in = 2,
     .in = {{.dtype = KILN_F32, .ndim = 2, .shape = {4, 7}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 1, .shape = {7}, .grad = 1}}},
    {.name = "mul_same", .build = build_mul, .n_in = 2,
     .in = {{.dtype = KILN_F32, .ndim = 2, .shape = {5, 3}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 2, .shape = {5, 3}, .grad = 1}}},
    {.name = "mul_broadcast", .build = build_mul, .n_in = 2,
     .in = {{.dtype = KILN_F32, .ndim = 3, .shape = {2, 3, 5}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 1, .shape = {5}, .grad = 1}}},
    /* divisors kept within 0.5 .. 2 in size: the finite differences of 1/b stay accurate */
    {.name = "div_same", .build = build_div, .n_in = 2,
     .in = {{.dtype = KILN_F32, .ndim = 2, .shape = {5, 3}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 2, .shape = {5, 3}, .init = KT_UNIFORM, .lo = 0.5f, .hi = 2, .grad = 1}}},
    {.name = "div_broadcast", .build = build_div, .n_in = 2,
     .in = {{.dtype = KILN_F32, .ndim = 3, .shape = {2, 5, 3}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 2, .shape = {5, 3}, .init = KT_UNIFORM, .lo = -2, .hi = -0.5f, .grad = 1}}},
    {.name = "div_by_itself", .build = build_div_by_itself, .n_in = 1,
     .in = {{.dtype = KILN_F32, .ndim = 2, .shape = {4, 6}, .init = KT_UNIFORM, .lo = 0.5f, .hi = 2, .grad = 1}}},
    /* b of one element: [1], 0-d, [1, 1] */
    {.name = "div_scalar", .build = build_div, .n_in = 2,
     .in = {{.dtype = KILN_F32, .ndim = 2, .shape = {4, 7}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 1, .shape = {1}, .init = KT_UNIFORM, .lo = 0.5f, .hi = 2, .grad = 1}}},
    {.name = "div_scalar_0d", .build = build_div, .n_in = 2,
     .in = {{.dtype = KILN_F32, .ndim = 3, .shape = {2, 3, 5}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 0, .init = KT_UNIFORM, .lo = -2, .hi = -0.5f, .grad = 1}}},
    {.name = "mul_scalar", .build = build_mul, .n_in = 2,
     .in = {{.dtype = KILN_F32, .ndim = 3, .shape = {2, 3, 5}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 1, .shape = {1}, .grad = 1}}},
    {.name = "add_scalar", .build = build_add, .n_in = 2,
     .in = {{.dtype = KILN_F32, .ndim = 2, .shape = {4, 7}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 2, .shape = {1, 1}, .grad = 1}}},
    {.name = "sub_scalar_0d", .build = build_sub, .n_in = 2,
     .in = {{.dtype = KILN_F32, .ndim = 2, .shape = {3, 4}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 0, .grad = 1}}},
    /* longer than one CPU block (8192) and one GPU workgroup: the scalar forward in pieces,
     * b's gradient a reduction across workgroups (a's gradient is elementwise, checked above;
     * leaving it out keeps the finite differences to the one scalar) */
    {.name = "mul_scalar_long", .build = build_mul, .n_in = 2,
     .in = {{.dtype = KILN_F32, .ndim = 2, .shape = {3, 4099}},
            {.dtype = KILN_F32, .ndim = 1, .shape = {1}, .grad = 1}}},
    {.name = "div_scalar_long", .build = build_div, .n_in = 2,
     .in = {{.dtype = KILN_F32, .ndim = 2, .shape = {3, 4099}},
            {.dtype = KILN_F32, .ndim = 1, .shape = {1}, .init = KT_UNIFORM, .lo = 0.5f, .hi = 2, .grad = 1}}},
    {.name = "scale", .build = build_scale, .n_in = 1,
     .in = {{.dtype = KILN_F32, .ndim = 3, .shape = {2, 3, 5}, .grad = 1}}},
};

static void add_tests(Suite *s, TCase *tc) {
    (void)s;
    tcase_add_test(tc, matmul_by_hand);
    tcase_add_test(tc, elementwise_by_hand);
    tcase_add_test(tc, scalar_broadcast_by_hand);
    tcase_add_test(tc, elementwise_errors);
    tcase_add_test(tc, matmul_errors);
}

int main(int argc, char **argv) {
    return kt_main(argc, argv, "matmul_elementwise", add_tests, cases, (int)(sizeof cases / sizeof cases[0]));
}
