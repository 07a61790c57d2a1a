/* Bad input never aborts: it returns an error code with a message a person can act on.
 * Backend names, shape and dtype mismatches, out-of-range token ids and targets, transfers
 * of the wrong size, bad views, and quiet NULL propagation through a chain of ops. */
#include <stdio.h>
#include <string.h>

#include "testutil.h"

/* The last call failed with `status` and left a message. */
#define EXPECT_ERROR(status)                                                                 \
    do {                                                                                    \
        ck_assert_int_eq(kiln_error_status(), (status));                                     \
        ck_assert_msg(strlen(kiln_error_message()) > 0, "no error message for status %d", \
                      (int)(status));                                                       \
    } while (0)

static void expect_open_fails(const char *name, kiln_status status) {
    static int sentinel;
    kiln_ctx *ctx = (kiln_ctx *)(void *)&sentinel; /* non-NULL: a failed open must reset it */
    kiln_clear_error();
    kiln_status s = kiln_open(name, &ctx);
    ck_assert_msg(s != KILN_OK, "kiln_open(\"%s\") succeeded", name ? name : "NULL");
    ck_assert_ptr_null(ctx);
    if (status != KILN_OK) ck_assert_int_eq(s, status);
    ck_assert_int_eq(kiln_error_status(), s);
    ck_assert_msg(strlen(kiln_error_message()) > 0, "kiln_open(\"%s\"): no message", name ? name : "NULL");
}

START_TEST(unknown_backends) {
    expect_open_fails("nope", KILN_ERR_NO_BACKEND);
    ck_assert_ptr_nonnull(strstr(kiln_error_message(), "nope"));
    expect_open_fails("", KILN_ERR_NO_BACKEND);
    expect_open_fails(NULL, KILN_ERR_ARGUMENT);
    expect_open_fails("cpu:3", KILN_ERR_NO_DEVICE);
    ck_assert_ptr_nonnull(strstr(kiln_error_message(), "cpu:0"));
    expect_open_fails("cpu:x", KILN_ERR_NO_DEVICE);
    /* without Vulkan compiled in, or without a 100th device: either way an error */
    expect_open_fails("vulkan:99", KILN_OK);
    ck_assert(kiln_error_status() == KILN_ERR_NO_BACKEND || kiln_error_status() == KILN_ERR_NO_DEVICE);
    expect_open_fails("opencl:99", KILN_OK);
    ck_assert_int_eq(kiln_list_devices("nope", stderr), KILN_ERR_NO_BACKEND);
    EXPECT_ERROR(KILN_ERR_NO_BACKEND);
}
END_TEST

START_TEST(shape_mismatches) {
    kiln_ctx *ctx = kt_ctx();
    kiln_tensor *a = kiln_tensor_2d(ctx, KILN_F32, 2, 3), *b = kiln_tensor_2d(ctx, KILN_F32, 4, 5);
    kiln_tensor *w5 = kiln_tensor_1d(ctx, KILN_F32, 5), *t3 = kiln_tensor_1d(ctx, KILN_I32, 3);
    kiln_clear_error();
    ck_assert_ptr_null(kiln_matmul(a, b, NULL, 0, 0));
    EXPECT_ERROR(KILN_ERR_SHAPE);
    ck_assert_ptr_null(kiln_add(a, b));
    EXPECT_ERROR(KILN_ERR_SHAPE);
    ck_assert_ptr_null(kiln_layernorm(a, w5, NULL, 1e-5f));
    EXPECT_ERROR(KILN_ERR_SHAPE);
    ck_assert_ptr_null(kiln_cross_entropy(a, t3, 0.0f, -1)); /* 2 rows, 3 targets */
    EXPECT_ERROR(KILN_ERR_SHAPE);
    ck_assert_ptr_null(kiln_softmax(a, NULL));
    EXPECT_ERROR(KILN_ERR_SHAPE);
    ck_assert_ptr_null(kiln_attention_entropy(a));
    EXPECT_ERROR(KILN_ERR_SHAPE);
    int64_t bad[2] = {4, 2};
    ck_assert_ptr_null(kiln_reshape(a, 2, bad));
    EXPECT_ERROR(KILN_ERR_SHAPE);
    ck_assert_ptr_null(kiln_view_rows(a, 1, 2));
    EXPECT_ERROR(KILN_ERR_RANGE);
    float four[4] = {0};
    ck_assert_int_eq(kiln_upload_f32(a, four, 4), KILN_ERR_SHAPE);
    EXPECT_ERROR(KILN_ERR_SHAPE);
    kiln_step_reset(ctx);
    kiln_tensor_free(a), kiln_tensor_free(b), kiln_tensor_free(w5), kiln_tensor_free(t3);
}
END_TEST

