/* The product with a quantized matrix (kiln_matmul_q) against dequantize-then-multiply on
 * the host, in double, for every weight format on odd shapes (one token, a prefill of 17 and
 * of 40 rows across the kernel's row tiles, 3 to 33 outputs, 1 to 5 blocks of 32 or 1 to 2
 * super-blocks of 256), with and without a bias, from f32 and f16 activations; a matrix quantized from GPT-2's transposed (Conv1D)
 * layout equals the one from its transpose; columns that are not whole blocks and
 * activations of the wrong width are refused; a backend that rounds activations to 8 bits
 * (the CPU; Vulkan with integer dot products: kiln_qmatmul_rounds_activations says which)
 * is held to that rounding exactly and to its bound against the exact product. The
 * library's "quant" verification cases (engine/verify/cases_quant.c, also run by
 * `kiln verify`) compare the device with the CPU. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/quant.h"
#include "testutil.h"

/* The weight formats: all but KILN_Q8_K, an activation format (the formats' own tests are
 * test_quant.c's). */
#define N_PRODUCT_FORMATS KILN_Q8_K

/* ---- the product with a quantized matrix ---- */

static float noise(uint32_t *state) {
    *state = *state * 1664525u + 1013904223u;
    return (float)(*state >> 8) / 16777216.0f - 0.5f;
}

/* {m, n, k} for the formats of 32-value blocks, and for the K formats' super-blocks of 256. */
static const struct {
    int64_t m, n, k;
} qshapes[] = {{1, 5, 32}, {1, 33, 160}, {3, 7, 96}, {17, 33, 160}, {40, 3, 64}},
  kshapes[] = {{1, 5, 256}, {1, 33, 512}, {3, 7, 256}, {17, 9, 512}, {40, 3, 256}};
#define N_QSHAPES (int)(sizeof qshapes / sizeof qshapes[0])
_Static_assert(sizeof qshapes == sizeof kshapes, "a K shape for each shape");

/* The CPU's product rounds each block of 32 activations to int8 (cpu/cpu_quant_dot.h), and so
 * does Vulkan's on devices with integer dot products (shaders/qmatmul_qx.comp); this is that
 * rounding, the same float operations, so the test can compute the exact integer sums.
 * Returns the block's scale; q gets the integers, and tie[j] is 1 where x_j / d lies within
 * TIE_MARGIN of a half-integer: where a device whose division is a few ulps off may round
 * the other way. Vulkan allows 2.5 ulps for x / y and for 1 / x, so the device's 1 / d may
 * be about 5 ulps off and x_j * (1 / d) about 6 (relative 6 * 2^-23) of |x_j / d| <= 127:
 * 9.1e-5, inside 2^-13. */
#define TIE_MARGIN (1.0 / 8192.0)
static float round_block_like_cpu(const float *x, int *q, int *tie) {
    float amax = 0.0f;
    for (int j = 0; j < KILN_QBLOCK; j++) amax = fmaxf(amax, fabsf(x[j]));
    const float d = amax / 127.0f, id = d > 0.0f ? 1.0f / d : 0.0f;
    for (int j = 0; j < KILN_QBLOCK; j++) {
        const float v = x[j] * id;
        q[j] = (int)lrintf(v);
        tie[j] = fabs(fabs((double)v - floor((double)v)) - 0.5) <= TIE_MARGIN;
    }
    return d;
}

/* A row of k activations as the CPU rounds them for products with format f: value j becomes
 * rounded[j] = d q_j, which is at most step[j] / 2 from x_j (step = |d| of its block), and
 * tie[j] = |d| where x_j lies within TIE_MARGIN of a tie (else 0). The K formats' rounding is
 * ggml's Q8_K, 256 values to one f32 scale, which kiln_quantize_row writes (checked against
 * ggml's bytes in test_quant): d (f32) then the 256 int8 q. Their ties are not tracked: only
 * the CPU is held to its exact rounding there (see below). */
