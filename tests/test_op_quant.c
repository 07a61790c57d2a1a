/* Quantization in ggml's block formats (kiln/quant.h): kiln's quantizers write, byte for
 * byte, what ggml's reference quantizers write for the same floats, on random values at three
 * scales and on blocks at the rules' edges (all zero, the largest value negative, values on
 * the 4-bit grid, ties at .5). The expected bytes came from ggml itself: tests/quant_reference.py
 * calls quantize_row_{q8_0,q4_0,q4_1}_ref of libggml-base.so (llama.cpp's build in
 * node-llama-cpp 3.21.1) on the inputs quant_inputs() builds here. Then: dequantizing gives
 * values within half a step of the inputs, the names and sizes, and rows that are not whole
 * blocks are refused.
 *
 * The product with a quantized matrix (kiln_matmul_q) against dequantize-then-multiply on
 * the host, in double, for every format on odd shapes (one token, a prefill of 17 and of 40
 * rows across the kernel's row tiles, 3 to 33 outputs, 1 to 5 blocks), with and without a
 * bias, from f32 and f16 activations; a matrix quantized from GPT-2's transposed (Conv1D)
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

#define N_BLOCKS 10
#define N (N_BLOCKS * KILN_QBLOCK)

/* The inputs of tests/quant_reference.py, value for value. */
static void quant_inputs(float *x) {
    uint32_t state = 12345;
    static const double scales[3] = {0.02, 1.0, 300.0};
    int i = 0;
    for (; i < 6 * KILN_QBLOCK; i++) {
        state = (state * 1103515245u + 12345u) & 0x7fffffffu;
        float u = (float)((double)state / 2147483648.0);
        float a = u - 0.5f, b = (float)(2.0 * scales[(i / KILN_QBLOCK) % 3]);
        x[i] = a * b;
    }
    for (int j = 0; j < KILN_QBLOCK; j++, i++) x[i] = 0.0f;
    for (int j = 0; j < KILN_QBLOCK; j++, i++) x[i] = (float)(-1.0 + j / 64.0);
    for (int j = 0; j < KILN_QBLOCK; j++, i++) x[i] = (float)(j - 8.0);
    for (int j = 0; j < KILN_QBLOCK; j++, i++) x[i] = (float)(0.5 * (j % 3) - 0.5);
}

/* ggml's bytes (tests/quant_reference.py). */
static const char *const expected_hex[KILN_QFORMAT_COUNT] = {
    [KILN_Q8_0] =
    "090928cd2e9a04fd1bdec1df55abcb254b7f4ef70a21bf35387dd3f2363eab824a89cd1f1abd0f04e5ad2639cd7c58e3"
    "369e1c0d346ae5571f81df9a10dea4509093b069ac400dfde099f4cfe09f724bef118576a9d9403955af338d7e87a97f"
    "2d8abe24a8691f09f05d00aa48814ccba1b8f3be3e37c8b62c1a61b7a20f7deee190c93ab9daede19b1f4e6f23fa1321"
    "436ce6d887eff4a82a724e7972742bff237f8881cf1e28991a179d40386954c7993f6e186a81402259d54fbe82662f51"
    "9b8c86c52292f56bc08b9e46000000000000000000000000000000000000000000000000000000000000000000000820"
    "81838587898b8d8f91939597999b9d9fa1a3a5a7a9abadafb1b3b5b7b9bbbdbfcc31d4d9dfe4eaeff5fa00060b11161c"
    "21272c32373d42484d53585e63696e74797f081c81007f81007f81007f81007f81007f81007f81007f81007f81007f81"
    "007f8100",
    [KILN_Q4_0] =
    "ff98359b756ec858460abc9a534ddbf633f0be2fbaf469d8a6036a2c956f2ed61b123af9a3d047483ade59fb0afed103"
    "59f7cf61ee1a1519b7aee8332d90fd75621357c44c6b74638b2fddfffaf8b98aacff060550a7b722ab9f94500cefbdd4"
    "221c0f49af107cfa4e152dc4008088888888888888888888888888888888003020202020313131313131313142424242"
    "c0c15b5a5a4a493939382828271717160606002c80f80f80f80f80f80f80f80f80f80f80",
    [KILN_Q4_1] =
    "4f19f6a4ca748a9148b7b9f55476bcb2240acc0f1330bebbb9e468d896036a1b956f2dc61b1239e8de507ddcb8b7c521"
    "a704f5022efca60830ae22e5601915a5a79dd8322c80fc74621347b43b5b646305308bbbccfeeae7a979abfe06055097"
    "a7129a9e8e5094dc0cffbdd4221c0f4aaf107cfa4e152dc40000000000000000000000000000000000000000222800bc"
    "80809191a2a2b3b3c4c4d5d5e6e6f7f7224000c880809191a2a2b3b3c4c4d5d5e6e6f7f7442c00b870f70f70f70f70f7"
    "0f70f70f70f70f70",
};

