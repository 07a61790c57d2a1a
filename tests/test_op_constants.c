/* The sinusoidal position table and the inf/NaN check: hand-computed values, f32 and f16
 * inputs, error paths, and (on GPU backends) agreement with the CPU reference. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

START_TEST(sinusoid_by_hand) {
    kiln_ctx *ctx = kt_ctx();
    /* C = 4: the pairs' frequencies are 1 and 1/10000^(2/4) = 1/100 */
    kiln_tensor *pe = kiln_sinusoid_table(ctx, 3, 4);
    ck_assert_ptr_nonnull(pe);
    ck_assert(pe->ndim == 2 && pe->shape[0] == 3 && pe->shape[1] == 4 && pe->dtype == KILN_F32);
    const float expect4[12] = {0, 1, 0, 1,                                                  /* t = 0 */
                               0.84147098f, 0.54030231f, 0.0099998333f, 0.99995f,           /* sin 1, cos 1, sin .01, cos .01 */
                               0.90929743f, -0.41614684f, 0.019998667f, 0.99980001f};       /* t = 2 */
    kt_expect_values(pe, expect4, 12, 1e-6);
    /* C = 5 (odd): frequencies 1, 1/10000^(2/5) = 1/39.810717, 1/10000^(4/5) = 1/1584.8932;
     * the last channel is a lone sin. Row t = 7: */
    kiln_tensor *odd = kiln_sinusoid_table(ctx, 8, 5);
    ck_assert_ptr_nonnull(odd);
    float all[40];
    ck_assert_int_eq(kiln_download_f32(odd, all, 40), KILN_OK);
    const float row7[5] = {0.65698660f, 0.75390225f, 0.17492742f, 0.98458133f, 0.0044166871f};
    for (int c = 0; c < 5; c++)
        ck_assert_msg(fabsf(all[35 + c] - row7[c]) <= 1e-6f * (1 + fabsf(row7[c])), "pe[7, %d] = %.8g, expected %.8g",
                      c, all[35 + c], row7[c]);
    /* a large table (the parallel path): row 1000, where an f32 angle would lose digits.
     * Channels 62, 63 have frequency 1/10000^(62/64) = 1/7498.942 */
    kiln_tensor *big = kiln_sinusoid_table(ctx, 1024, 64);
    ck_assert_ptr_nonnull(big);
    float *bv = malloc(1024 * 64 * sizeof *bv);
    ck_assert_int_eq(kiln_download_f32(big, bv, 1024 * 64), KILN_OK);
    /* channels 2, 3: angle 1000 / 10000^(2/64) = 749.8942093 */
    const int at[7][2] = {{1000, 0}, {1000, 1}, {1000, 2}, {1000, 3}, {1000, 62}, {1000, 63}, {1023, 63}};
    const float want[7] = {0.82687954f, 0.56237908f, 0.81133657f, -0.58457931f,
                           0.13295727f, 0.99112177f, 0.99070932f};
    /* the reference computes the angle in double; a device may use f32, whose angle near
     * t = 1000 is only good to ~3e-5 */
    float tol = strcmp(kt_backend(), "cpu") ? 1e-4f : 2e-6f;
    for (int k = 0; k < 7; k++) {
        float got = bv[at[k][0] * 64 + at[k][1]];
        ck_assert_msg(fabsf(got - want[k]) <= tol, "pe[%d, %d] = %.8g, expected %.8g", at[k][0], at[k][1], got,
                      want[k]);
    }
    free(bv);
    kiln_step_reset(ctx);
}
END_TEST

START_TEST(sinusoid_errors) {
    kiln_ctx *ctx = kt_ctx();
    ck_assert_ptr_null(kiln_sinusoid_table(ctx, 0, 8));
    ck_assert_int_eq(kiln_error_status(), KILN_ERR_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(kiln_error_message(), "0 positions"));
    ck_assert_ptr_null(kiln_sinusoid_table(ctx, 4, -2));
    ck_assert_int_eq(kiln_error_status(), KILN_ERR_ARGUMENT);
    ck_assert_ptr_null(kiln_sinusoid_table(NULL, 4, 4));
    ck_assert_int_eq(kiln_error_status(), KILN_ERR_ARGUMENT);
}
END_TEST

static int32_t read_flag(const kiln_tensor *flag) {
    int32_t v = -1;
    ck_assert_int_eq(kiln_download(flag, &v, sizeof v), KILN_OK);
    return v;
}

/* check_finite over n f32 values with one element replaced by `bad` (or none when at < 0) */
static int32_t check_f32(kiln_ctx *ctx, int64_t n, int64_t at, float bad) {
    float *v = malloc((size_t)n * sizeof *v);
    for (int64_t i = 0; i < n; i++) v[i] = ((float)(i % 11) - 5.0f) * 1e37f; /* large but finite */
    if (at >= 0) v[at] = bad;
    kiln_tensor *x = kt_tensor(ctx, KILN_F32, 1, &n, v);
    kiln_tensor *flag = kiln_tensor_new(ctx, KILN_I32, 0, NULL);
    ck_assert_int_eq(kiln_check_finite(x, flag), KILN_OK);
    int32_t got = read_flag(flag);
    kiln_tensor_free(x), kiln_tensor_free(flag);
    free(v);
    return got;
}

