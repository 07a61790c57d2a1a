/* Rotary position embeddings: hand-computed rotations, the gradient of a norm-preserving
 * map, the KV cache's offset against a slice of a longer run, bad input, and (with
 * --torch-reference FILE, tests/op_references.cmake) Hugging Face's rotate_half and Meta's
 * complex form from tests/rope_reference.py in float64, and (--ggml-reference FILE)
 * llama.cpp's ggml_rope_ext from tests/rope_ggml_reference.py. The case table
 * (engine/verify/cases_rope.c) adds finite differences on the cpu and agreement with it on
 * the GPU backends. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

/* --torch-reference FILE (tests/rope_reference.py) or --ggml-reference FILE
 * (tests/rope_ggml_reference.py): the same format, different precisions */
static const char *g_reference_file;
static int g_reference_is_ggml;

/* One head of 4 channels at positions 0 and 1, base 10000: pair 0 turns by p radians, pair 1
 * by p * 10000^(-1/2) = p / 100. Row 0 (position 0) is unchanged; row 1's values are
 * cos/sin of 1 and 0.01 applied by hand (e.g. adjacent y0 = 1 cos 1 - 2 sin 1). */
static const float g_x[8] = {1, 2, 3, 4, 1, 2, 3, 4};
static const float g_adjacent[8] = {1, 2, 3, 4, -1.1426397f, 1.9220756f, 2.9598507f, 4.0297995f};
static const float g_half[8] = {1, 2, 3, 4, -1.9841106f, 1.9599007f, 2.4623779f, 4.0197997f};

static kiln_tensor *rope_x(kiln_ctx *ctx, const float *values, int64_t t) {
    int64_t shape[4] = {1, t, 1, 4};
    return kt_tensor(ctx, KILN_F32, 4, shape, values);
}

START_TEST(rope_by_hand) {
    kiln_ctx *ctx = kt_ctx();
    kiln_tensor *x = rope_x(ctx, g_x, 2);
    kiln_rope_opts half = {.layout = KILN_ROPE_HALF};
    kt_expect_values(kiln_rope(x, NULL), g_adjacent, 8, 1e-6);
    kt_expect_values(kiln_rope(x, &half), g_half, 8, 1e-6);
    /* position 3 with factors {2, 0.5}: angles 3 / 2 = 1.5 and 3 * 0.01 / 0.5 = 0.06 */
    int64_t two = 2;
    const float fv[2] = {2.0f, 0.5f};
    kiln_tensor *f = kt_tensor(ctx, KILN_F32, 1, &two, fv);
    kiln_rope_opts scaled = {.base = 10000.0f, .pos0 = 3, .freq_factors = f};
    const float at3[4] = {-1.9242528f, 1.1389694f, 2.7547456f, 4.1726942f};
    kiln_tensor *row = rope_x(ctx, g_x, 1);
    kt_expect_values(kiln_rope(row, &scaled), at3, 4, 1e-6);
    kiln_step_reset(ctx);
    kiln_tensor_free(x), kiln_tensor_free(row), kiln_tensor_free(f);
}
END_TEST

/* A rotation keeps the norm: sum(rope(x)^2) = sum(x^2), whose gradient is 2x, in both
 * layouts and at any offset; and the backward of a sum accumulates into a gradient that
 * another use of x already holds. */
START_TEST(rope_gradient_of_the_norm) {
    kiln_ctx *ctx = kt_ctx();
    int64_t shape[4] = {2, 3, 5, 6};
    float xv[180], want[180];
    for (int i = 0; i < 180; i++) xv[i] = (float)((i * 37) % 23 - 11) / 7.0f;
    kiln_tensor *x = kt_tensor(ctx, KILN_F32, 4, shape, xv);
    kiln_set_requires_grad(x, 1);
    kiln_rope_opts o = {.layout = KILN_ROPE_HALF, .pos0 = 41, .base = 500000.0f};
    kiln_tensor *y = kiln_rope(x, &o);
    kiln_tensor *loss = kiln_add(kiln_sum(kiln_mul(y, y)), kiln_sum(x));
    ck_assert_int_eq(kiln_backward(loss, 1.0f), KILN_OK);
    for (int i = 0; i < 180; i++) want[i] = 2.0f * xv[i] + 1.0f;
    kt_expect_values(kiln_grad(x), want, 180, 1e-5);
    kiln_step_reset(ctx);
    kiln_tensor_free(x);
}
END_TEST

/* What a KV cache relies on: rows t0 .. t0 + n - 1 of one call equal a call on just those
 * rows with pos0 = t0. */