static unsigned char *hex_bytes(const char *hex, size_t *len) {
    *len = strlen(hex) / 2;
    unsigned char *out = malloc(*len);
    for (size_t i = 0; i < *len; i++) {
        unsigned v;
        ck_assert_int_eq(sscanf(hex + 2 * i, "%2x", &v), 1);
        out[i] = (unsigned char)v;
    }
    return out;
}

START_TEST(quantize_writes_ggml_bytes) {
    kiln_qformat f = (kiln_qformat)_i;
    float x[N];
    quant_inputs(x);
    size_t len, bytes = kiln_qformat_row_bytes(f, N);
    unsigned char *expect = hex_bytes(expected_hex[f], &len), *got = malloc(bytes);
    ck_assert_uint_eq(len, bytes);
    ck_assert_int_eq(kiln_quantize_row(f, x, N, got), KILN_OK);
    for (size_t i = 0; i < bytes; i++)
        ck_assert_msg(got[i] == expect[i], "%s: byte %zu (block %zu) is %02x, ggml wrote %02x",
                      kiln_qformat_name(f), i, i / kiln_qformat_block_bytes(f), got[i], expect[i]);
    free(expect);
    free(got);
}
END_TEST

/* Each dequantized value is within half a quantization step of its input (a whole one at
 * Q4_0's positive end, whose grid stops at 7d), and an all-zero block comes back as zeros. */
START_TEST(dequantize_is_within_half_a_step) {
    kiln_qformat f = (kiln_qformat)_i;
    float x[N], y[N];
    quant_inputs(x);
    unsigned char *q = malloc(kiln_qformat_row_bytes(f, N));
    ck_assert_int_eq(kiln_quantize_row(f, x, N, q), KILN_OK);
    ck_assert_int_eq(kiln_dequantize_row(f, q, N, y), KILN_OK);
    for (int b = 0; b < N_BLOCKS; b++) {
        float lo = x[b * KILN_QBLOCK], hi = lo, amax = 0;
        for (int j = 0; j < KILN_QBLOCK; j++) {
            float v = x[b * KILN_QBLOCK + j];
            lo = fminf(lo, v), hi = fmaxf(hi, v), amax = fmaxf(amax, fabsf(v));
        }
        float step = f == KILN_Q8_0 ? amax / 127 : f == KILN_Q4_0 ? amax / 8 : (hi - lo) / 15;
        for (int j = 0; j < KILN_QBLOCK; j++) {
            int i = b * KILN_QBLOCK + j;
            /* the f16 scale adds up to 2^-11 of the block's range */
            float tol = (f == KILN_Q4_0 ? 1.0f : 0.5f) * step + 1e-3f * (amax + hi - lo);
            ck_assert_msg(fabsf(y[i] - x[i]) <= tol, "%s: value %d is %g, the input %g (step %g)",
                          kiln_qformat_name(f), i, (double)y[i], (double)x[i], (double)step);
        }
    }
    for (int j = 0; j < KILN_QBLOCK; j++) ck_assert_float_eq(y[6 * KILN_QBLOCK + j], 0.0f);
    free(q);
}
END_TEST

START_TEST(names_sizes_and_refusals) {
    ck_assert_uint_eq(kiln_qformat_block_bytes(KILN_Q8_0), 34);
    ck_assert_uint_eq(kiln_qformat_block_bytes(KILN_Q4_0), 18);
    ck_assert_uint_eq(kiln_qformat_block_bytes(KILN_Q4_1), 20);
    ck_assert_uint_eq(kiln_qformat_row_bytes(KILN_Q4_0, 96), 54);
    for (int f = 0; f < KILN_QFORMAT_COUNT; f++)
        ck_assert_int_eq(kiln_qformat_from_name(kiln_qformat_name((kiln_qformat)f)), f);
    ck_assert_int_eq(kiln_qformat_from_name("q5_0"), -1);
    float x[48] = {0};
    unsigned char out[64];
    ck_assert_int_eq(kiln_quantize_row(KILN_Q8_0, x, 48, out), KILN_ERR_SHAPE);
    ck_assert_ptr_nonnull(strstr(kiln_error_message(), "48 values"));
    ck_assert_int_eq(kiln_dequantize_row(KILN_Q4_0, out, 33, x), KILN_ERR_SHAPE);
    ck_assert_int_eq(kiln_quantize_row((kiln_qformat)7, x, 32, out), KILN_ERR_ARGUMENT);
    ck_assert_int_eq(kiln_quantize_row(KILN_Q8_0, NULL, 32, out), KILN_ERR_ARGUMENT);
}
END_TEST