static void round_row_like_cpu(kiln_qformat f, const float *x, int64_t k, double *rounded, double *step, double *tie) {
    if (kiln_qformat_block_values(f) == KILN_QK_K) {
        unsigned char block[292];
        for (int64_t b = 0; b < k / KILN_QK_K; b++) {
            ck_assert_int_eq(kiln_quantize_row(KILN_Q8_K, x + b * KILN_QK_K, KILN_QK_K, block), KILN_OK);
            float d;
            memcpy(&d, block, sizeof d);
            for (int j = 0; j < KILN_QK_K; j++) {
                const int64_t c = b * KILN_QK_K + j;
                rounded[c] = (double)d * (int8_t)block[4 + j], step[c] = fabs((double)d), tie[c] = 0.0;
            }
        }
        return;
    }
    for (int64_t b = 0; b < k / KILN_QBLOCK; b++) {
        int q[KILN_QBLOCK], t[KILN_QBLOCK];
        const double d = round_block_like_cpu(x + b * KILN_QBLOCK, q, t);
        for (int j = 0; j < KILN_QBLOCK; j++) {
            const int64_t c = b * KILN_QBLOCK + j;
            rounded[c] = d * q[j], step[c] = d, tie[c] = t[j] ? d : 0.0;
        }
    }
}

/* Loop index i: shape i / (2 * formats), format (i / 2) % formats, bias when i is odd.
 *
 * Every backend is checked against dequantize-then-multiply. One that uses the activations
 * as given (OpenCL, Vulkan without integer dot products or in minimum-limits mode): a few
 * ulps of the largest sum of magnitudes. One that rounds them to 8 bits first
 * (kiln_qmatmul_rounds_activations): within a few ulps of that rounding done here (the
 * integer sums are exact, so only the f32 accumulation differs), and within the rounding's
 * bound of dequantize-then-multiply, sum over blocks of sum|w| * (half a step of x =
 * max|x| / 254).
 *
 * The CPU runs this very C rounding, so its integers are exactly the ones here. A Vulkan
 * device's f32 division may be a few ulps off (qmatmul_qx.comp): its d may differ in the
 * last bits, which moves each block's contribution by about 1e-7 of itself (inside the few
 * ulps), and an activation within TIE_MARGIN of a tie may round to the other integer. Such
 * a flip moves that activation's value by one step d_x, and the output by d_x * |w| for its
 * weight w: where the backend's rounding is not this file's, both checks allow, per output,
 * the sum of d_x * |w| over the activations of its row that are that close to a tie
 * (tie_allowance, the largest such sum). With these random inputs there are usually none,
 * so the checks stay as tight as the CPU's.
 *
 * The K formats: the CPU rounds to Q8_K, and its integers are exactly the ones here. A GPU
 * that rounds may round otherwise (blocks of 32, whose steps are no larger than their
 * 256's): it is held to the bound only, which covers any rounding to the nearest step of at
 * most Q8_K's. */