START_TEST(rope_offset_is_a_slice) {
    kiln_ctx *ctx = kt_ctx();
    int64_t shape[4] = {2, 9, 3, 16};
    enum { N = 2 * 9 * 3 * 16 };
    float *xv = malloc(N * sizeof *xv), *full = malloc(N * sizeof *full), *part = malloc(N * sizeof *part);
    ck_assert(xv && full && part);
    for (int i = 0; i < N; i++) xv[i] = sinf((float)i);
    kiln_tensor *x = kt_tensor(ctx, KILN_F32, 4, shape, xv);
    for (int layout = 0; layout < 2; layout++) {
        kiln_rope_opts o = {.layout = (kiln_rope_layout)layout, .base = 10000.0f, .pos0 = 100};
        kiln_tensor *slice = kiln_slice(kiln_rope(x, &o), 1, 6, 3);
        o.pos0 = 106;
        kiln_tensor *late = kiln_rope(kiln_slice(x, 1, 6, 3), &o);
        ck_assert_int_eq(kiln_download_f32(slice, full, kiln_numel(slice)), KILN_OK);
        ck_assert_int_eq(kiln_download_f32(late, part, kiln_numel(late)), KILN_OK);
        ck_assert_double_lt(kt_max_abs_diff(full, part, kiln_numel(late)), 1e-6);
        kiln_step_reset(ctx);
    }
    kiln_tensor_free(x);
    free(xv), free(full), free(part);
}
END_TEST

