/* The product with a quantized matrix (kiln_matmul_q) against dequantize-then-multiply on
 * the host, in double, for every weight format on odd shapes (one token, a prefill of 17 and
 * of 40 rows across the kernel's row tiles, 3 to 33 outputs, 1 to 5 blocks of 32 or 1 to 2
 * super-blocks of 256), with and without a bias, from f32 and f16 activations; a matrix
 * quantized from GPT-2's transposed (Conv1D) layout equals the one from its transpose;
 * columns that are not whole blocks and activations of the wrong width are refused; a backend that rounds activations to 8 bits
 * (the CPU; Vulkan with integer dot products: kiln_qmatmul_rounds_activations says which)
 * is held to that rounding exactly and to its bound against the exact product. The
 * library's "quant" verification cases (engine/verify/cases_quant.c, also run by
 * `kiln verify`) compare the device with the CPU.
 *
 * The transposed product (kiln_matmul_qt, the gradient of x) against dequantize-then-
 * multiply too, for every format, f32 and f16, 1 to 64 rows of dy and shapes across the
 * kernels' tiles; the backward of kiln_matmul_q gives R W and the sums of R for the loss
 * sum(y R); kiln_qmatrix_download returns the bytes uploaded. */
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

/* ---- the transposed product y = dy W (kiln_matmul_qt), the gradient of x ---- */

/* A [n, k] matrix quantized in f: its blocks in q, their values (kiln_dequantize_row, the
 * reference decoding) in wd. */
static kiln_qmatrix *random_qmatrix(kiln_ctx *ctx, kiln_qformat f, int64_t n, int64_t k, uint32_t seed, float *wd) {
    const size_t row_bytes = kiln_qformat_row_bytes(f, k);
    float *w = malloc((size_t)(n * k) * sizeof *w);
    unsigned char *blocks = malloc(row_bytes * (size_t)n);
    for (int64_t i = 0; i < n * k; i++) w[i] = 0.3f * noise(&seed) * (1.0f + (float)(i % 7));
    for (int64_t r = 0; r < n; r++) {
        ck_assert_int_eq(kiln_quantize_row(f, w + r * k, k, blocks + (size_t)r * row_bytes), KILN_OK);
        ck_assert_int_eq(kiln_dequantize_row(f, blocks + (size_t)r * row_bytes, k, wd + r * k), KILN_OK);
    }
    kiln_qmatrix *q = kiln_qmatrix_new(ctx, f, n, k);
    ck_assert_ptr_nonnull(q);
    ck_assert_int_eq(kiln_qmatrix_upload(q, blocks), KILN_OK);
    free(w), free(blocks);
    return q;
}

/* {n, k}: W's rows (dy's width) and columns (y's), across the kernels' tiles: the GPUs' panels
 * of 16 rows and 64 columns, the CPU's of 128 rows and 256 columns (cpu_quant_t.c). */
static const struct {
    int64_t n, k;
} qt_qshapes[] = {{5, 32}, {33, 96}, {130, 64}}, qt_kshapes[] = {{5, 256}, {33, 512}, {130, 256}};
#define N_QT_SHAPES (int)(sizeof qt_qshapes / sizeof qt_qshapes[0])
_Static_assert(sizeof qt_qshapes == sizeof qt_kshapes, "a K shape for each shape");
/* dy's rows: one token, a few, a prefill across the GPUs' row tiles of 8, the CPU's runs */
static const int64_t qt_rows[] = {1, 3, 17, 64};
#define N_QT_ROWS (int)(sizeof qt_rows / sizeof qt_rows[0])

/* Loop index i: format i % formats, dy's rows (i / formats) % N_QT_ROWS, shape
 * i / (formats * N_QT_ROWS). Against dequantize-then-multiply in double: f32 sums in another
 * order, so a few ulps of the largest sum of magnitudes; f16 dy and y within their rounding. */
