/* Vulkan's quantized products (shaders/qmatmul.comp, qmatmul_dot.comp, their block reader
 * shaders/qblock.glsl) on blocks of random bytes, against kiln_dequantize_row (which
 * tests/test_quant.c holds to ggml's to_float) then a product in double on the host.
 *
 * Quantized weights use few of a format's bit patterns (a quantizer's scales and minimums
 * follow its rules); random bytes use them all: every 4-, 5- and 6-bit value, the K formats'
 * 6-bit scales and minimums with their top bits set, Q6_K's negative and -128 scales. Only
 * the f16 scales are drawn from a range, so that the products stay finite. Each row's first
 * block is all ones or all zeros but its scales. Every format, one token and a prefill over
 * the kernels' 8-row tiles, k of several super-blocks (units of 32 spread over lanes), odd n,
 * with and without a bias, f32 and (where the device stores f16) f16 activations.
 *
 * The f32 path (no integer dot product, or KILN_VK_MIN_LIMITS) is held within 1e-5 of the
 * sum of magnitudes; the int8 path (kiln_qmatmul_rounds_activations) the same, against
 * activations rounded here as qmatmul_qx.comp rounds them (but for the rare near-tie that
 * a device's division may round the other way). tests/vulkan.cmake runs this in every mode of the product (normal,
 * minimum limits, the GPUs' lane mappings forced). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/quant.h"
#include "testutil.h"

#ifdef KILN_HAVE_VULKAN

static kiln_ctx *ctx;

static uint32_t next(uint32_t *state) {
    *state = *state * 1664525u + 1013904223u;
    return *state >> 8;
}
/* uniform in [lo, hi) */
static float uniform(uint32_t *state, float lo, float hi) { return lo + (hi - lo) * (float)next(state) / 16777216.0f; }

static void put_f16(unsigned char *p, float v) {
    uint16_t h = kiln_f32_to_f16(v);
    p[0] = (unsigned char)h, p[1] = (unsigned char)(h >> 8);
}

/* Random bytes, a row's first block all ones (row % 2 == 0) or all zeros, then the f16
 * scales set: d of either sign, the K formats' dmin and the 32-value formats' m. */
static void random_blocks(kiln_qformat f, int64_t n, int64_t k, unsigned char *out, uint32_t *state) {
    size_t bytes = kiln_qformat_block_bytes(f), per_row = (size_t)k / kiln_qformat_block_values(f);
    for (int64_t r = 0; r < n; r++)
        for (size_t b = 0; b < per_row; b++) {
            unsigned char *p = out + ((size_t)r * per_row + b) * bytes;
            for (size_t i = 0; i < bytes; i++) p[i] = (unsigned char)(b ? next(state) : r % 2 ? 0 : 0xff);
            float sign = next(state) & 1 ? -1.0f : 1.0f;
            if (f == KILN_Q6_K) {
                put_f16(p + 208, sign * uniform(state, 1e-3f, 1e-2f));
            } else if (f >= KILN_Q4_K) {
                put_f16(p, sign * uniform(state, 1e-3f, 1e-2f));
                put_f16(p + 2, uniform(state, 0.0f, 1e-2f));
            } else {
                put_f16(p, sign * uniform(state, 2e-3f, 2e-2f));
                if (f == KILN_Q4_1 || f == KILN_Q5_1) put_f16(p + 2, uniform(state, -0.3f, 0.3f));
            }
        }
}

/* x's blocks of 32 as qmatmul_qx.comp rounds them (the CPU's 32-value rule, cpu_quant_dot.h):
 * d = max |x| / 127, q = round-half-even(x / d) with x * (1 / d) in f32; the values d * q go to
 * xr. tie[j] is 1 where x_j / d lies within 2^-13 of a half-integer, where a device whose
 * division is a few ulps off (Vulkan allows 2.5) may round the other way (test_op_quant.c
 * says why 2^-13). */
static void round_like_qx(const float *x, int64_t n, float *xr, unsigned char *tie, float *step) {
    for (int64_t b = 0; b < n; b += 32) {
        float amax = 0.0f;
        for (int64_t j = b; j < b + 32; j++) amax = fmaxf(amax, fabsf(x[j]));
        const float d = amax / 127.0f, id = d > 0.0f ? 1.0f / d : 0.0f;
        for (int64_t j = b; j < b + 32; j++) {
            const float v = x[j] * id;
            xr[j] = d * (float)lrintf(v), step[j] = d;
            tie[j] = fabs(fabs((double)v - floor((double)v)) - 0.5) <= 1.0 / 8192.0;
        }
    }
}

/* y = x wd^T (+ bias) in double, into expect; *tol the largest allowance over the outputs:
 * 1e-5 of sum |x| max |w| (f32 sums, the minimum term's cancellation included). Where the
 * device rounds x to int8 per 32 values (rounds), x is first rounded so (round_like_qx),
 * and an activation near a tie may move by its step d: the allowance adds d |w| for those. */
static void reference(const float *x, const float *wd, const float *bias, int64_t m, int64_t n, int64_t k,
                      int rounds, float *expect, double *tol) {
    float *xr = malloc((size_t)(m * k) * sizeof *xr), *step = malloc((size_t)(m * k) * sizeof *step);
    unsigned char *tie = calloc((size_t)(m * k), 1);
    if (rounds) round_like_qx(x, m * k, xr, tie, step);
    else memcpy(xr, x, (size_t)(m * k) * sizeof *xr);
    *tol = 0;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            const float *xi = xr + i * k, *wr = wd + j * k;
            double sum = bias ? bias[j] : 0.0, xabs = 0, wmax = 0, ties = 0;
            for (int64_t c = 0; c < k; c++) {
                sum += (double)xi[c] * wr[c];
                xabs += fabs(xi[c]), wmax = fmax(wmax, fabs(wr[c]));
                if (tie[i * k + c]) ties += step[i * k + c] * fabs(wr[c]);
            }
            expect[i * n + j] = (float)sum;
            *tol = fmax(*tol, 1e-5 * xabs * wmax + ties);
        }
    free(xr), free(step), free(tie);
}

