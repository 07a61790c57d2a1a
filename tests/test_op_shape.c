/* Shape ops (split/merge heads, concat, slice, cast): hand-computed forwards and
 * gradients, error paths, finite-difference backwards, and (on GPU backends) agreement
 * with the CPU reference. */
#include <string.h>

#include "testutil.h"

/* 0, 1, 2, ... as a persistent f32 tensor */
static kiln_tensor *iota(kiln_ctx *ctx, int ndim, const int64_t *shape) {
    float v[64];
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= shape[i];
    for (int64_t i = 0; i < n; i++) v[i] = (float)i;
    return kt_tensor(ctx, KILN_F32, ndim, shape, v);
}

START_TEST(split_merge_heads_by_hand) {
    kiln_ctx *ctx = kt_ctx();
    int64_t sx[3] = {2, 3, 4}; /* B = 2, T = 3, C = 4 -> H = 2, D = 2 */
    kiln_tensor *x = iota(ctx, 3, sx);
    kiln_set_requires_grad(x, 1);
    kiln_tensor *y = kiln_split_heads(x, 2);
    /* y[b, h, t, d] = x[b, t, 2h + d] = 12b + 4t + 2h + d */
    const float expect[24] = {0, 1, 4, 5, 8, 9, 2, 3, 6, 7, 10, 11,
                              12, 13, 16, 17, 20, 21, 14, 15, 18, 19, 22, 23};
    kt_expect_values(y, expect, 24, 0);
    ck_assert_int_eq(y->ndim, 4);
    ck_assert(y->shape[0] == 2 && y->shape[1] == 2 && y->shape[2] == 3 && y->shape[3] == 2);
    kiln_tensor *back = kiln_merge_heads(y);
    float xv[24];
    for (int i = 0; i < 24; i++) xv[i] = (float)i;
    kt_expect_values(back, xv, 24, 0);
    ck_assert(back->ndim == 3 && back->shape[0] == 2 && back->shape[1] == 3 && back->shape[2] == 4);
    /* loss = sum(split_heads(x) * w): dx is w moved back to x's layout */
    float wv[24];
    for (int i = 0; i < 24; i++) wv[i] = (float)(100 + i);
    int64_t sy[4] = {2, 2, 3, 2};
    kiln_tensor *w = kt_tensor(ctx, KILN_F32, 4, sy, wv);
    ck_assert_int_eq(kiln_backward(kiln_sum(kiln_mul(y, w)), 1.0f), KILN_OK);
    float dx[24];
    for (int i = 0; i < 24; i++) dx[(int)expect[i]] = wv[i];
    kt_expect_values(kiln_grad(x), dx, 24, 0);
    kiln_step_reset(ctx);
    kiln_tensor_free(x), kiln_tensor_free(w);
}
END_TEST

START_TEST(concat_by_hand) {
    kiln_ctx *ctx = kt_ctx();
    int64_t sa[2] = {2, 2}, sb[2] = {2, 1}, sc[2] = {1, 2};
    const float av[4] = {1, 2, 3, 4}, bv[2] = {5, 6}, cv[2] = {7, 8};
    kiln_tensor *a = kt_tensor(ctx, KILN_F32, 2, sa, av), *b = kt_tensor(ctx, KILN_F32, 2, sb, bv);
    kiln_tensor *c = kt_tensor(ctx, KILN_F32, 2, sc, cv);
    kiln_tensor *ab[2] = {a, b}, *ac[2] = {a, c};
    const float last[6] = {1, 2, 5, 3, 4, 6}, first[6] = {1, 2, 3, 4, 7, 8};
    kiln_tensor *y = kiln_concat(ab, 2, -1);
    kt_expect_values(y, last, 6, 0);
    ck_assert(y->shape[0] == 2 && y->shape[1] == 3);
    kt_expect_values(kiln_concat(ab, 2, 1), last, 6, 0);
    y = kiln_concat(ac, 2, 0);
    kt_expect_values(y, first, 6, 0);
    ck_assert(y->shape[0] == 3 && y->shape[1] == 2);
    kt_expect_values(kiln_concat(&a, 1, 0), av, 4, 0);
    /* the same tensor twice: both blocks' gradients add up */
    kiln_set_requires_grad(a, 1), kiln_set_requires_grad(b, 1);
    kiln_tensor *aba[3] = {a, b, a};
    y = kiln_concat(aba, 3, 1); /* [1 2 5 1 2; 3 4 6 3 4] */
    float wv[10];
    for (int i = 0; i < 10; i++) wv[i] = (float)(i + 1);
    int64_t sy[2] = {2, 5};
    kiln_tensor *w = kt_tensor(ctx, KILN_F32, 2, sy, wv);
    ck_assert_int_eq(kiln_backward(kiln_sum(kiln_mul(y, w)), 1.0f), KILN_OK);
    const float da[4] = {1 + 4, 2 + 5, 6 + 9, 7 + 10}, db[2] = {3, 8};
    kt_expect_values(kiln_grad(a), da, 4, 0);
    kt_expect_values(kiln_grad(b), db, 2, 0);
    kiln_step_reset(ctx);
    kiln_tensor_free(a), kiln_tensor_free(b), kiln_tensor_free(c), kiln_tensor_free(w);
}
END_TEST