START_TEST(matmul_qt_matches_dequantize_then_multiply) {
    const kiln_qformat f = (kiln_qformat)(_i % N_PRODUCT_FORMATS);
    const int64_t m = qt_rows[(_i / N_PRODUCT_FORMATS) % N_QT_ROWS];
    const int shape = _i / (N_PRODUCT_FORMATS * N_QT_ROWS);
    const int is_k = kiln_qformat_block_values(f) == KILN_QK_K;
    const int64_t n = (is_k ? qt_kshapes : qt_qshapes)[shape].n, k = (is_k ? qt_kshapes : qt_qshapes)[shape].k;
    kiln_ctx *ctx = kt_ctx();
    uint32_t state = (uint32_t)(91 + _i);
    float *wd = malloc((size_t)(n * k) * sizeof *wd), *dy = malloc((size_t)(m * n) * sizeof *dy);
    float *expect = malloc((size_t)(m * k) * sizeof *expect);
    kiln_qmatrix *q = random_qmatrix(ctx, f, n, k, state, wd);
    for (int64_t i = 0; i < m * n; i++) dy[i] = 2.0f * noise(&state);
    double scale = 0;
    for (int64_t i = 0; i < m; i++)
        for (int64_t c = 0; c < k; c++) {
            double sum = 0, mag = 0;
            for (int64_t r = 0; r < n; r++) sum += (double)dy[i * n + r] * wd[r * k + c], mag += fabs((double)dy[i * n + r] * wd[r * k + c]);
            expect[i * k + c] = (float)sum;
            scale = mag > scale ? mag : scale;
        }
    int64_t ds[2] = {m, n};
    kiln_tensor *dyt = kt_tensor(ctx, KILN_F32, 2, ds, dy);
    kiln_tensor *y = kiln_matmul_qt(dyt, q);
    ck_assert_msg(y != NULL, "%s", kiln_error_message());
    ck_assert_int_eq(y->dtype, KILN_F32);
    ck_assert_int_eq(y->shape[0], m);
    ck_assert_int_eq(y->shape[1], k);
    kt_expect_values(y, expect, m * k, 4e-6 * scale);
    if (kiln_supports_dtype(ctx, KILN_F16)) { /* f16 dy and y: within their rounding */
        kiln_tensor *yh = kiln_matmul_qt(kiln_cast(dyt, KILN_F16), q);
        ck_assert_msg(yh != NULL && yh->dtype == KILN_F16, "%s", kiln_error_message());
        kt_expect_values(kiln_cast(yh, KILN_F32), expect, m * k, 2e-3 * scale + 1e-3);
    }
    kiln_step_reset(ctx);
    kiln_qmatrix_free(q);
    kiln_tensor_free(dyt);
    free(wd), free(dy), free(expect);
}
END_TEST

/* The backward through kiln_matmul_q: L = sum(matmul_q(x, W, b) * R) + sum(matmul_q(x + x, W)
 * * R) has dL/dx = 3 R W (whatever rounding of x the forward did: the gradient is the
 * product's, dY W) and dL/db = R summed over its rows. x + x is a step tensor, whose
 * gradient the kernel writes outright; the leaf x's is accumulated into. */
typedef struct qt_loss {
    kiln_tensor *x, *b, *r;
    kiln_qmatrix *q;
} qt_loss;

static kiln_tensor *qt_loss_fn(void *user) {
    qt_loss *l = user;
    kiln_tensor *a = kiln_sum(kiln_mul(kiln_matmul_q(l->x, l->q, l->b), l->r));
    kiln_tensor *b = kiln_sum(kiln_mul(kiln_matmul_q(kiln_add(l->x, l->x), l->q, NULL), l->r));
    return kiln_add(a, b);
}

