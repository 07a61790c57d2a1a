/* ggml's block formats (kiln/quant.h) without a device: kiln's quantizers write, byte for
 * byte, what ggml's reference quantizers write for the same floats, on random values at three
 * scales and on blocks at the rules' edges (all zero, the largest value negative, values on
 * the 4-bit grid, ties at .5), for all nine formats. The expected bytes came from ggml itself:
 * `tests/quant_reference.py --golden` calls libggml-base.so (llama.cpp's build in
 * node-llama-cpp 3.21.1) on the inputs quant_inputs() builds here, with a hash of what its
 * to_float makes of them, which kiln's dequantizer must give bit for bit. Then: dequantizing
 * gives values within half a step of the inputs (the 32-value formats), the names and sizes, rows that are not whole
 * blocks are refused, and so are quantized matrices of the wrong width or in Q8_K.
 *
 * With --ggml-reference FILE (ctest quant_ggml_reference, where the peer is installed),
 * kiln's quantizers and dequantizers must give ggml's bytes and to_float values exactly on
 * every row tests/quant_reference.py had ggml quantize: random rows at several scales and
 * lengths (256 to 768), and edge rows (all zero, below ggml's epsilon, one outlier, negative
 * maxima, all positive, constant, values on grids and on ties). */
#define _POSIX_C_SOURCE 200809L /* getline */
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

/* ggml's bytes (tests/quant_reference.py --golden: ggml_quantize_chunk, and
 * quantize_row_q8_K_ref for Q8_K, of libggml-base.so): of the N values of quant_inputs() for
 * the 32-value formats, of its first KILN_QK_K for the K formats. */