START_TEST(rope_errors) {
    kiln_ctx *ctx = kt_ctx();
    int64_t s4[4] = {1, 3, 2, 4}, s_odd[4] = {1, 3, 2, 5}, s3[3] = {3, 2, 4}, two = 2, three = 3;
    kiln_tensor *x = kiln_tensor_new(ctx, KILN_F32, 4, s4), *odd = kiln_tensor_new(ctx, KILN_F32, 4, s_odd);
    kiln_tensor *flat = kiln_tensor_new(ctx, KILN_F32, 3, s3), *ids = kiln_tensor_new(ctx, KILN_I32, 4, s4);
    kiln_tensor *f3 = kiln_tensor_new(ctx, KILN_F32, 1, &three), *fi = kiln_tensor_new(ctx, KILN_I32, 1, &two);
    struct {
        kiln_tensor *x;
        kiln_rope_opts o;
        kiln_status status;
        const char *says;
    } bad[] = {
        {flat, {.base = 0.0f}, KILN_ERR_SHAPE, "[B, T, H, D]"},
        {odd, {.base = 0.0f}, KILN_ERR_SHAPE, "D even"},
        {ids, {.base = 0.0f}, KILN_ERR_DTYPE, "rope: x must be f32 or f16"},
        {x, {.base = -2.0f}, KILN_ERR_ARGUMENT, "base is -2"},
        {x, {.base = INFINITY}, KILN_ERR_ARGUMENT, "base is inf"},
        {x, {.layout = (kiln_rope_layout)7}, KILN_ERR_ARGUMENT, "layout 7"},
        {x, {.pos0 = -1}, KILN_ERR_ARGUMENT, "positions -1 .. 1"},
        {x, {.pos0 = 16777214}, KILN_ERR_ARGUMENT, "16777215]"},
        {x, {.freq_factors = f3}, KILN_ERR_SHAPE, "freq_factors is [3]; it must be [2]"},
        {x, {.freq_factors = fi}, KILN_ERR_DTYPE, "freq_factors must be f32"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_ptr_null(kiln_rope(bad[i].x, &bad[i].o));
        ck_assert_int_eq(kiln_error_status(), bad[i].status);
        ck_assert_msg(strstr(kiln_error_message(), bad[i].says), "case %zu: %s", i, kiln_error_message());
    }
    kiln_rope_opts last = {.pos0 = 16777213}; /* positions up to 2^24 - 1 are fine */
    ck_assert_ptr_nonnull(kiln_rope(x, &last));
    kiln_clear_error();
    ck_assert_ptr_null(kiln_rope(NULL, NULL));
    ck_assert_int_eq(kiln_error_status(), KILN_OK);
    kiln_step_reset(ctx);
    kiln_tensor_free(x), kiln_tensor_free(odd), kiln_tensor_free(flat), kiln_tensor_free(ids);
    kiln_tensor_free(f3), kiln_tensor_free(fi);
}
END_TEST

/* ---- the cases of tests/rope_reference.py (torch) and tests/rope_ggml_reference.py ---- */

/* Reads "name v v v ..." with exactly n values into out; 0 on a mismatch. */
static int read_values(FILE *f, const char *name, float *out, int64_t n) {
    char word[32];
    if (fscanf(f, "%31s", word) != 1 || strcmp(word, name) != 0) return 0;
    for (int64_t i = 0; i < n; i++) {
        double v;
        if (fscanf(f, "%lf", &v) != 1) return 0;
        out[i] = (float)v;
    }
    return 1;
}

/* The torch reference is float64 from f32 inputs: the cpu (angles in double) meets it to
 * f32 rounding. A device forms the angle in f32, off by about p 2^-23 radians at position p
 * (cases_rope.c), and so does ggml on every backend (p * theta_scale^i, the power built by
 * successive roundings): their normalized error may reach (p_max 2^-22)^2. Measured against
 * ggml: 2e-12 at position 100, 2e-11 at position 1000. */
static double reference_tol(int64_t p_max) {
    if (!g_reference_is_ggml && !strcmp(kt_backend(), "cpu")) return 1e-12;
    double a = (double)p_max * ldexp(1.0, -22);
    return 1e-10 + a * a;
}

static void check_reference_case(FILE *f, int layout, double base, int64_t pos0, const int64_t *shape, int64_t nf) {
    kiln_ctx *ctx = kt_ctx();
    const int64_t n = shape[0] * shape[1] * shape[2] * shape[3];
    float *v = malloc((size_t)(4 * n + nf + 1) * sizeof *v), *fv = v + 4 * n;
    ck_assert_ptr_nonnull(v);
    float *xv = v, *wv = v + n, *yv = v + 2 * n, *dxv = v + 3 * n;
    ck_assert(!nf || read_values(f, "factors", fv, nf));
    ck_assert(read_values(f, "x", xv, n) && read_values(f, "w", wv, n));
    ck_assert(read_values(f, "y", yv, n) && read_values(f, "dx", dxv, n));
    kiln_tensor *x = kt_tensor(ctx, KILN_F32, 4, shape, xv), *w = kt_tensor(ctx, KILN_F32, 4, shape, wv);
    kiln_tensor *factors = nf ? kt_tensor(ctx, KILN_F32, 1, &nf, fv) : NULL;
    kiln_set_requires_grad(x, 1);
    kiln_rope_opts o = {.base = (float)base, .layout = (kiln_rope_layout)layout, .pos0 = pos0, .freq_factors = factors};
    kiln_tensor *y = kiln_rope(x, &o);
    ck_assert_int_eq(kiln_backward(kiln_sum(kiln_mul(y, w)), 1.0f), KILN_OK);
    float *got = malloc((size_t)n * sizeof *got);
    ck_assert_ptr_nonnull(got);
    const double tol = reference_tol(pos0 + shape[1] - 1);
    ck_assert_int_eq(kiln_download_f32(y, got, n), KILN_OK);
    double ey = kt_normalized_error(yv, got, n);
    ck_assert_int_eq(kiln_download_f32(kiln_grad(x), got, n), KILN_OK);
    double edx = kt_normalized_error(dxv, got, n);
    printf("rope %s reference: layout %d base %g pos0 %lld [%lld,%lld,%lld,%lld] factors %lld: y %.2e, dx %.2e (tol %.1e)\n",
           g_reference_is_ggml ? "ggml" : "torch", layout, base, (long long)pos0, (long long)shape[0], (long long)shape[1], (long long)shape[2],
           (long long)shape[3], (long long)nf, ey, edx, tol);
    ck_assert_double_le(ey, tol);
    ck_assert_double_le(edx, tol);
    kiln_step_reset(ctx);
    kiln_tensor_free(x), kiln_tensor_free(w), kiln_tensor_free(factors);
    free(v), free(got);
}

START_TEST(rope_matches_reference) {
    FILE *f = fopen(g_reference_file, "r");
    ck_assert_msg(f != NULL, "cannot open %s", g_reference_file);
    int layout, cases = 0;
    double base;
    long long pos0, b, t, h, d, nf;
    char word[16];
    while (fscanf(f, "%15s %d %lf %lld %lld %lld %lld %lld %lld", word, &layout, &base, &pos0, &b, &t, &h, &d, &nf) == 9) {
        ck_assert_str_eq(word, "case");
        const int64_t shape[4] = {b, t, h, d};
        check_reference_case(f, layout, base, pos0, shape, nf);
        cases++;
    }
    fclose(f);
    ck_assert_int_ge(cases, 5);
}
END_TEST

static void add_tests(Suite *s, TCase *tc) {
    (void)s;
    tcase_add_test(tc, rope_by_hand);
    tcase_add_test(tc, rope_gradient_of_the_norm);
    tcase_add_test(tc, rope_offset_is_a_slice);
    tcase_add_test(tc, rope_errors);
    if (g_reference_file) tcase_add_test(tc, rope_matches_reference);
}

int main(int argc, char **argv) {
    for (int i = 1; i + 1 < argc; i++) {
        if (!strcmp(argv[i], "--torch-reference") || !strcmp(argv[i], "--ggml-reference")) {
            g_reference_file = argv[i + 1];
            g_reference_is_ggml = !strcmp(argv[i], "--ggml-reference");
        }
    }
    return kt_main_group(argc, argv, "rope", add_tests);
}
