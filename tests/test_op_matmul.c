/* matmul and the elementwise ops: hand-computed forwards, finite-difference backwards,
 * and (on GPU backends) agreement with the CPU reference. */
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
          mul[] = {10, 40, 90, 40, 100, 180}, sc[] = {-2, -4, -6, -8, -10, -12};
    kt_expect_values(kiln_add(a, b), add, 6, 0);
    kt_expect_values(kiln_sub(a, b), sub, 6, 0);
    kt_expect_values(kiln_mul(a, b), mul, 6, 0);
    kt_expect_values(kiln_scale(a, -2), sc, 6, 0);
    kiln_step_reset(ctx);
    kiln_tensor_free(a), kiln_tensor_free(b);
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
    {.name = "scale", .build = build_scale, .n_in = 1,
     .in = {{.dtype = KILN_F32, .ndim = 3, .shape = {2, 3, 5}, .grad = 1}}},
};

static void add_tests(Suite *s, TCase *tc) {
    (void)s;
    tcase_add_test(tc, matmul_by_hand);
    tcase_add_test(tc, elementwise_by_hand);
    tcase_add_test(tc, matmul_errors);
}

int main(int argc, char **argv) {
    return kt_main(argc, argv, "matmul_elementwise", add_tests, cases, (int)(sizeof cases / sizeof cases[0]));
}