static const char *const expected_hex[KILN_QFORMAT_COUNT] = {
    [KILN_Q8_0] = /* ggml's 340 bytes of the first 320 values */
    "090928cd2e9a04fd1bdec1df55abcb254b7f4ef70a21bf35387dd3f2363eab824a89cd1f1abd0f04e5ad2639cd7c58e3"
    "369e1c0d346ae5571f81df9a10dea4509093b069ac400dfde099f4cfe09f724bef118576a9d9403955af338d7e87a97f"
    "2d8abe24a8691f09f05d00aa48814ccba1b8f3be3e37c8b62c1a61b7a20f7deee190c93ab9daede19b1f4e6f23fa1321"
    "436ce6d887eff4a82a724e7972742bff237f8881cf1e28991a179d40386954c7993f6e186a81402259d54fbe82662f51"
    "9b8c86c52292f56bc08b9e46000000000000000000000000000000000000000000000000000000000000000000000820"
    "81838587898b8d8f91939597999b9d9fa1a3a5a7a9abadafb1b3b5b7b9bbbdbfcc31d4d9dfe4eaeff5fa00060b11161c"
    "21272c32373d42484d53585e63696e74797f081c81007f81007f81007f81007f81007f81007f81007f81007f81007f81"
    "007f8100",
    [KILN_Q4_0] = /* ggml's 180 bytes of the first 320 values */
    "ff98359b756ec858460abc9a534ddbf633f0be2fbaf469d8a6036a2c956f2ed61b123af9a3d047483ade59fb0afed103"
    "59f7cf61ee1a1519b7aee8332d90fd75621357c44c6b74638b2fddfffaf8b98aacff060550a7b722ab9f94500cefbdd4"
    "221c0f49af107cfa4e152dc4008088888888888888888888888888888888003020202020313131313131313142424242"
    "c0c15b5a5a4a493939382828271717160606002c80f80f80f80f80f80f80f80f80f80f80",
    [KILN_Q4_1] = /* ggml's 200 bytes of the first 320 values */
    "4f19f6a4ca748a9148b7b9f55476bcb2240acc0f1330bebbb9e468d896036a1b956f2dc61b1239e8de507ddcb8b7c521"
    "a704f5022efca60830ae22e5601915a5a79dd8322c80fc74621347b43b5b646305308bbbccfeeae7a979abfe06055097"
    "a7129a9e8e5094dc0cffbdd4221c0f4aaf107cfa4e152dc40000000000000000000000000000000000000000222800bc"
    "80809191a2a2b3b3c4c4d5d5e6e6f7f7224000c880809191a2a2b3b3c4c4d5d5e6e6f7f7442c00b870f70f70f70f70f7"
    "0f70f70f70f70f70",
    [KILN_Q5_0] = /* ggml's 220 bytes of the first 320 values */
    "ff94aa1b12b36b16facd8f909d046824958bb7fb76f0be2bcdd61b8973d8d2b14d06c5372acf4bac272464d2a3ccfed4"
    "a8598e9054ada2e604fcb207a2fe8fb1bb351515563067086e3cc0754920fae9c4279e7878b7e9c78b2bf7c0ffd8aafe"
    "e4ff520448fe1d0ba14e5e35353e944ce75d0e8907dd6ba933181e934d20f8d48b1b4a980080ffffffff000000000000"
    "00000000000000000000002c0000000040405151515162626262737373738484c0bdff010000a6a5948383726161504f"
    "3f3e2d1d1c0b0028b66ddbb600f00f00f00f00f00f00f00f00f00f00",
    [KILN_Q5_1] = /* ggml's 240 bytes of the first 320 values */
    "2315f6a455e4ed4c94e91533706f63fba8eb6a755904891fe42bbebbcdd61b8963d7c2a04c05c43729bf4bac262463d1"
    "b64c7ddc012b57a6716fab536e19fb034df95d11704e44ca331515a5563067085e3bc0754810f9d9c4279e7877b6d9c6"
    "c72b8bbbf7c0dfd899edd4ef52f448fd1c0ba13d4e35352d684c94dce75d0e8908ee7cb933191f945e20f9f58c1b4ba8"
    "000000000000000000000000000000000000000000000000002400bc0000ffff00112233445566778899aabbccddeeff"
    "003c00c80000ffff00112233445566778899aabbccddeeff212800b8b66ddbb600f00f00f00f00f00f00f00f00f00f00",
    [KILN_Q4_K] = /* ggml's 144 bytes of the first 256 values */
    "1739b44400c03f0000c03b0000f90000994499816737a8b553f5dc62b429ab9ebbe667d9a30a6a2e94662ada12103be0"
    "68c77521b604b5412e3b6638a0ae4235ab8acc322a80ee60521e4aa03359625dccfee95728c9fbaef605c0a6e752da4e"
    "0cffbede2a17094fa01074f94a1129d90000101020203030404050506060707080809090a0a0b0b0c0c0d0d0e0e0f0f0",
    [KILN_Q5_K] = /* ggml's 176 bytes of the first 256 values */
    "b534944400c03f0000c03d0000fb000037383b0219303b32240623242a0d33139fbebdb396999d91a28485bb908491b6"
    "34791503c05f436b98ebaac56934391f69cec1a33706b63f1abe4697252068c1e1bf0b529e099b934d79ed81707e947a"
    "5736ca754521ffe0c42f957077b4d4cc89fdc49f3294f84dfd0b915eceb5b58e09ef7ebe3510049f5120faf3851343a3"
    "00102030405060708090a0b0c0d0e0f000102030405060708090a0b0c0d0e0f0",
    [KILN_Q6_K] = /* ggml's 210 bytes of the first 256 values */
    "36fc8559df318978e048cb450df79e61032ea35830dd0eff650c4def1b716253ca710caf270536328de1daf702e929dd"
    "5d9b793688c0085684d7e91424a55c8a040d090e0509010c0906010c0d090b0d030e0c0d0b00090f030104070a070606"
    "0e0a1512272f3b364a41505866667370001a1c253633415159647d7b809297a265de9507d91ed5463b32502bc6bd4414"
    "5b5d06fed97206b3b9c5927ef090b38c0b0f0e05020a0f0b0d010c090d040e07030f0b0f020202070800050e0600020e"
    "00000000877d00000000808500000000b5ac",
    [KILN_Q8_K] = /* ggml's 292 bytes of the first 256 values */
    "478515c00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000f30320670c3120618eb511ef7b8a5727c0c7ab51cd7382795781d376"
    "42dc58970000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000c998ad3865c294e9977dc1dfa82ab2427d9bd2b06472793ade6c0b97"
    "3f7460bb0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "000000000000000000000000000000000000000000000000000000000101ecff000000000000000064fedd0100000000"
    "00000000",
};