START_TEST(slice_by_hand) {
    kiln_ctx *ctx = kt_ctx();
    int64_t sx[3] = {2, 3, 4};
    kiln_tensor *x = iota(ctx, 3, sx);
    kiln_set_requires_grad(x, 1);
    const float mid[16] = {4, 5, 6, 7, 8, 9, 10, 11, 16, 17, 18, 19, 20, 21, 22, 23};
    kiln_tensor *y = kiln_slice(x, 1, 1, 2);
    kt_expect_values(y, mid, 16, 0);
    ck_assert(y->ndim == 3 && y->shape[0] == 2 && y->shape[1] == 2 && y->shape[2] == 4);
    const float lastcol[6] = {3, 7, 11, 15, 19, 23};
    kiln_tensor *z = kiln_slice(x, -1, 3, 1);
    kt_expect_values(z, lastcol, 6, 0);
    float second[12];
    for (int i = 0; i < 12; i++) second[i] = (float)(12 + i);
    kt_expect_values(kiln_slice(x, 0, 1, 1), second, 12, 0);
    /* sum(y) + 2 sum(z): ones on the middle rows, plus 2 on the last column */
    kiln_tensor *loss = kiln_add(kiln_sum(y), kiln_scale(kiln_sum(z), 2.0f));
    ck_assert_int_eq(kiln_backward(loss, 1.0f), KILN_OK);
    float dx[24];
    for (int i = 0; i < 24; i++) dx[i] = (float)(((i / 4) % 3 >= 1 ? 1 : 0) + (i % 4 == 3 ? 2 : 0));
    kt_expect_values(kiln_grad(x), dx, 24, 0);
    kiln_step_reset(ctx);
    kiln_tensor_free(x);
}
END_TEST

START_TEST(cast_by_hand) {
    if (!kt_f16_ok("cast_by_hand")) return;
    kiln_ctx *ctx = kt_ctx();
    int64_t s[1] = {6};
    /* f16 keeps 11 significant bits: 0.1 -> 0.0999755859375, 1/3 -> 0.333251953125; 1e-8 is
     * below half the smallest subnormal (2^-24) and rounds to 0; 65504 is the largest f16 */
    const float v[6] = {1.0f, 0.1f, 65504.0f, -2.5f, 1e-8f, 0.33333333f};
    const float h[6] = {1.0f, 0.0999755859375f, 65504.0f, -2.5f, 0.0f, 0.333251953125f};
    kiln_tensor *x = kt_tensor(ctx, KILN_F32, 1, s, v);
    kiln_set_requires_grad(x, 1);
    kiln_tensor *y16 = kiln_cast(x, KILN_F16);
    ck_assert_int_eq(y16->dtype, KILN_F16);
    kt_expect_values(y16, h, 6, 0);
    kiln_tensor *y32 = kiln_cast(y16, KILN_F32);
    ck_assert_int_eq(y32->dtype, KILN_F32);
    kt_expect_values(y32, h, 6, 0);
    kt_expect_values(kiln_cast(x, KILN_F32), v, 6, 0); /* a plain copy */
    /* the gradient flows back through the f16 tensor: w rounded to f16 */
    const float wv[6] = {0.1f, 2, -3, 0.33333333f, 5, 6};
    const float dx[6] = {0.0999755859375f, 2, -3, 0.333251953125f, 5, 6};
    kiln_tensor *w = kt_tensor(ctx, KILN_F32, 1, s, wv);
    ck_assert_int_eq(kiln_backward(kiln_sum(kiln_mul(y32, w)), 1.0f), KILN_OK);
    kt_expect_values(kiln_grad(x), dx, 6, 0);
    kiln_step_reset(ctx);
    kiln_tensor_free(x), kiln_tensor_free(w);
}
END_TEST

