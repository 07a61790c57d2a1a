/* Embedding: hand-computed gather and scatter-add, bad ids, finite-difference backwards,
 * and (on GPU backends) agreement with the CPU reference. */
#include <stdio.h>
#include <string.h>

#include "core/internal.h" /* kiln_check_device_errors, for backends that report ids late */
#include "testutil.h"

/* table[v, c] = 10 v + c, so every output value names the row it came from */
static kiln_tensor *make_table(kiln_ctx *ctx, int64_t vocab, int64_t dim) {
    float v[64];
    for (int64_t i = 0; i < vocab * dim; i++) v[i] = (float)(10 * (i / dim) + i % dim);
    int64_t shape[2] = {vocab, dim};
    return kt_tensor(ctx, KILN_F32, 2, shape, v);
}

START_TEST(embedding_by_hand) {
    kiln_ctx *ctx = kt_ctx();
    kiln_tensor *table = make_table(ctx, 4, 3);
    int64_t si[2] = {2, 3};
    const int32_t idv[6] = {3, 0, 1, 1, 1, 2};
    kiln_tensor *ids = kt_tensor_i32(ctx, 2, si, idv);
    kiln_set_requires_grad(table, 1);
    kiln_tensor *out = kiln_embedding(table, ids);
    const float expect[18] = {30, 31, 32, 0, 1, 2, 10, 11, 12, 10, 11, 12, 10, 11, 12, 20, 21, 22};
    kt_expect_values(out, expect, 18, 0);
    ck_assert_int_eq(out->ndim, 3);
    ck_assert_int_eq(out->shape[0], 2);
    ck_assert_int_eq(out->shape[1], 3);
    ck_assert_int_eq(out->shape[2], 3);
    /* loss = sum(out * w) with w[r, c] = r + 1: dtable[v, c] = sum of (r + 1) over r with ids[r] == v.
     * id 0 at r = 1; id 1 at r = 2, 3, 4; id 2 at r = 5; id 3 at r = 0 */
    float wv[18];
    for (int i = 0; i < 18; i++) wv[i] = (float)(i / 3 + 1);
    int64_t so[3] = {2, 3, 3};
    kiln_tensor *w = kt_tensor(ctx, KILN_F32, 3, so, wv);
    ck_assert_int_eq(kiln_backward(kiln_sum(kiln_mul(out, w)), 1.0f), KILN_OK);
    const float dtable[12] = {2, 2, 2, 12, 12, 12, 6, 6, 6, 1, 1, 1};
    kt_expect_values(kiln_grad(table), dtable, 12, 0);
    kiln_step_reset(ctx);
    kiln_tensor_free(table), kiln_tensor_free(ids), kiln_tensor_free(w);
}
END_TEST

START_TEST(embedding_scalar_and_1d_ids) {
    kiln_ctx *ctx = kt_ctx();
    kiln_tensor *table = make_table(ctx, 5, 2);
    const int32_t one = 4, three[3] = {2, 2, 0};
    int64_t s3[1] = {3};
    kiln_tensor *id = kt_tensor_i32(ctx, 0, NULL, &one), *ids = kt_tensor_i32(ctx, 1, s3, three);
    kiln_tensor *row = kiln_embedding(table, id);
    const float r4[2] = {40, 41}, rows[6] = {20, 21, 20, 21, 0, 1};
    kt_expect_values(row, r4, 2, 0);
    ck_assert_int_eq(row->ndim, 1);
    kiln_tensor *out = kiln_embedding(table, ids);
    kt_expect_values(out, rows, 6, 0);
    ck_assert_int_eq(out->ndim, 2);
    kiln_step_reset(ctx);
    kiln_tensor_free(table), kiln_tensor_free(id), kiln_tensor_free(ids);
}
END_TEST

/* An id outside [0, vocab): the CPU fails at once naming the id and the vocabulary; a GPU
 * backend may instead raise the device error flag, reported on the next check. */