START_TEST(matmul_q_backward_is_dy_w) {
    const kiln_qformat formats[] = {KILN_Q4_0, KILN_Q5_1, KILN_Q6_K};
    const kiln_qformat f = formats[_i];
    const int64_t m = 6, n = 19, k = kiln_qformat_block_values(f) == KILN_QK_K ? 256 : 96;
    kiln_ctx *ctx = kt_ctx();
    uint32_t state = (uint32_t)(7 + _i);
    float *wd = malloc((size_t)(n * k) * sizeof *wd), *x = malloc((size_t)(m * k) * sizeof *x);
    float r[6 * 19], bias[19], expect_dx[6 * 512], expect_db[19];
    kiln_qmatrix *q = random_qmatrix(ctx, f, n, k, state, wd);
    for (int64_t i = 0; i < m * k; i++) x[i] = noise(&state);
    for (int64_t i = 0; i < m * n; i++) r[i] = noise(&state);
    for (int64_t j = 0; j < n; j++) bias[j] = noise(&state);
    double scale = 0;
    for (int64_t i = 0; i < m; i++)
        for (int64_t c = 0; c < k; c++) {
            double sum = 0, mag = 0;
            for (int64_t j = 0; j < n; j++) sum += 3.0 * r[i * n + j] * wd[j * k + c], mag += fabs(3.0 * r[i * n + j] * wd[j * k + c]);
            expect_dx[i * k + c] = (float)sum;
            scale = mag > scale ? mag : scale;
        }
    for (int64_t j = 0; j < n; j++) {
        double sum = 0;
        for (int64_t i = 0; i < m; i++) sum += r[i * n + j];
        expect_db[j] = (float)sum;
    }
    int64_t xs[2] = {m, k}, rs[2] = {m, n};
    qt_loss l = {kt_tensor(ctx, KILN_F32, 2, xs, x), kt_tensor(ctx, KILN_F32, 1, &n, bias),
                 kt_tensor(ctx, KILN_F32, 2, rs, r), q};
    kiln_set_requires_grad(l.x, 1), kiln_set_requires_grad(l.b, 1);
    kiln_tensor *weights[2] = {l.x, l.b};
    int64_t count;
    float *got = kt_loss_and_grads(ctx, weights, 2, qt_loss_fn, &l, &count);
    ck_assert_int_eq(count, 1 + m * k + n);
    for (int64_t i = 0; i < m * k; i++)
        ck_assert_msg(fabs(got[1 + i] - expect_dx[i]) <= 4e-6 * scale, "%s dx[%lld] = %g, expected %g",
                      kiln_qformat_name(f), (long long)i, got[1 + i], expect_dx[i]);
    for (int64_t j = 0; j < n; j++)
        ck_assert_msg(fabs(got[1 + m * k + j] - expect_db[j]) <= 1e-5, "%s db[%lld] = %g, expected %g",
                      kiln_qformat_name(f), (long long)j, got[1 + m * k + j], expect_db[j]);
    /* with grad off, nothing is recorded: the product is inference again */
    kiln_set_grad_enabled(ctx, 0);
    ck_assert_int_eq(kiln_requires_grad(kiln_matmul_q(l.x, q, l.b)), 0);
    kiln_set_grad_enabled(ctx, 1);
    kiln_step_reset(ctx);
    kiln_qmatrix_free(q);
    kiln_tensor_free(l.x), kiln_tensor_free(l.b), kiln_tensor_free(l.r);
    free(got), free(wd), free(x);
}
END_TEST

/* kiln_qmatrix_download gives back the bytes uploaded, unpadded (Q5_0's rows of 22 bytes are
 * padded to 24 on the device); dy of the wrong width is refused. */
START_TEST(qmatrix_download_and_qt_refusals) {
    kiln_ctx *ctx = kt_ctx();
    const int64_t n = 5, k = 32;
    const size_t row_bytes = kiln_qformat_row_bytes(KILN_Q5_0, k);
    unsigned char blocks[5 * 22], back[5 * 22];
    uint32_t state = 3;
    for (size_t i = 0; i < sizeof blocks; i++) blocks[i] = (unsigned char)(noise(&state) * 256.0f + 128.0f);
    for (int64_t r = 0; r < n; r++) blocks[r * (int64_t)row_bytes + 1] = 0x3c; /* a finite f16 d */
    kiln_qmatrix *q = kiln_qmatrix_new(ctx, KILN_Q5_0, n, k);
    ck_assert_ptr_nonnull(q);
    ck_assert_uint_eq(row_bytes, 22);
    ck_assert_int_eq(kiln_qmatrix_upload(q, blocks), KILN_OK);
    memset(back, 0, sizeof back);
    ck_assert_int_eq(kiln_qmatrix_download(q, back), KILN_OK);
    ck_assert_int_eq(memcmp(blocks, back, sizeof blocks), 0);
    ck_assert_int_eq(kiln_qmatrix_download(q, NULL), KILN_ERR_ARGUMENT);
    int64_t bad[2] = {2, 4};
    kiln_tensor *dy = kiln_tensor_new(ctx, KILN_F32, 2, bad);
    ck_assert_ptr_null(kiln_matmul_qt(dy, q));
    ck_assert_int_eq(kiln_error_status(), KILN_ERR_SHAPE);
    ck_assert_ptr_nonnull(strstr(kiln_error_message(), "5 rows"));
    kiln_step_reset(ctx);
    kiln_qmatrix_free(q);
    kiln_tensor_free(dy);
}
END_TEST

static void add_tests(Suite *s, TCase *tc) {
    (void)s;
    tcase_add_loop_test(tc, matmul_q_matches_dequantize_then_multiply, 0, N_QSHAPES * N_PRODUCT_FORMATS * 2);
    tcase_add_test(tc, matmul_q_transposed_source_and_refusals);
    tcase_add_loop_test(tc, matmul_qt_matches_dequantize_then_multiply, 0, N_QT_SHAPES * N_QT_ROWS * N_PRODUCT_FORMATS);
    tcase_add_loop_test(tc, matmul_q_backward_is_dy_w, 0, 3);
    tcase_add_test(tc, qmatrix_download_and_qt_refusals);
}

int main(int argc, char **argv) { return kt_main_group(argc, argv, "quant", add_tests); }