/* y downloaded as f32 against expect: within tol, and f16's output rounding where half */
static void expect_close(kiln_tensor *y, const float *expect, int64_t m, int64_t n, double tol, int half,
                         const char *what) {
    ck_assert_msg(y != NULL, "%s: %s", what, kiln_error_message());
    kiln_tensor *y32 = half ? kiln_cast(y, KILN_F32) : y;
    float *got = malloc((size_t)(m * n) * sizeof *got);
    ck_assert_int_eq(kiln_download_f32(y32, got, m * n), KILN_OK);
    for (int64_t e = 0; e < m * n; e++) {
        double allow = tol + (half ? fabs(expect[e]) / 1024.0 : 0.0);
        ck_assert_msg(fabs((double)got[e] - expect[e]) <= allow, "%s: y[%lld][%lld] is %.7g, expected %.7g (+- %.3g)",
                      what, (long long)(e / n), (long long)(e % n), (double)got[e], (double)expect[e], allow);
    }
    free(got);
}

static const kiln_qformat formats[] = {KILN_Q8_0, KILN_Q4_0, KILN_Q4_1, KILN_Q5_0,
                                       KILN_Q5_1, KILN_Q4_K, KILN_Q5_K, KILN_Q6_K};
#define N_FORMATS (int)(sizeof formats / sizeof formats[0])
/* one token, a prefill over two and a half row tiles; k of 1, 2 and 3 super-blocks */
static const struct {
    int64_t m, n, k;
} shapes[] = {{1, 9, 512}, {19, 5, 256}, {3, 33, 768}};
#define N_SHAPES (int)(sizeof shapes / sizeof shapes[0])

/* Loop index i: shape i / (2 * formats), format (i / 2) % formats, bias when i is odd. */
START_TEST(random_blocks_match_dequantize_then_multiply) {
    int with_bias = _i % 2;
    kiln_qformat f = formats[(_i / 2) % N_FORMATS];
    int64_t m = shapes[_i / (2 * N_FORMATS)].m, n = shapes[_i / (2 * N_FORMATS)].n, k = shapes[_i / (2 * N_FORMATS)].k;
    uint32_t state = (uint32_t)(1000 + _i);
    size_t row_bytes = kiln_qformat_row_bytes(f, k);
    unsigned char *blocks = malloc(row_bytes * (size_t)n);
    float *x = malloc((size_t)(m * k) * sizeof *x), *wd = malloc((size_t)(n * k) * sizeof *wd);
    float *expect = malloc((size_t)(m * n) * sizeof *expect), bias[64];
    random_blocks(f, n, k, blocks, &state);
    for (int64_t r = 0; r < n; r++)
        ck_assert_int_eq(kiln_dequantize_row(f, blocks + (size_t)r * row_bytes, k, wd + r * k), KILN_OK);
    /* multiples of 2^-10 in [-2, 2): the same values in f16 */
    for (int64_t i = 0; i < m * k; i++) x[i] = (float)((int)(next(&state) % 4096) - 2048) / 1024.0f;
    for (int64_t i = 0; i < n; i++) bias[i] = (float)((int)(next(&state) % 4096) - 2048) / 1024.0f;
    double tol;
    reference(x, wd, with_bias ? bias : NULL, m, n, k, kiln_qmatmul_rounds_activations(ctx), expect, &tol);

    kiln_qmatrix *q = kiln_qmatrix_new(ctx, f, n, k);
    ck_assert_msg(q != NULL, "%s", kiln_error_message());
    ck_assert_int_eq(kiln_qmatrix_upload(q, blocks), KILN_OK);
    int64_t xs[2] = {m, k};
    char what[64];
    for (int half = 0; half < 2; half++) {
        kiln_dtype dt = half ? KILN_F16 : KILN_F32;
        if (half && !kiln_supports_dtype(ctx, KILN_F16)) break;
        kiln_tensor *xt = kt_tensor(ctx, dt, 2, xs, x), *bt = with_bias ? kt_tensor(ctx, dt, 1, &n, bias) : NULL;
        snprintf(what, sizeof what, "%s, %lld x %lld x %lld, %s%s", kiln_qformat_name(f), (long long)m, (long long)n,
                 (long long)k, half ? "f16" : "f32", with_bias ? ", bias" : "");
        expect_close(kiln_matmul_q(xt, q, bt), expect, m, n, tol, half, what);
        kiln_step_reset(ctx);
        kiln_tensor_free(xt), kiln_tensor_free(bt);
    }
    kiln_qmatrix_free(q);
    free(blocks), free(x), free(wd), free(expect);
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_loop_test(tc, random_blocks_match_dequantize_then_multiply, 0, N_SHAPES * N_FORMATS * 2);
}

int main(void) { return kt_run_tests_on("vulkan", &ctx, "vulkan_qmatmul", "vulkan", add_tests); }

#else
int main(void) {
    fprintf(stderr, "skipping: built without Vulkan\n");
    return 77;
}
#endif