START_TEST(check_finite_f32) {
    kiln_ctx *ctx = kt_ctx();
    ck_assert_int_eq(check_f32(ctx, 7, -1, 0), 0);
    ck_assert_int_eq(check_f32(ctx, 7, 3, 3.4028235e38f), 0); /* FLT_MAX is finite */
    ck_assert_int_eq(check_f32(ctx, 7, 3, 1e-45f), 0);        /* a subnormal is finite */
    ck_assert_int_eq(check_f32(ctx, 7, 3, INFINITY), 1);
    ck_assert_int_eq(check_f32(ctx, 7, 0, -INFINITY), 1);
    ck_assert_int_eq(check_f32(ctx, 7, 6, NAN), 1);
    /* large enough for the parallel path; the bad value sits in the last element */
    ck_assert_int_eq(check_f32(ctx, 100003, -1, 0), 0);
    ck_assert_int_eq(check_f32(ctx, 100003, 100002, NAN), 1);
    ck_assert_int_eq(check_f32(ctx, 100003, 50000, -INFINITY), 1);
}
END_TEST

START_TEST(check_finite_f16) {
    if (!kt_f16_ok("check_finite_f16")) return;
    kiln_ctx *ctx = kt_ctx();
    int64_t n = 5;
    /* 1, -2, 65504 (largest finite), a subnormal, -0 */
    uint16_t v[5] = {0x3c00, 0xc000, 0x7bff, 0x0001, 0x8000};
    const uint16_t bad[3] = {0x7c00 /* inf */, 0xfc00 /* -inf */, 0x7e00 /* NaN */};
    kiln_tensor *x = kiln_tensor_new(ctx, KILN_F16, 1, &n), *flag = kiln_tensor_new(ctx, KILN_I32, 0, NULL);
    ck_assert_int_eq(kiln_upload(x, v, sizeof v), KILN_OK);
    ck_assert_int_eq(kiln_check_finite(x, flag), KILN_OK);
    ck_assert_int_eq(read_flag(flag), 0);
    for (int b = 0; b < 3; b++) {
        uint16_t w[5];
        memcpy(w, v, sizeof w);
        w[(b * 2) % 5] = bad[b];
        ck_assert_int_eq(kiln_upload(x, w, sizeof w), KILN_OK);
        ck_assert_int_eq(kiln_fill(flag, 0), KILN_OK);
        ck_assert_int_eq(kiln_check_finite(x, flag), KILN_OK);
        ck_assert_msg(read_flag(flag) == 1, "f16 value 0x%04x was not flagged", bad[b]);
    }
    kiln_tensor_free(x), kiln_tensor_free(flag);
}
END_TEST

START_TEST(check_finite_accumulates) {
    /* the flag is only ever raised: a later clean check leaves it at 1 */
    kiln_ctx *ctx = kt_ctx();
    int64_t n = 3;
    const float dirty[3] = {1, NAN, 2}, clean[3] = {1, 2, 3};
    kiln_tensor *a = kt_tensor(ctx, KILN_F32, 1, &n, dirty), *b = kt_tensor(ctx, KILN_F32, 1, &n, clean);
    kiln_tensor *flag = kiln_tensor_new(ctx, KILN_I32, 0, NULL);
    ck_assert_int_eq(kiln_check_finite(b, flag), KILN_OK);
    ck_assert_int_eq(read_flag(flag), 0);
    ck_assert_int_eq(kiln_check_finite(a, flag), KILN_OK);
    ck_assert_int_eq(kiln_check_finite(b, flag), KILN_OK);
    ck_assert_int_eq(read_flag(flag), 1);
    kiln_tensor_free(a), kiln_tensor_free(b), kiln_tensor_free(flag);
}
END_TEST

START_TEST(check_finite_errors) {
    kiln_ctx *ctx = kt_ctx();
    kiln_tensor *x = kiln_tensor_1d(ctx, KILN_F32, 4), *ids = kiln_tensor_1d(ctx, KILN_I32, 4);
    kiln_tensor *flag = kiln_tensor_new(ctx, KILN_I32, 0, NULL), *fflag = kiln_tensor_new(ctx, KILN_F32, 0, NULL);
    kiln_tensor *flag2 = kiln_tensor_1d(ctx, KILN_I32, 2);
    ck_assert_int_eq(kiln_check_finite(ids, flag), KILN_ERR_DTYPE);
    ck_assert_ptr_nonnull(strstr(kiln_error_message(), "i32"));
    ck_assert_int_eq(kiln_check_finite(x, fflag), KILN_ERR_DTYPE);
    ck_assert_ptr_nonnull(strstr(kiln_error_message(), "flag"));
    ck_assert_int_eq(kiln_check_finite(x, flag2), KILN_ERR_SHAPE);
    kiln_clear_error();
    ck_assert_int_eq(kiln_check_finite(NULL, flag), KILN_ERR_ARGUMENT);
    /* a NULL from an earlier failure keeps that failure's status */
    ck_assert_ptr_null(kiln_sum(ids));
    ck_assert_int_eq(kiln_check_finite(kiln_sum(ids), flag), KILN_ERR_DTYPE);
    kiln_tensor_free(x), kiln_tensor_free(ids), kiln_tensor_free(flag), kiln_tensor_free(fflag), kiln_tensor_free(flag2);
}
END_TEST

static void add_tests(Suite *s, TCase *tc) {
    (void)s;
    tcase_add_test(tc, sinusoid_by_hand);
    tcase_add_test(tc, sinusoid_errors);
    tcase_add_test(tc, check_finite_f32);
    tcase_add_test(tc, check_finite_f16);
    tcase_add_test(tc, check_finite_accumulates);
    tcase_add_test(tc, check_finite_errors);
}

int main(int argc, char **argv) {
    return kt_main_group(argc, argv, "constants", add_tests);
}
