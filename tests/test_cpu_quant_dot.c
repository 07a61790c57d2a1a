/* The CPU's integer dot products of quantized weight blocks with int8 activation blocks
 * (cpu/cpu_quant_dot.h). Whichever implementation this CPU selects (AVX2 on x86-64, NEON on
 * AArch64, portable C elsewhere) must compute the integer sums of the format's definition
 * (kiln/quant.h) exactly, as the portable C path does: test_op_quant checks the product
 * through kiln_matmul_q within f32 rounding, this checks the integers themselves. Scales of
 * 1 make each result that integer (every partial sum stays far below 2^24, so f32 holds it
 * exactly), so the comparison is equality. Under qemu (scripts/cross_aarch64.sh) this is
 * what runs the NEON code. */
#include <stdint.h>
#include <string.h>

#include "cpu/cpu_quant_dot.h"
#include "kiln/tensor.h"
#include "testutil.h"

enum { BLOCKS = 5, ROUNDS = 64 };

static uint32_t g_rng = 12345;
static uint32_t rnd(void) {
    g_rng = g_rng * 1664525u + 1013904223u;
    return g_rng >> 8;
}
/* Uniform in [-127, 127]: what the quantizers write (never -128; cpu_qx_quantize says why). */
static int8_t rnd_int8(void) { return (int8_t)((int)(rnd() % 255) - 127); }

/* Weight j of a block, as the format defines it: Q8_0 stores int8; the 4-bit formats keep
 * value j in the low nibble of byte j and value j + 16 in its high nibble, Q4_0 less 8. */
static int weight(kiln_qformat f, const unsigned char *block, int j) {
    const unsigned char *q = block + (f == KILN_Q4_1 ? 4 : 2);
    if (f == KILN_Q8_0) return (int8_t)q[j];
    int v = j < KILN_QBLOCK / 2 ? q[j] & 0x0f : q[j - KILN_QBLOCK / 2] >> 4;
    return f == KILN_Q4_0 ? v - 8 : v;
}

/* Random blocks with scale (and Q4_1's minimum) 1.0. */
static void fill_row(kiln_qformat f, unsigned char *row, size_t block_bytes) {
    const uint16_t one = kiln_f32_to_f16(1.0f);
    for (int b = 0; b < BLOCKS; b++) {
        unsigned char *block = row + (size_t)b * block_bytes;
        for (size_t i = 0; i < block_bytes; i++) block[i] = (unsigned char)rnd();
        if (f == KILN_Q8_0)
            for (int j = 0; j < KILN_QBLOCK; j++) block[2 + j] = (unsigned char)rnd_int8();
        block[0] = (unsigned char)(one & 0xff), block[1] = (unsigned char)(one >> 8);
        if (f == KILN_Q4_1) block[2] = block[0], block[3] = block[1];
    }
}

START_TEST(selected_qdot_gives_the_exact_integer_sums) {
    const kiln_qformat f = (kiln_qformat)_i;
    const char *name = "";
    cpu_qdot_fn *qdot = cpu_qdot_select(&name);
#if defined(__aarch64__) && defined(__ARM_NEON)
    /* the point of running this under qemu: the NEON code, not the portable fallback */
    ck_assert_msg(strncmp(name, "neon", 4) == 0, "aarch64 selected the %s implementation", name);
#endif
    const size_t block_bytes = kiln_qformat_block_bytes(f);
    unsigned char row[BLOCKS * 34];
    ck_assert_uint_le(BLOCKS * block_bytes, sizeof row);
    cpu_qx x[CPU_QDOT_ROWS * BLOCKS];
    for (int round = 0; round < ROUNDS; round++) {
        fill_row(f, row, block_bytes);
        const int rows = 1 + round % CPU_QDOT_ROWS;
        float acc[CPU_QDOT_ROWS];
        int64_t want[CPU_QDOT_ROWS] = {0};
        for (int i = 0; i < rows; i++)
            for (int b = 0; b < BLOCKS; b++) {
                cpu_qx *xb = &x[i * BLOCKS + b];
                int sum = 0;
                for (int j = 0; j < KILN_QBLOCK; j++) {
                    xb->q[j] = rnd_int8();
                    sum += xb->q[j];
                    want[i] += (int64_t)weight(f, row + (size_t)b * block_bytes, j) * xb->q[j];
                }
                xb->d = 1.0f, xb->s = (float)sum; /* s = d * sum(q) */
                if (f == KILN_Q4_1) want[i] += sum; /* the minimum's term: m * s */
            }
        qdot(f, row, block_bytes, BLOCKS, x, rows, acc);
        for (int i = 0; i < rows; i++)
            if (acc[i] != (float)want[i])
                ck_abort_msg("%s %s, round %d, row %d of %d: %.1f, the integer sum is %lld", name,
                             kiln_qformat_name(f), round, i, rows, acc[i], (long long)want[i]);
    }
}
END_TEST