START_TEST(matmul_q_matches_dequantize_then_multiply) {
    int shape = _i / (2 * N_PRODUCT_FORMATS), with_bias = _i % 2;
    kiln_qformat f = (kiln_qformat)((_i / 2) % N_PRODUCT_FORMATS);
    const int is_k = kiln_qformat_block_values(f) == KILN_QK_K;
    int64_t m = (is_k ? kshapes : qshapes)[shape].m, n = (is_k ? kshapes : qshapes)[shape].n,
            k = (is_k ? kshapes : qshapes)[shape].k;
    kiln_ctx *ctx = kt_ctx();
    const int rounds = kiln_qmatmul_rounds_activations(ctx);
    const int host_rounding = !strcmp(kiln_backend_name(ctx), "cpu"); /* the rounding of this file's C */
    if (host_rounding) ck_assert_msg(rounds, "the CPU's product rounds activations (cpu/cpu_quant_dot.h)");
    uint32_t state = (uint32_t)(17 + _i);
    float *x = malloc((size_t)(m * k) * sizeof *x), *w = malloc((size_t)(n * k) * sizeof *w);
    float *wd = malloc((size_t)(n * k) * sizeof *wd), *expect = malloc((size_t)(m * n) * sizeof *expect);
    float *expect_rounded = malloc((size_t)(m * n) * sizeof *expect_rounded);
    double *xr = malloc((size_t)(3 * k) * sizeof *xr), *step = xr + k, *tie = xr + 2 * k;
    float bias[64];
    for (int64_t i = 0; i < m * k; i++) x[i] = 2.0f * noise(&state);
    for (int64_t i = 0; i < n * k; i++) w[i] = 0.3f * noise(&state) * (1.0f + (float)(i % 7));
    for (int64_t i = 0; i < n; i++) bias[i] = noise(&state);
    unsigned char *blocks = malloc(kiln_qformat_row_bytes(f, k) * (size_t)n);
    for (int64_t r = 0; r < n; r++) {
        ck_assert_int_eq(kiln_quantize_row(f, w + r * k, k, blocks + (size_t)r * kiln_qformat_row_bytes(f, k)), KILN_OK);
        ck_assert_int_eq(kiln_dequantize_row(f, blocks + (size_t)r * kiln_qformat_row_bytes(f, k), k, wd + r * k),
                         KILN_OK);
    }
    double scale = 0, rounding_bound = 0, tie_allowance = 0;
    for (int64_t i = 0; i < m; i++) {
        round_row_like_cpu(f, x + i * k, k, xr, step, tie);
        for (int64_t j = 0; j < n; j++) {
            double sum = with_bias ? bias[j] : 0.0, mag = 0, rounded = sum, bound = 0, ties = 0;
            for (int64_t c = 0; c < k; c++) {
                const double xc = x[i * k + c], wc = wd[j * k + c];
                sum += xc * wc, mag += fabs(xc * wc), rounded += xr[c] * wc;
                bound += fabs(wc) * step[c] / 2, ties += fabs(wc) * tie[c];
            }
            expect[i * n + j] = (float)sum, expect_rounded[i * n + j] = (float)rounded;
            scale = mag > scale ? mag : scale;
            rounding_bound = bound > rounding_bound ? bound : rounding_bound;
            tie_allowance = ties > tie_allowance ? ties : tie_allowance;
        }
    }
    kiln_qmatrix *q = kiln_qmatrix_new(ctx, f, n, k);
    ck_assert_ptr_nonnull(q);
    ck_assert_int_eq(kiln_qmatrix_quantize(q, w, 0), KILN_OK);
    int64_t xs[2] = {m, k};
    kiln_tensor *xt = kt_tensor(ctx, KILN_F32, 2, xs, x), *bt = with_bias ? kt_tensor(ctx, KILN_F32, 1, &n, bias) : NULL;
    kiln_tensor *y = kiln_matmul_q(xt, q, bt);
    ck_assert_msg(y != NULL, "%s", kiln_error_message());
    ck_assert_int_eq(y->shape[0], m);
    ck_assert_int_eq(y->shape[1], n);
    /* f32 sums in another order: a few ulps of the largest sum of magnitudes */
    if (rounds) {
        double ties = host_rounding ? 0.0 : tie_allowance;
        if (host_rounding || !is_k) kt_expect_values(y, expect_rounded, m * n, 4e-6 * scale + ties);
        kt_expect_values(y, expect, m * n, rounding_bound + 4e-6 * scale + ties);
    } else {
        kt_expect_values(y, expect, m * n, 4e-6 * scale);
    }
    if (kiln_supports_dtype(ctx, KILN_F16)) { /* f16 activations: within their rounding */
        kiln_tensor *xh = kiln_cast(xt, KILN_F16), *bh = bt ? kiln_cast(bt, KILN_F16) : NULL;
        kiln_tensor *yh = kiln_matmul_q(xh, q, bh);
        ck_assert_msg(yh != NULL && yh->dtype == KILN_F16, "%s", kiln_error_message());
        kt_expect_values(kiln_cast(yh, KILN_F32), expect, m * n, 2e-3 * scale + 1e-3 + (rounds ? rounding_bound : 0));
    }
    kiln_step_reset(ctx);
    kiln_qmatrix_free(q);
    kiln_tensor_free(xt), kiln_tensor_free(bt);
    free(x), free(w), free(wd), free(expect), free(expect_rounded), free(blocks), free(xr);
}
END_TEST