START_TEST(dtype_mismatches) {
    kiln_ctx *ctx = kt_ctx();
    kiln_tensor *a = kiln_tensor_2d(ctx, KILN_F32, 2, 3), *ai = kiln_tensor_2d(ctx, KILN_I32, 3, 2);
    kiln_tensor *table = kiln_tensor_2d(ctx, KILN_F32, 5, 3), *ids_f = kiln_tensor_1d(ctx, KILN_F32, 2);
    kiln_clear_error();
    ck_assert_ptr_null(kiln_matmul(a, ai, NULL, 0, 0));
    EXPECT_ERROR(KILN_ERR_DTYPE);
    ck_assert_ptr_null(kiln_embedding(table, ids_f));
    EXPECT_ERROR(KILN_ERR_DTYPE);
    ck_assert_ptr_null(kiln_cross_entropy(a, ids_f, 0.0f, -1));
    EXPECT_ERROR(KILN_ERR_DTYPE);
    ck_assert_ptr_null(kiln_gelu(ai));
    EXPECT_ERROR(KILN_ERR_DTYPE);
    ck_assert_ptr_null(kiln_dropout(ai, 0.5f));
    EXPECT_ERROR(KILN_ERR_DTYPE);
    kiln_step_reset(ctx);
    kiln_tensor_free(a), kiln_tensor_free(ai), kiln_tensor_free(table), kiln_tensor_free(ids_f);
}
END_TEST

START_TEST(indices_out_of_range) {
    kiln_ctx *ctx = kt_ctx();
    int64_t s2[1] = {2}, sl[2] = {2, 4};
    int32_t too_big[] = {1, 5}, negative[] = {-3, 0};
    kiln_tensor *table = kiln_tensor_2d(ctx, KILN_F32, 5, 3);
    kiln_tensor *big = kt_tensor_i32(ctx, 1, s2, too_big), *neg = kt_tensor_i32(ctx, 1, s2, negative);
    kiln_tensor *logits = kiln_tensor_new(ctx, KILN_F32, 2, sl);
    kiln_clear_error();
    ck_assert_ptr_null(kiln_embedding(table, big)); /* token 5 of a 5-token vocabulary */
    EXPECT_ERROR(KILN_ERR_RANGE);
    ck_assert_ptr_null(kiln_embedding(table, neg));
    EXPECT_ERROR(KILN_ERR_RANGE);
    ck_assert_ptr_null(kiln_cross_entropy(logits, big, 0.0f, -100)); /* target 5 of 4 classes */
    EXPECT_ERROR(KILN_ERR_RANGE);
    ck_assert_ptr_null(kiln_cross_entropy(logits, neg, 0.0f, -100));
    EXPECT_ERROR(KILN_ERR_RANGE);
    /* a negative target that equals ignore_index is no error */
    int32_t ignored[] = {-3, 1};
    kiln_tensor *ign = kt_tensor_i32(ctx, 1, s2, ignored);
    ck_assert_ptr_nonnull(kiln_cross_entropy(logits, ign, 0.0f, -3));
    kiln_step_reset(ctx);
    kiln_tensor_free(table), kiln_tensor_free(big), kiln_tensor_free(neg), kiln_tensor_free(logits);
    kiln_tensor_free(ign);
}
END_TEST

START_TEST(bad_arguments) {
    kiln_ctx *ctx = kt_ctx();
    kiln_tensor *x = kiln_tensor_1d(ctx, KILN_F32, 4);
    kiln_clear_error();
    ck_assert_ptr_null(kiln_dropout(x, 1.0f));
    EXPECT_ERROR(KILN_ERR_ARGUMENT);
    ck_assert_int_eq(kiln_zero_grad(NULL, 0), KILN_OK);
    kiln_tensor *none = NULL;
    ck_assert_int_eq(kiln_zero_grad(&none, 1), KILN_ERR_ARGUMENT);
    EXPECT_ERROR(KILN_ERR_ARGUMENT);
    kiln_tensor_free(x);
}
END_TEST

/* A NULL input makes the next op return NULL without replacing the first message, so a
 * chain of ops can be checked once at its end and still say what went wrong first. */
START_TEST(null_propagates_with_the_first_message) {
    kiln_ctx *ctx = kt_ctx();
    kiln_tensor *a = kiln_tensor_2d(ctx, KILN_F32, 2, 3), *b = kiln_tensor_2d(ctx, KILN_F32, 4, 5);
    kiln_clear_error();
    kiln_tensor *bad = kiln_matmul(a, b, NULL, 0, 0);
    char first[512];
    snprintf(first, sizeof first, "%s", kiln_error_message());
    kiln_tensor *end = kiln_sum(kiln_gelu(kiln_softmax(bad, NULL)));
    ck_assert_ptr_null(end);
    ck_assert_int_eq(kiln_error_status(), KILN_ERR_SHAPE);
    ck_assert_str_eq(kiln_error_message(), first);
    kiln_step_reset(ctx);
    kiln_tensor_free(a), kiln_tensor_free(b);
}
END_TEST

static void add_tests(Suite *s, TCase *tc) {
    (void)s;
    tcase_add_test(tc, unknown_backends);
    tcase_add_test(tc, shape_mismatches);
    tcase_add_test(tc, dtype_mismatches);
    tcase_add_test(tc, indices_out_of_range);
    tcase_add_test(tc, bad_arguments);
    tcase_add_test(tc, null_propagates_with_the_first_message);
}

int main(int argc, char **argv) { return kt_main(argc, argv, "errors", add_tests, NULL, 0); }
