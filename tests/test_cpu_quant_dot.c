/* The CPU's integer dot products of quantized weight blocks with int8 activation blocks
 * (cpu/cpu_quant_dot.h), every implementation this build has and this CPU runs (AVX2 on
 * x86-64, NEON on AArch64, and the portable C everywhere), for every weight format.
 *
 * - Each must compute the integer sums of the format's definition exactly. The reference is
 *   kiln_dequantize_row (checked against ggml's own bytes in test_quant): with scales of 1
 *   every weight is an integer, and so is each dot product with integer activations of scale
 *   1; every partial sum stays below 2^24, so f32 holds it exactly and the comparison is
 *   equality. The K formats' scales reach 63 (Q4_K, Q5_K) and -128 (Q6_K), so their
 *   activations stay within [-7, 7] to keep that bound; the next test takes the full range.
 * - On real blocks (kiln_quantize_row of random floats, activations rounded by
 *   cpu_qact_quantize over their full range), each implementation gives the portable C's
 *   result within f32 rounding of the sum of magnitudes.
 * - Decoding's many-rows call gives each weight row the bits of the one-row call.
 * Under qemu (scripts/cross_aarch64.sh) this is what runs the NEON code. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/cpu_quant_dot.h"
#include "kiln/tensor.h"
#include "testutil.h"

/* Blocks per row: five of 32 values, or two super-blocks of 256. */
enum { ROUNDS = 24, MAX_K = 512, MAX_ROW_BYTES = 2 * 210 };

/* The weight formats (KILN_Q8_K is an activation format only). */
#define N_WEIGHT_FORMATS KILN_Q8_K

static uint32_t g_rng = 12345;
static uint32_t rnd(void) {
    g_rng = g_rng * 1664525u + 1013904223u;
    return g_rng >> 8;
}
/* Uniform in [-r, r]. */
static int rnd_int(int r) { return (int)(rnd() % (unsigned)(2 * r + 1)) - r; }

static int is_k(kiln_qformat f) { return kiln_qformat_block_values(f) == KILN_QK_K; }
static int64_t row_values(kiln_qformat f) { return is_k(f) ? 2 * KILN_QK_K : 5 * KILN_QBLOCK; }

static void put_f16(unsigned char *p, float v) {
    const uint16_t h = kiln_f32_to_f16(v);
    p[0] = (unsigned char)(h & 0xff), p[1] = (unsigned char)(h >> 8);
}

/* Random blocks whose scales (and minimums) are 1.0: random bytes everywhere else are valid
 * blocks in every format but Q8_0, whose integers stay within [-127, 127] as ggml's. */
static void fill_row(kiln_qformat f, unsigned char *row) {
    const size_t block_bytes = kiln_qformat_block_bytes(f);
    const int64_t blocks = row_values(f) / (int64_t)kiln_qformat_block_values(f);
    for (int64_t b = 0; b < blocks; b++) {
        unsigned char *block = row + (size_t)b * block_bytes;
        for (size_t i = 0; i < block_bytes; i++) block[i] = (unsigned char)rnd();
        if (f == KILN_Q8_0)
            for (int j = 0; j < KILN_QBLOCK; j++) block[2 + j] = (unsigned char)rnd_int(127);
        if (f == KILN_Q6_K) {
            put_f16(block + 208, 1.0f);
        } else {
            put_f16(block, 1.0f);
            if (f == KILN_Q4_1 || f == KILN_Q5_1 || f == KILN_Q4_K || f == KILN_Q5_K) put_f16(block + 2, 1.0f);
        }
    }
}

/* Activation row i of k values as blocks of f's activation format, from the integers q. */
static void make_activations(kiln_qformat f, const int8_t *q, float d, int64_t k, void *out) {
    if (is_k(f)) {
        cpu_q8k *x = out;
        for (int64_t b = 0; b < k / KILN_QK_K; b++) {
            x[b].d = d;
            memcpy(x[b].q, q + b * KILN_QK_K, KILN_QK_K);
            for (int g = 0; g < KILN_QK_K / 16; g++) {
                int s = 0;
                for (int j = 0; j < 16; j++) s += x[b].q[16 * g + j];
                x[b].bsums[g] = (int16_t)s;
            }
        }
    } else {
        cpu_qx *x = out;
        for (int64_t b = 0; b < k / KILN_QBLOCK; b++) {
            int s = 0;
            for (int j = 0; j < KILN_QBLOCK; j++) s += x[b].q[j] = q[b * KILN_QBLOCK + j];
            x[b].d = d, x[b].s = d * (float)s;
        }
    }
}