/* FNV-1a (64-bit) of the f32 values ggml's to_float makes of those bytes (the same script). */
static const uint64_t expected_to_float_fnv[KILN_QFORMAT_COUNT] = {
    [KILN_Q8_0] = 0x1364efb8a9bb0065u,
    [KILN_Q4_0] = 0x8ba479f46618f0ccu,
    [KILN_Q4_1] = 0xc3f68182eba9ef48u,
    [KILN_Q5_0] = 0xaba4d66087982404u,
    [KILN_Q5_1] = 0x334834a0728d47d5u,
    [KILN_Q4_K] = 0xeab73a57d035db1cu,
    [KILN_Q5_K] = 0x436190f45726785fu,
    [KILN_Q6_K] = 0x643c1a4da38cbd71u,
    [KILN_Q8_K] = 0x25641bae8543eebau,
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
    const int64_t n = kiln_qformat_block_values(f) == KILN_QBLOCK ? N : KILN_QK_K;
    float x[N];
    quant_inputs(x);
    size_t len, bytes = kiln_qformat_row_bytes(f, n);
    unsigned char *expect = hex_bytes(expected_hex[f], &len), *got = malloc(bytes);
    ck_assert_uint_eq(len, bytes);
    ck_assert_int_eq(kiln_quantize_row(f, x, n, got), KILN_OK);
    for (size_t i = 0; i < bytes; i++)
        ck_assert_msg(got[i] == expect[i], "%s: byte %zu (block %zu) is %02x, ggml wrote %02x",
                      kiln_qformat_name(f), i, i / kiln_qformat_block_bytes(f), got[i], expect[i]);
    free(expect);
    free(got);
}
END_TEST

/* kiln's dequantizer gives the bits of ggml's to_float from ggml's bytes. */
START_TEST(dequantize_gives_ggml_values) {
    kiln_qformat f = (kiln_qformat)_i;
    const int64_t n = kiln_qformat_block_values(f) == KILN_QBLOCK ? N : KILN_QK_K;
    size_t len;
    unsigned char *q = hex_bytes(expected_hex[f], &len);
    float y[N];
    ck_assert_int_eq(kiln_dequantize_row(f, q, n, y), KILN_OK);
    uint64_t h = 0xcbf29ce484222325u;
    for (size_t i = 0; i < (size_t)n * sizeof *y; i++) h = (h ^ ((const unsigned char *)y)[i]) * 0x100000001b3u;
    ck_assert_msg(h == expected_to_float_fnv[f], "%s: the dequantized values are not ggml's (hash %016llx)",
                  kiln_qformat_name(f), (unsigned long long)h);
    free(q);
}
END_TEST

/* Each dequantized value of the 32-value formats is within half a quantization step of its
 * input (a whole one at Q4_0's and Q5_0's positive end, whose grids stop at 7d and 15d), and
 * an all-zero block comes back as zeros. */
START_TEST(dequantize_is_within_half_a_step) {
    kiln_qformat f = (kiln_qformat)_i;
    float x[N], y[N];
    const int symmetric = f == KILN_Q4_0 || f == KILN_Q5_0;
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
        float step = f == KILN_Q8_0   ? amax / 127
                     : f == KILN_Q4_0 ? amax / 8
                     : f == KILN_Q5_0 ? amax / 16
                     : f == KILN_Q4_1 ? (hi - lo) / 15
                                      : (hi - lo) / 31;
        for (int j = 0; j < KILN_QBLOCK; j++) {
            int i = b * KILN_QBLOCK + j;
            /* the f16 scale adds up to 2^-11 of the block's range */
            float tol = (symmetric ? 1.0f : 0.5f) * step + 1e-3f * (amax + hi - lo);
            ck_assert_msg(fabsf(y[i] - x[i]) <= tol, "%s: value %d is %g, the input %g (step %g)",
                          kiln_qformat_name(f), i, (double)y[i], (double)x[i], (double)step);
        }
    }
    for (int j = 0; j < KILN_QBLOCK; j++) ck_assert_float_eq(y[6 * KILN_QBLOCK + j], 0.0f);
    free(q);
}
END_TEST

/* ---- --ggml-reference FILE: tests/quant_reference.py's rows and what ggml made of them ----
 * For each case, kiln's quantizer writes ggml's bytes exactly, and kiln's dequantizer gives
 * the bits of ggml's to_float from ggml's bytes. */
static const char *g_reference_file;