/* ---- the product with a quantized matrix ---- */

static float noise(uint32_t *state) {
    *state = *state * 1664525u + 1013904223u;
    return (float)(*state >> 8) / 16777216.0f - 0.5f;
}

static const struct {
    int64_t m, n, k;
} qshapes[] = {{1, 5, 32}, {1, 33, 160}, {3, 7, 96}, {17, 33, 160}, {40, 3, 64}};
#define N_QSHAPES (int)(sizeof qshapes / sizeof qshapes[0])

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
 * so the checks stay as tight as the CPU's. */
START_TEST(matmul_q_matches_dequantize_then_multiply) {
    int shape = _i / (2 * KILN_QFORMAT_COUNT), with_bias = _i % 2;
    kiln_qformat f = (kiln_qformat)((_i / 2) % KILN_QFORMAT_COUNT);
    int64_t m = qshapes[shape].m, n = qshapes[shape].n, k = qshapes[shape].k;
    kiln_ctx *ctx = kt_ctx();
    const int rounds = kiln_qmatmul_rounds_activations(ctx);
    const int host_rounding = !strcmp(kiln_backend_name(ctx), "cpu"); /* the rounding of this file's C */
    if (host_rounding) ck_assert_msg(rounds, "the CPU's product rounds activations (cpu/cpu_quant_dot.h)");
    uint32_t state = (uint32_t)(17 + _i);
    float *x = malloc((size_t)(m * k) * sizeof *x), *w = malloc((size_t)(n * k) * sizeof *w);
    float *wd = malloc((size_t)(n * k) * sizeof *wd), *expect = malloc((size_t)(m * n) * sizeof *expect);
    float *expect_rounded = malloc((size_t)(m * n) * sizeof *expect_rounded);
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
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double sum = with_bias ? bias[j] : 0.0, mag = 0, rounded = sum, bound = 0, ties = 0;
            for (int64_t b = 0; b < k / KILN_QBLOCK; b++) {
                const float *xb = x + i * k + b * KILN_QBLOCK, *wb = wd + j * k + b * KILN_QBLOCK;
                int q[KILN_QBLOCK], tie[KILN_QBLOCK];
                double dx = round_block_like_cpu(xb, q, tie), wsum = 0;
                for (int c = 0; c < KILN_QBLOCK; c++) {
                    sum += (double)xb[c] * wb[c], mag += fabs(xb[c] * wb[c]);
                    rounded += dx * q[c] * wb[c], wsum += fabs(wb[c]);
                    if (tie[c]) ties += dx * fabs(wb[c]);
                }
                bound += wsum * dx * 127.0 / 254.0;
            }
            expect[i * n + j] = (float)sum, expect_rounded[i * n + j] = (float)rounded;
            scale = mag > scale ? mag : scale;
            rounding_bound = bound > rounding_bound ? bound : rounding_bound;
            tie_allowance = ties > tie_allowance ? ties : tie_allowance;
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
        kt_expect_values(y, expect_rounded, m * n, 4e-6 * scale + ties);
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
    free(x), free(w), free(wd), free(expect), free(expect_rounded), free(blocks);
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
    tcase_add_loop_test(tc, quantize_writes_ggml_bytes, 0, KILN_QFORMAT_COUNT);
    tcase_add_loop_test(tc, dequantize_is_within_half_a_step, 0, KILN_QFORMAT_COUNT);
    tcase_add_test(tc, names_sizes_and_refusals);
    tcase_add_loop_test(tc, matmul_q_matches_dequantize_then_multiply, 0, N_QSHAPES * KILN_QFORMAT_COUNT * 2);
    tcase_add_test(tc, matmul_q_transposed_source_and_refusals);
}

int main(int argc, char **argv) { return kt_main_group(argc, argv, "quant", add_tests); }