START_TEST(cast_f16_gradient_accumulates) {
    if (!kt_f16_ok("cast_f16_gradient_accumulates")) return;
    kiln_ctx *ctx = kt_ctx();
    int64_t s[1] = {4};
    const float v[4] = {1, -2, 3, 0.5f}, wv[4] = {0.25f, 1, -1.5f, 3};
    kiln_tensor *x = kt_tensor(ctx, KILN_F16, 1, s, v), *w = kt_tensor(ctx, KILN_F32, 1, s, wv);
    kiln_set_requires_grad(x, 1);
    /* two uses of x: its f16 gradient receives dy twice */
    kiln_tensor *y = kiln_add(kiln_cast(x, KILN_F32), kiln_cast(x, KILN_F32));
    kt_expect_values(y, (const float[4]){2, -4, 6, 1}, 4, 0);
    ck_assert_int_eq(kiln_backward(kiln_sum(kiln_mul(y, w)), 1.0f), KILN_OK);
    ck_assert_int_eq(kiln_grad(x)->dtype, KILN_F16);
    kt_expect_values(kiln_grad(x), (const float[4]){0.5f, 2, -3, 6}, 4, 0);
    kiln_step_reset(ctx);
    /* i32 copies exactly, and carries no gradient */
    const int32_t iv[4] = {7, -1, 1 << 30, 0};
    kiln_tensor *ids = kt_tensor_i32(ctx, 1, s, iv);
    kiln_tensor *copy = kiln_cast(ids, KILN_I32);
    ck_assert_ptr_nonnull(copy);
    int32_t got[4];
    ck_assert_int_eq(kiln_download(copy, got, sizeof got), KILN_OK);
    ck_assert(memcmp(got, iv, sizeof got) == 0);
    kiln_step_reset(ctx);
    kiln_tensor_free(x), kiln_tensor_free(w), kiln_tensor_free(ids);
}
END_TEST