/* The hex after "TAG " on the next line of f, as bytes (*len of them); NULL at the end. */
static unsigned char *read_hex_line(FILE *f, const char *tag, size_t *len) {
    char *line = NULL;
    size_t cap = 0;
    ssize_t got = getline(&line, &cap, f);
    ck_assert_msg(got > 2 && line[0] == tag[0] && line[1] == ' ', "%s: expected a \"%s\" line", g_reference_file, tag);
    line[strcspn(line, "\n")] = 0;
    unsigned char *out = hex_bytes(line + 2, len);
    free(line);
    return out;
}

/* One case: 1 when kiln matched ggml in it. */
static int replay_case(FILE *f, const char *format, long long n, const char *label) {
    kiln_qformat fmt = (kiln_qformat)kiln_qformat_from_name(format);
    ck_assert_msg((int)fmt >= 0, "%s: unknown format %s", g_reference_file, format);
    size_t xn, qn, yn;
    unsigned char *xb = read_hex_line(f, "x", &xn), *q = read_hex_line(f, "q", &qn),
                  *yb = read_hex_line(f, "y", &yn);
    ck_assert_uint_eq(xn, (size_t)n * 4);
    ck_assert_uint_eq(yn, (size_t)n * 4);
    ck_assert_uint_eq(qn, kiln_qformat_row_bytes(fmt, n));
    float *x = malloc(xn), *y = malloc(yn);
    unsigned char *mine = malloc(qn);
    memcpy(x, xb, xn);
    ck_assert_int_eq(kiln_quantize_row(fmt, x, n, mine), KILN_OK);
    ck_assert_int_eq(kiln_dequantize_row(fmt, q, n, y), KILN_OK);
    size_t bad_q = 0, bad_y = 0, first_q = 0, first_y = 0;
    for (size_t i = qn; i-- > 0;)
        if (mine[i] != q[i]) bad_q++, first_q = i;
    for (size_t i = yn; i-- > 0;)
        if (((unsigned char *)y)[i] != yb[i]) bad_y++, first_y = i / 4;
    if (bad_q)
        fprintf(stderr,
                "%s %s (%lld values): %zu bytes differ from ggml's, the first at byte %zu (block %zu): %02x, "
                "ggml %02x\n",
                format, label, n, bad_q, first_q, first_q / kiln_qformat_block_bytes(fmt), mine[first_q], q[first_q]);
    if (bad_y) {
        float want;
        memcpy(&want, yb + 4 * first_y, 4);
        fprintf(stderr, "%s %s: dequantized value %zu is %.9g, ggml's to_float %.9g\n", format, label, first_y,
                (double)y[first_y], (double)want);
    }
    free(xb), free(q), free(yb), free(x), free(y), free(mine);
    return !bad_q && !bad_y;
}

START_TEST(quantizers_match_ggml_live) {
    FILE *f = fopen(g_reference_file, "r");
    ck_assert_msg(f != NULL, "cannot open %s", g_reference_file);
    char format[16], label[64];
    long long n;
    int cases = 0, matched = 0;
    while (fscanf(f, " case %15s %lld %63s ", format, &n, label) == 3) {
        matched += replay_case(f, format, n, label);
        cases++;
    }
    ck_assert_int_eq(feof(f), 1);
    fclose(f);
    printf("quant ggml reference: %d of %d rows give ggml's bytes and to_float values\n", matched, cases);
    ck_assert_int_gt(cases, 0);
    ck_assert_int_eq(matched, cases);
}
END_TEST

