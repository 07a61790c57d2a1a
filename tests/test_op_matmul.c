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

static const mm_param NN = {0, 0, 1}, NT = {0, 1, 0}, TN = {1, 0, 1}, TT = {1, 1, 0};
#define F32(...) {KILN_F32, __VA_ARGS__}
static const kt_case cases[] = {
    {"matmul_nn_bias", build_matmul, &NN, 3, {F32(2, {7, 5}, KT_NORMAL, 0, 0, 1), F32(2, {5, 9}, KT_NORMAL, 0, 0, 1), F32(1, {9}, KT_NORMAL, 0, 0, 1)}, 1e-10, 0, 0, 0, 0, 0},
    {"matmul_nt", build_matmul, &NT, 2, {F32(2, {7, 5}, KT_NORMAL, 0, 0, 1), F32(2, {9, 5}, KT_NORMAL, 0, 0, 1)}, 1e-10, 0, 0, 0, 0, 0},
    {"matmul_tn_bias", build_matmul, &TN, 3, {F32(2, {5, 7}, KT_NORMAL, 0, 0, 1), F32(2, {5, 9}, KT_NORMAL, 0, 0, 1), F32(1, {9}, KT_NORMAL, 0, 0, 1)}, 1e-10, 0, 0, 0, 0, 0},
    {"matmul_tt", build_matmul, &TT, 2, {F32(2, {5, 7}, KT_NORMAL, 0, 0, 1), F32(2, {9, 5}, KT_NORMAL, 0, 0, 1)}, 1e-10, 0, 0, 0, 0, 0},
    {"matmul_batched_nn", build_matmul, &NN, 3, {F32(3, {3, 6, 5}, KT_NORMAL, 0, 0, 1), F32(3, {3, 5, 4}, KT_NORMAL, 0, 0, 1), F32(1, {4}, KT_NORMAL, 0, 0, 1)}, 1e-10, 0, 0, 0, 0, 0},
    {"matmul_batched_nt", build_matmul, &NT, 2, {F32(4, {2, 2, 6, 5}, KT_NORMAL, 0, 0, 1), F32(4, {2, 2, 4, 5}, KT_NORMAL, 0, 0, 1)}, 1e-10, 0, 0, 0, 0, 0},
    {"matmul_batched_tt", build_matmul, &TT, 2, {F32(3, {3, 5, 6}, KT_NORMAL, 0, 0, 1), F32(3, {3, 4, 5}, KT_NORMAL, 0, 0, 1)}, 1e-10, 0, 0, 0, 0, 0},
    {"matmul_shared_b", build_matmul, &NN, 3, {F32(3, {3, 7, 5}, KT_NORMAL, 0, 0, 1), F32(2, {5, 11}, KT_NORMAL, 0, 0, 1), F32(1, {11}, KT_NORMAL, 0, 0, 1)}, 1e-10, 0, 0, 0, 0, 0},
    {"matmul_shared_b_nt", build_matmul, &NT, 2, {F32(3, {3, 7, 5}, KT_NORMAL, 0, 0, 1), F32(2, {11, 5}, KT_NORMAL, 0, 0, 1)}, 1e-10, 0, 0, 0, 0, 0},
    {"matmul_shared_b_tn", build_matmul, &TN, 3, {F32(3, {2, 5, 7}, KT_NORMAL, 0, 0, 1), F32(2, {5, 3}, KT_NORMAL, 0, 0, 1), F32(1, {3}, KT_NORMAL, 0, 0, 1)}, 1e-10, 0, 0, 0, 0, 0},
    {"matmul_shared_b_tt", build_matmul, &TT, 2, {F32(3, {2, 5, 7}, KT_NORMAL, 0, 0, 1), F32(2, {3, 5}, KT_NORMAL, 0, 0, 1)}, 1e-10, 0, 0, 0, 0, 0},
    {"matmul_large_odd", build_matmul, &NT, 2, {F32(2, {67, 131}, KT_NORMAL, 0, 0, 1), F32(2, {45, 131}, KT_NORMAL, 0, 0, 1)}, 1e-10, 0, 0, 0, 0, 0},
    {"add_same", build_add, NULL, 2, {F32(2, {5, 3}, KT_NORMAL, 0, 0, 1), F32(2, {5, 3}, KT_NORMAL, 0, 0, 1)}, 0, 0, 0, 0, 0, 0},
    {"add_broadcast", build_add, NULL, 2, {F32(3, {2, 5, 3}, KT_NORMAL, 0, 0, 1), F32(2, {5, 3}, KT_NORMAL, 0, 0, 1)}, 0, 0, 0, 0, 0, 0},
    {"sub_broadcast", build_sub, NULL, 2, {F32(2, {4, 7}, KT_NORMAL, 0, 0, 1), F32(1, {7}, KT_NORMAL, 0, 0, 1)}, 0, 0, 0, 0, 0, 0},
    {"mul_same", build_mul, NULL, 2, {F32(2, {5, 3}, KT_NORMAL, 0, 0, 1), F32(2, {5, 3}, KT_NORMAL, 0, 0, 1)}, 0, 0, 0, 0, 0, 0},
    {"mul_broadcast", build_mul, NULL, 2, {F32(3, {2, 3, 5}, KT_NORMAL, 0, 0, 1), F32(1, {5}, KT_NORMAL, 0, 0, 1)}, 0, 0, 0, 0, 0, 0},
    {"scale", build_scale, NULL, 1, {F32(3, {2, 3, 5}, KT_NORMAL, 0, 0, 1)}, 0, 0, 0, 0, 0, 0},
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