START_TEST(matmul_q_transposed_source_and_refusals) {
    kiln_ctx *ctx = kt_ctx();
    int64_t n = 6, k = 64;
    float w[6 * 64], wt[64 * 6];
    uint32_t state = 5;
    for (int64_t r = 0; r < n; r++)
        for (int64_t c = 0; c < k; c++) w[r * k + c] = wt[c * n + r] = noise(&state);
    kiln_qmatrix *a = kiln_qmatrix_new(ctx, KILN_Q4_0, n, k), *b = kiln_qmatrix_new(ctx, KILN_Q4_0, n, k);
    ck_assert_int_eq(kiln_qmatrix_quantize(a, w, 0), KILN_OK);
    ck_assert_int_eq(kiln_qmatrix_quantize(b, wt, 1), KILN_OK);
    ck_assert_uint_eq(kiln_qmatrix_bytes(a), (size_t)n * 36);
    int64_t xs[2] = {2, k};
    float x[128];
    for (int i = 0; i < 128; i++) x[i] = noise(&state);
    kiln_tensor *xt = kt_tensor(ctx, KILN_F32, 2, xs, x);
    float ya[12], yb[12];
    ck_assert_int_eq(kiln_download_f32(kiln_matmul_q(xt, a, NULL), ya, 12), KILN_OK);
    ck_assert_int_eq(kiln_download_f32(kiln_matmul_q(xt, b, NULL), yb, 12), KILN_OK);
    for (int i = 0; i < 12; i++) ck_assert_float_eq(ya[i], yb[i]);
    /* refusals */
    ck_assert_ptr_null(kiln_qmatrix_new(ctx, KILN_Q8_0, 4, 48));
    ck_assert_int_eq(kiln_error_status(), KILN_ERR_SHAPE);
    ck_assert_ptr_nonnull(strstr(kiln_error_message(), "multiple of 32"));
    ck_assert_ptr_null(kiln_qmatrix_new(ctx, KILN_Q4_K, 4, 288)); /* whole blocks of 32, not of 256 */
    ck_assert_int_eq(kiln_error_status(), KILN_ERR_SHAPE);
    ck_assert_ptr_nonnull(strstr(kiln_error_message(), "multiple of 256"));
    int64_t bad[2] = {2, 32};
    kiln_tensor *narrow = kiln_tensor_new(ctx, KILN_F32, 2, bad);
    ck_assert_ptr_null(kiln_matmul_q(narrow, a, NULL));
    ck_assert_int_eq(kiln_error_status(), KILN_ERR_SHAPE);
    kiln_step_reset(ctx);
    kiln_qmatrix_free(a), kiln_qmatrix_free(b);
    kiln_tensor_free(xt), kiln_tensor_free(narrow);
}
END_TEST

static void add_tests(Suite *s, TCase *tc) {
    (void)s;
    tcase_add_loop_test(tc, matmul_q_matches_dequantize_then_multiply, 0, N_QSHAPES * N_PRODUCT_FORMATS * 2);
    tcase_add_test(tc, matmul_q_transposed_source_and_refusals);
}

int main(int argc, char **argv) { return kt_main_group(argc, argv, "quant", add_tests); }