START_TEST(names_sizes_and_refusals) {
    static const char *const names[KILN_QFORMAT_COUNT] = {"q8_0", "q4_0", "q4_1", "q5_0", "q5_1",
                                                          "q4_k", "q5_k", "q6_k", "q8_k"};
    static const size_t bytes[KILN_QFORMAT_COUNT] = {34, 18, 20, 22, 24, 144, 176, 210, 292};
    for (int f = 0; f < KILN_QFORMAT_COUNT; f++) {
        ck_assert_str_eq(kiln_qformat_name((kiln_qformat)f), names[f]);
        ck_assert_int_eq(kiln_qformat_from_name(names[f]), f);
        ck_assert_uint_eq(kiln_qformat_block_bytes((kiln_qformat)f), bytes[f]);
        ck_assert_uint_eq(kiln_qformat_block_values((kiln_qformat)f), f >= KILN_Q4_K ? KILN_QK_K : KILN_QBLOCK);
    }
    ck_assert_int_eq(kiln_qformat_from_name("q2_k"), -1);
    ck_assert_uint_eq(kiln_qformat_block_values(KILN_QFORMAT_COUNT), 0);
    ck_assert_uint_eq(kiln_qformat_row_bytes(KILN_Q4_0, 96), 54);
    ck_assert_uint_eq(kiln_qformat_row_bytes(KILN_Q6_K, 768), 630);
    float x[512] = {0};
    unsigned char out[1024];
    ck_assert_int_eq(kiln_quantize_row(KILN_Q8_0, x, 48, out), KILN_ERR_SHAPE);
    ck_assert_ptr_nonnull(strstr(kiln_error_message(), "48 values"));
    ck_assert_int_eq(kiln_dequantize_row(KILN_Q4_0, out, 33, x), KILN_ERR_SHAPE);
    ck_assert_int_eq(kiln_quantize_row(KILN_Q4_K, x, 288, out), KILN_ERR_SHAPE);
    ck_assert_ptr_nonnull(strstr(kiln_error_message(), "q4_k's 256-value blocks"));
    ck_assert_int_eq(kiln_dequantize_row(KILN_Q6_K, out, 32, x), KILN_ERR_SHAPE);
    ck_assert_int_eq(kiln_quantize_row((kiln_qformat)KILN_QFORMAT_COUNT, x, 32, out), KILN_ERR_ARGUMENT);
    ck_assert_int_eq(kiln_quantize_row(KILN_Q8_0, NULL, 32, out), KILN_ERR_ARGUMENT);
}
END_TEST

/* kiln_qmatrix_new takes rows of whole blocks of the format (256 values for the K formats),
 * and no Q8_K matrix. */
START_TEST(qmatrix_takes_whole_blocks_of_its_format) {
    kiln_ctx *ctx = kt_ctx();
    kiln_qmatrix *q = kiln_qmatrix_new(ctx, KILN_Q4_K, 3, 96);
    ck_assert_ptr_null(q);
    ck_assert_int_eq(kiln_error_status(), KILN_ERR_SHAPE);
    ck_assert_ptr_nonnull(strstr(kiln_error_message(), "q4_k needs rows that are a multiple of 256"));
    ck_assert_ptr_null(kiln_qmatrix_new(ctx, KILN_Q8_K, 3, 256));
    ck_assert_ptr_nonnull(strstr(kiln_error_message(), "q8_k is an activation format"));
    ck_assert_ptr_null(kiln_qmatrix_new(ctx, KILN_Q5_0, 3, 48));
    ck_assert_ptr_nonnull(strstr(kiln_error_message(), "q5_0 needs rows that are a multiple of 32"));
    /* Q6_K's 210-byte blocks: 3 x 210 = 630 bytes a row, padded to 158 words */
    q = kiln_qmatrix_new(ctx, KILN_Q6_K, 2, 768);
    ck_assert_ptr_nonnull(q);
    ck_assert_uint_eq(kiln_qmatrix_bytes(q), 2 * 158 * 4);
    kiln_qmatrix_free(q);
    q = kiln_qmatrix_new(ctx, KILN_Q5_1, 1, 96);
    ck_assert_ptr_nonnull(q);
    ck_assert_uint_eq(kiln_qmatrix_bytes(q), 72);
    kiln_qmatrix_free(q);
}
END_TEST

static void add_tests(Suite *s, TCase *tc) {
    (void)s;
    tcase_add_loop_test(tc, quantize_writes_ggml_bytes, 0, KILN_QFORMAT_COUNT);
    tcase_add_loop_test(tc, dequantize_gives_ggml_values, 0, KILN_QFORMAT_COUNT);
    tcase_add_loop_test(tc, dequantize_is_within_half_a_step, 0, KILN_Q5_1 + 1);
    tcase_add_test(tc, names_sizes_and_refusals);
    tcase_add_test(tc, qmatrix_takes_whole_blocks_of_its_format);
    if (g_reference_file) tcase_add_test(tc, quantizers_match_ggml_live);
}

int main(int argc, char **argv) {
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--ggml-reference")) g_reference_file = argv[i + 1];
    return kt_main(argc, argv, "quant_formats", add_tests, NULL, 0);
}