/* Loop index: weight format. */
START_TEST(every_path_gives_the_exact_integer_sums) {
    const kiln_qformat f = (kiln_qformat)_i;
    cpu_qdot_impl impls[CPU_QDOT_IMPLS];
    const int n_impls = cpu_qdot_impls(f, impls);
    ck_assert_str_eq(impls[n_impls - 1].name, "generic");
#if defined(__aarch64__) && defined(__ARM_NEON)
    /* the point of running this under qemu: the NEON code, not the portable fallback */
    ck_assert_msg(strncmp(impls[0].name, "neon", 4) == 0, "aarch64 selected the %s implementation", impls[0].name);
#endif
    const int64_t k = row_values(f), blocks = k / (int64_t)kiln_qformat_block_values(f);
    const int range = is_k(f) ? 7 : 127;
    unsigned char row[MAX_ROW_BYTES];
    float w[MAX_K];
    int8_t q[CPU_QDOT_ROWS][MAX_K];
    void *x = malloc((size_t)(CPU_QDOT_ROWS * blocks) * cpu_qact_bytes(f));
    const size_t x_row_bytes = (size_t)blocks * cpu_qact_bytes(f);
    for (int round = 0; round < ROUNDS; round++) {
        fill_row(f, row);
        ck_assert_int_eq(kiln_dequantize_row(f, row, k, w), KILN_OK);
        const int rows = 1 + round % CPU_QDOT_ROWS;
        double want[CPU_QDOT_ROWS] = {0};
        for (int i = 0; i < rows; i++) {
            for (int64_t j = 0; j < k; j++) q[i][j] = (int8_t)rnd_int(range), want[i] += (double)w[j] * q[i][j];
            make_activations(f, q[i], 1.0f, k, (char *)x + (size_t)i * x_row_bytes);
        }
        for (int p = 0; p < n_impls; p++) {
            float acc[CPU_QDOT_ROWS];
            impls[p].dot(f, row, kiln_qformat_block_bytes(f), blocks, x, rows, acc);
            for (int i = 0; i < rows; i++)
                if (acc[i] != (float)want[i])
                    ck_abort_msg("%s %s, round %d, row %d of %d: %.1f, the integer sum is %.1f", impls[p].name,
                                 kiln_qformat_name(f), round, i, rows, acc[i], want[i]);
        }
    }
    free(x);
}
END_TEST

/* Real blocks: weights quantized from random floats at a few scales, activations rounded by
 * cpu_qact_quantize from floats over their full range. Every implementation against the
 * portable C: the same integer sums, summed in f32 in another order, so within a few ulps of
 * the sum of the magnitudes of each block's terms. */
START_TEST(every_path_matches_the_portable_c) {
    const kiln_qformat f = (kiln_qformat)_i;
    cpu_qdot_impl impls[CPU_QDOT_IMPLS];
    const int n_impls = cpu_qdot_impls(f, impls);
    const int64_t k = row_values(f), blocks = k / (int64_t)kiln_qformat_block_values(f);
    const size_t x_row_bytes = (size_t)blocks * cpu_qact_bytes(f);
    unsigned char row[MAX_ROW_BYTES];
    float w[MAX_K], wd[MAX_K], xf[CPU_QDOT_ROWS][MAX_K];
    void *x = malloc((size_t)CPU_QDOT_ROWS * x_row_bytes);
    for (int round = 0; round < ROUNDS; round++) {
        const float scale = round % 3 == 0 ? 0.01f : round % 3 == 1 ? 1.0f : 50.0f;
        for (int64_t j = 0; j < k; j++) w[j] = scale * (float)rnd_int(1000) / 1000.0f * (1.0f + (float)(j % 5));
        ck_assert_int_eq(kiln_quantize_row(f, w, k, row), KILN_OK);
        ck_assert_int_eq(kiln_dequantize_row(f, row, k, wd), KILN_OK);
        double mag[CPU_QDOT_ROWS] = {0};
        for (int i = 0; i < CPU_QDOT_ROWS; i++) {
            for (int64_t j = 0; j < k; j++) xf[i][j] = (float)rnd_int(1000) / 100.0f, mag[i] += fabs((double)wd[j] * xf[i][j]);
            cpu_qact_quantize(f, xf[i], k, (char *)x + (size_t)i * x_row_bytes);
        }
        float want[CPU_QDOT_ROWS], got[CPU_QDOT_ROWS];
        impls[n_impls - 1].dot(f, row, kiln_qformat_block_bytes(f), blocks, x, CPU_QDOT_ROWS, want);
        for (int p = 0; p < n_impls - 1; p++)
            for (int rows = 1; rows <= CPU_QDOT_ROWS; rows++) {
                impls[p].dot(f, row, kiln_qformat_block_bytes(f), blocks, x, rows, got);
                for (int i = 0; i < rows; i++)
                    ck_assert_msg(fabs((double)got[i] - want[i]) <= 1e-6 * mag[i],
                                  "%s %s, round %d, row %d of %d: %.9g, the portable C gives %.9g (magnitude %g)",
                                  impls[p].name, kiln_qformat_name(f), round, i, rows, got[i], want[i], mag[i]);
            }
    }
    free(x);
}
END_TEST