START_TEST(shape_errors) {
    kiln_ctx *ctx = kt_ctx();
    int64_t s3[3] = {2, 3, 10}, s4[4] = {2, 2, 3, 5}, s3b[3] = {2, 4, 10};
    kiln_tensor *x = kiln_tensor_new(ctx, KILN_F32, 3, s3), *x4 = kiln_tensor_new(ctx, KILN_F32, 4, s4);
    kiln_tensor *xb = kiln_tensor_new(ctx, KILN_F32, 3, s3b);
    kiln_tensor *h = kt_f16_ok("shape_errors: f16 part") ? kiln_tensor_new(ctx, KILN_F16, 3, s3) : NULL;
    kiln_tensor *ids = kiln_tensor_new(ctx, KILN_I32, 3, s3);
    ck_assert_ptr_null(kiln_split_heads(x, 4));
    ck_assert_int_eq(kiln_error_status(), KILN_ERR_SHAPE);
    ck_assert_ptr_nonnull(strstr(kiln_error_message(), "10 channels"));
    ck_assert_ptr_nonnull(strstr(kiln_error_message(), "4 heads"));
    ck_assert_ptr_null(kiln_split_heads(x, 0));
    ck_assert_int_eq(kiln_error_status(), KILN_ERR_SHAPE);
    ck_assert_ptr_null(kiln_split_heads(x4, 1));
    ck_assert_int_eq(kiln_error_status(), KILN_ERR_SHAPE);
    ck_assert_ptr_null(kiln_split_heads(ids, 2));
    ck_assert_int_eq(kiln_error_status(), KILN_ERR_DTYPE);
    ck_assert_ptr_nonnull(strstr(kiln_error_message(), "f32 or f16"));
    ck_assert_ptr_null(kiln_merge_heads(x));
    ck_assert_int_eq(kiln_error_status(), KILN_ERR_SHAPE);
    ck_assert_ptr_nonnull(strstr(kiln_error_message(), "4-D"));

    kiln_tensor *pair[2] = {x, xb}, *mixed[2] = {x, h};
    ck_assert_ptr_null(kiln_concat(pair, 2, 2));
    ck_assert_int_eq(kiln_error_status(), KILN_ERR_SHAPE);
    ck_assert_ptr_nonnull(strstr(kiln_error_message(), "input 1 is [2, 4, 10]"));
    ck_assert_ptr_nonnull(kiln_concat(pair, 2, -2)); /* axis 1 is where they differ */
    ck_assert_ptr_null(kiln_concat(pair, 2, 3));
    ck_assert_int_eq(kiln_error_status(), KILN_ERR_RANGE);
    ck_assert_ptr_nonnull(strstr(kiln_error_message(), "axis 3"));
    ck_assert_ptr_null(kiln_concat(pair, 2, -4));
    ck_assert_int_eq(kiln_error_status(), KILN_ERR_RANGE);
    if (h) {
        ck_assert_ptr_null(kiln_concat(mixed, 2, 0));
        ck_assert_int_eq(kiln_error_status(), KILN_ERR_DTYPE);
    }
    ck_assert_ptr_null(kiln_concat(pair, 0, 0));
    ck_assert_int_eq(kiln_error_status(), KILN_ERR_ARGUMENT);

    ck_assert_ptr_null(kiln_slice(x, 1, 2, 2));
    ck_assert_int_eq(kiln_error_status(), KILN_ERR_RANGE);
    ck_assert_ptr_nonnull(strstr(kiln_error_message(), "[2, 4)"));
    ck_assert_ptr_null(kiln_slice(x, 1, -1, 2));
    ck_assert_int_eq(kiln_error_status(), KILN_ERR_RANGE);
    ck_assert_ptr_null(kiln_slice(x, 1, 0, 0));
    ck_assert_int_eq(kiln_error_status(), KILN_ERR_RANGE);
    ck_assert_ptr_null(kiln_slice(x, -4, 0, 1));
    ck_assert_int_eq(kiln_error_status(), KILN_ERR_RANGE);
    ck_assert_ptr_null(kiln_slice(ids, 0, 0, 1));
    ck_assert_int_eq(kiln_error_status(), KILN_ERR_DTYPE);

    ck_assert_ptr_null(kiln_cast(ids, KILN_F32));
    ck_assert_int_eq(kiln_error_status(), KILN_ERR_DTYPE);
    ck_assert_ptr_nonnull(strstr(kiln_error_message(), "i32 to f32"));
    ck_assert_ptr_null(kiln_cast(x, KILN_I32));
    ck_assert_int_eq(kiln_error_status(), KILN_ERR_DTYPE);
    ck_assert_ptr_null(kiln_cast(x, (kiln_dtype)9));
    ck_assert_int_eq(kiln_error_status(), KILN_ERR_DTYPE);

    kiln_clear_error();
    kiln_tensor *with_null[2] = {x, NULL};
    ck_assert_ptr_null(kiln_concat(with_null, 2, 0)); /* NULL propagates quietly */
    ck_assert_ptr_null(kiln_slice(NULL, 0, 0, 1));
    ck_assert_ptr_null(kiln_split_heads(NULL, 2));
    ck_assert_ptr_null(kiln_merge_heads(NULL));
    ck_assert_ptr_null(kiln_cast(NULL, KILN_F16));
    ck_assert_int_eq(kiln_error_status(), KILN_OK);
    kiln_step_reset(ctx);
    kiln_tensor_free(x), kiln_tensor_free(x4), kiln_tensor_free(xb), kiln_tensor_free(h), kiln_tensor_free(ids);
}
END_TEST

static void add_tests(Suite *s, TCase *tc) {
    (void)s;
    tcase_add_test(tc, split_merge_heads_by_hand);
    tcase_add_test(tc, concat_by_hand);
    tcase_add_test(tc, slice_by_hand);
    tcase_add_test(tc, cast_by_hand);
    tcase_add_test(tc, cast_f16_gradient_accumulates);
    tcase_add_test(tc, shape_errors);
}

int main(int argc, char **argv) {
    return kt_main_group(argc, argv, "shape", add_tests);
}