/* Decoding's many-rows call (where this CPU has one) gives each weight row the bits of the
 * one-row call, scales that are not 1 and the bias included. */
START_TEST(qdot_n_gives_the_bits_of_one_row_calls) {
    const kiln_qformat f = (kiln_qformat)_i;
    cpu_qdot_n_fn *qdot_n = cpu_qdot_n_select();
    if (!qdot_n) return; /* this CPU calls cpu_qdot_fn per row */
    cpu_qdot_fn *qdot = cpu_qdot_select(NULL);
    enum { N = 7 };
    const size_t block_bytes = kiln_qformat_block_bytes(f), row_stride = BLOCKS * block_bytes + 6;
    unsigned char w[N * (BLOCKS * 34 + 6)];
    cpu_qx x[BLOCKS];
    float bias[N], y[N];
    for (int r = 0; r < N; r++) {
        fill_row(f, w + r * row_stride, block_bytes);
        for (int b = 0; b < BLOCKS; b++) { /* scales of f16 values between 1/64 and 2 */
            const uint16_t d = kiln_f32_to_f16((float)(1 + rnd() % 128) / 64.0f);
            w[r * row_stride + b * block_bytes] = (unsigned char)(d & 0xff);
            w[r * row_stride + b * block_bytes + 1] = (unsigned char)(d >> 8);
        }
        bias[r] = (float)((int)(rnd() % 200) - 100) / 7.0f;
    }
    for (int b = 0; b < BLOCKS; b++) {
        int sum = 0;
        for (int j = 0; j < KILN_QBLOCK; j++) sum += x[b].q[j] = rnd_int8();
        x[b].d = (float)(1 + rnd() % 1000) / 997.0f, x[b].s = x[b].d * (float)sum;
    }
    for (int with_bias = 0; with_bias < 2; with_bias++) {
        qdot_n(f, w, row_stride, block_bytes, BLOCKS, N, x, with_bias ? bias : NULL, y);
        for (int r = 0; r < N; r++) {
            float acc;
            qdot(f, w + r * row_stride, block_bytes, BLOCKS, x, 1, &acc);
            const float want = acc + (with_bias ? bias[r] : 0.0f);
            ck_assert_msg(!memcmp(&y[r], &want, sizeof want), "%s row %d (bias %d): %.9g, one row gives %.9g",
                          kiln_qformat_name(f), r, with_bias, y[r], want);
        }
    }
}
END_TEST

static void add_tests(Suite *s, TCase *tc) {
    (void)s;
    /* the 32-value formats the dot products have: Q8_0, Q4_0, Q4_1 */
    tcase_add_loop_test(tc, selected_qdot_gives_the_exact_integer_sums, 0, KILN_Q4_1 + 1);
    tcase_add_loop_test(tc, qdot_n_gives_the_bits_of_one_row_calls, 0, KILN_Q4_1 + 1);
}

int main(int argc, char **argv) { return kt_main(argc, argv, "cpu_quant_dot", add_tests, NULL, 0); }