/* Decoding's many-rows call (of each implementation that has one) gives each weight row the
 * bits of the one-row call, scales that are not 1 and the bias included. */
START_TEST(qdot_n_gives_the_bits_of_one_row_calls) {
    const kiln_qformat f = (kiln_qformat)_i;
    cpu_qdot_impl impls[CPU_QDOT_IMPLS];
    const int n_impls = cpu_qdot_impls(f, impls);
    enum { N = 7 };
    const int64_t k = row_values(f), blocks = k / (int64_t)kiln_qformat_block_values(f);
    const size_t row_stride = kiln_qformat_row_bytes(f, k) + 6; /* padded, as device rows */
    unsigned char *w = malloc(N * row_stride);
    float wf[MAX_K], xf[MAX_K], bias[N], y[N];
    void *x = malloc((size_t)blocks * cpu_qact_bytes(f));
    for (int r = 0; r < N; r++) {
        for (int64_t j = 0; j < k; j++) wf[j] = (float)rnd_int(1000) / 300.0f;
        ck_assert_int_eq(kiln_quantize_row(f, wf, k, w + r * row_stride), KILN_OK);
        bias[r] = (float)rnd_int(100) / 7.0f;
    }
    for (int64_t j = 0; j < k; j++) xf[j] = (float)rnd_int(1000) / 997.0f;
    cpu_qact_quantize(f, xf, k, x);
    for (int p = 0; p < n_impls; p++) {
        if (!impls[p].dot_n) continue; /* that implementation calls cpu_qdot_fn per row */
        for (int with_bias = 0; with_bias < 2; with_bias++) {
            impls[p].dot_n(f, w, row_stride, kiln_qformat_block_bytes(f), blocks, N, x, with_bias ? bias : NULL, y);
            for (int r = 0; r < N; r++) {
                float acc;
                impls[p].dot(f, w + r * row_stride, kiln_qformat_block_bytes(f), blocks, x, 1, &acc);
                const float want = acc + (with_bias ? bias[r] : 0.0f);
                ck_assert_msg(!memcmp(&y[r], &want, sizeof want), "%s %s row %d (bias %d): %.9g, one row gives %.9g",
                              impls[p].name, kiln_qformat_name(f), r, with_bias, y[r], want);
            }
        }
    }
    free(w), free(x);
}
END_TEST

/* The K formats' activations are ggml's Q8_K: d = -(the value of largest magnitude) / 127
 * (negative when that value is), q = round(x / d), bsums the sums of 16 (kiln_quantize_row,
 * checked against ggml in test_quant); the others' are blocks of 32 with d = max|x| / 127. */
START_TEST(activation_blocks) {
    float x[KILN_QK_K];
    for (int j = 0; j < KILN_QK_K; j++) x[j] = (float)(j % 17) - 5.0f;
    x[100] = -20.0f;
    cpu_q8k q;
    ck_assert_uint_eq(cpu_qact_bytes(KILN_Q4_K), sizeof q);
    cpu_qact_quantize(KILN_Q6_K, x, KILN_QK_K, &q);
    ck_assert_float_eq_tol(q.d, 20.0f / 127.0f, 1e-7f);
    ck_assert_int_eq(q.q[100], -127);
    for (int g = 0; g < KILN_QK_K / 16; g++) {
        int s = 0;
        for (int j = 0; j < 16; j++) s += q.q[16 * g + j];
        ck_assert_int_eq(q.bsums[g], s);
    }
    cpu_qx b[2];
    ck_assert_uint_eq(cpu_qact_bytes(KILN_Q5_0), sizeof b[0]);
    cpu_qact_quantize(KILN_Q5_1, x + 96, 64, b);
    ck_assert_float_eq_tol(b[0].d, 20.0f / 127.0f, 1e-7f);
    ck_assert_float_eq_tol(b[1].d, 11.0f / 127.0f, 1e-7f);
}
END_TEST

static void add_tests(Suite *s, TCase *tc) {
    (void)s;
    tcase_add_loop_test(tc, every_path_gives_the_exact_integer_sums, 0, N_WEIGHT_FORMATS);
    tcase_add_loop_test(tc, every_path_matches_the_portable_c, 0, N_WEIGHT_FORMATS);
    tcase_add_loop_test(tc, qdot_n_gives_the_bits_of_one_row_calls, 0, N_WEIGHT_FORMATS);
    tcase_add_test(tc, activation_blocks);
}

int main(int argc, char **argv) { return kt_main(argc, argv, "cpu_quant_dot", add_tests, NULL, 0); }