static void expect_bad_id(kiln_ctx *ctx, kiln_tensor *table, int32_t bad) {
    int64_t si[1] = {4};
    const int32_t idv[4] = {1, 0, bad, 2};
    kiln_tensor *ids = kt_tensor_i32(ctx, 1, si, idv);
    kiln_clear_error();
    kiln_tensor *out = kiln_embedding(table, ids);
    if (out) {
        ck_assert_msg(strcmp(kiln_backend_name(ctx), "cpu") != 0, "cpu accepted token id %d", bad);
        ck_assert_int_eq(kiln_check_device_errors(ctx), KILN_ERR_RANGE);
    } else {
        char want[32];
        snprintf(want, sizeof want, "token id %d ", bad);
        ck_assert_int_eq(kiln_error_status(), KILN_ERR_RANGE);
        ck_assert_msg(strstr(kiln_error_message(), want) != NULL, "message lacks the id: %s", kiln_error_message());
        ck_assert_msg(strstr(kiln_error_message(), "vocabulary of 4") != NULL, "message lacks the vocab: %s",
                      kiln_error_message());
    }
    kiln_step_reset(ctx);
    kiln_tensor_free(ids);
}

START_TEST(embedding_id_out_of_range) {
    kiln_ctx *ctx = kt_ctx();
    kiln_tensor *table = make_table(ctx, 4, 3);
    expect_bad_id(ctx, table, 4);
    expect_bad_id(ctx, table, -1);
    expect_bad_id(ctx, table, 1000000);
    kiln_tensor_free(table);
}
END_TEST

START_TEST(embedding_errors) {
    kiln_ctx *ctx = kt_ctx();
    kiln_tensor *table = kiln_tensor_2d(ctx, KILN_F32, 4, 3), *itable = kiln_tensor_2d(ctx, KILN_I32, 4, 3);
    int64_t s3[3] = {2, 2, 3}, s4[4] = {1, 2, 2, 3};
    kiln_tensor *table3 = kiln_tensor_new(ctx, KILN_F32, 3, s3);
    kiln_tensor *ids = kiln_tensor_1d(ctx, KILN_I32, 5), *fids = kiln_tensor_1d(ctx, KILN_F32, 5);
    kiln_tensor *ids4 = kiln_tensor_new(ctx, KILN_I32, 4, s4);
    ck_assert_ptr_null(kiln_embedding(table, fids));
    ck_assert_int_eq(kiln_error_status(), KILN_ERR_DTYPE);
    ck_assert_ptr_nonnull(strstr(kiln_error_message(), "ids must be i32"));
    ck_assert_ptr_null(kiln_embedding(itable, ids));
    ck_assert_int_eq(kiln_error_status(), KILN_ERR_DTYPE);
    ck_assert_ptr_null(kiln_embedding(table3, ids));
    ck_assert_int_eq(kiln_error_status(), KILN_ERR_SHAPE);
    ck_assert_ptr_nonnull(strstr(kiln_error_message(), "[2, 2, 3]"));
    ck_assert_ptr_null(kiln_embedding(table, ids4));
    ck_assert_int_eq(kiln_error_status(), KILN_ERR_SHAPE);
    kiln_clear_error();
    ck_assert_ptr_null(kiln_embedding(NULL, ids));
    ck_assert_int_eq(kiln_error_status(), KILN_OK);
    kiln_tensor_free(table), kiln_tensor_free(itable), kiln_tensor_free(table3);
    kiln_tensor_free(ids), kiln_tensor_free(fids), kiln_tensor_free(ids4);
}
END_TEST

static void add_tests(Suite *s, TCase *tc) {
    (void)s;
    tcase_add_test(tc, embedding_by_hand);
    tcase_add_test(tc, embedding_scalar_and_1d_ids);
    tcase_add_test(tc, embedding_id_out_of_range);
    tcase_add_test(tc, embedding_errors);
}

int main(int argc, char **argv) {
    return kt_main_group(argc, argv, "embedding", add_tests);
}
