/* The CPU backend's own elementary functions (cpu/cpu_vmath.h) and the activation kernels
 * built on them, against double-precision references:
 *   - cpu_expf within 1 ulp over a dense sweep of every binade it covers, and exact at the
 *     edges (0, overflow to inf, underflow to 0, NaN);
 *   - cpu_sigmoid2's two halves within 3 ulp each, without overflow or cancellation;
 *   - the GELU and SiLU kernels (forward and backward) against the same functions in
 *     double, and bit for bit against the same formulas compiled here for baseline
 *     x86-64, which also checks that the AVX-512/AVX2 clones compute the same bits;
 *   - the ReLU kernels and the non-finite inputs of all of them. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/cpu_internal.h"
#include "cpu/cpu_vmath.h"
#include "testutil.h"

#define GELU_K 0.7978845608028654f
#define GELU_C 0.044715f

/* The spacing of floats at |r| (subnormal spacing below the normal range). */
static double ulp_at(double r) {
    r = fabs(r);
    return r >= 1.1754943508222875e-38 ? ldexp(1.0, ilogb(r) - 23) : ldexp(1.0, -149);
}

/* An ulp of r, but at least 1e-37 (about the ulp of 1e-30): results below ~1e-30 come
 * through subnormal intermediates (sigmoid(-100) = 4e-44 keeps 5 significant bits), so
 * they are held to an absolute 1e-37 per unit instead. */
static double ulp_floor(double r) {
    const double u = ulp_at(r);
    return u > 1e-37 ? u : 1e-37;
}

static float from_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint32_t to_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

START_TEST(expf_within_one_ulp) {
    /* every 251st float: all exponents and many mantissa patterns of [-104, 89] */
    double worst = 0;
    float worst_x = 0;
    int64_t checked = 0;
    for (uint64_t u = 0; u < 0x100000000ull; u += 251) {
        const float x = from_bits((uint32_t)u);
        if (!(x > -104.0f && x < 88.72f)) continue;
        const double ref = exp((double)x);
        const double err = fabs((double)cpu_expf(x) - ref) / ulp_at(ref);
        if (err > worst) worst = err, worst_x = x;
        checked++;
    }
    ck_assert_int_gt(checked, 8000000);
    ck_assert_msg(worst <= 1.0, "cpu_expf: %.3f ulp at x = %.9g", worst, worst_x);
}
END_TEST

START_TEST(expf_edges) {
    ck_assert(cpu_expf(0.0f) == 1.0f);
    ck_assert(cpu_expf(-0.0f) == 1.0f);
    ck_assert(cpu_expf(1.0f) == expf(1.0f) || fabs(cpu_expf(1.0f) - exp(1.0)) <= ulp_at(exp(1.0)));
    ck_assert(isinf(cpu_expf(88.73f)) && cpu_expf(88.73f) > 0);
    ck_assert(isinf(cpu_expf(1e30f)) && isinf(cpu_expf(INFINITY)));
    ck_assert(isfinite(cpu_expf(88.72f)) && cpu_expf(88.72f) > 3.3e38f);
    /* subnormal results, then exact zeros: softmax relies on exp(-inf) == 0 */
    ck_assert(cpu_expf(-100.0f) > 0.0f && cpu_expf(-100.0f) < 1.2e-38f);
    ck_assert(cpu_expf(-103.5f) == from_bits(1)); /* e^-103.5 = 1.09e-45 rounds to 2^-149 */
    ck_assert(cpu_expf(-104.0f) == 0.0f && !signbit(cpu_expf(-104.0f)));
    ck_assert(cpu_expf(-1e30f) == 0.0f && cpu_expf(-INFINITY) == 0.0f);
    ck_assert(isnan(cpu_expf(NAN)) && isnan(cpu_expf(-NAN)));
}
END_TEST

START_TEST(sigmoid_pair_within_three_ulp) {
    double worst_s = 0, worst_c = 0;
    float at_s = 0, at_c = 0;
    for (uint64_t u = 0; u < 0x100000000ull; u += 1999) {
        const float z = from_bits((uint32_t)u);
        if (!(fabsf(z) <= 120.0f)) continue;
        const cpu_sigmoid_pair p = cpu_sigmoid2(z);
        const double s = 1.0 / (1.0 + exp(-(double)z)), c = 1.0 / (1.0 + exp((double)z));
        const double es = fabs(p.s - s) / ulp_at(s), ec = fabs(p.one_minus_s - c) / ulp_at(c);
        if (es > worst_s) worst_s = es, at_s = z;
        if (ec > worst_c) worst_c = ec, at_c = z;
    }
    ck_assert_msg(worst_s <= 3.0, "sigmoid: %.2f ulp at z = %.9g", worst_s, at_s);
    ck_assert_msg(worst_c <= 3.0, "1 - sigmoid: %.2f ulp at z = %.9g", worst_c, at_c);
    /* no overflow at the far ends, and the exact limits */
    cpu_sigmoid_pair lo = cpu_sigmoid2(-INFINITY), hi = cpu_sigmoid2(INFINITY);
    ck_assert(lo.s == 0.0f && lo.one_minus_s == 1.0f && hi.s == 1.0f && hi.one_minus_s == 0.0f);
    ck_assert(cpu_sigmoid2(-1000.0f).s == 0.0f && cpu_sigmoid2(0.0f).s == 0.5f);
    ck_assert(isnan(cpu_sigmoid2(NAN).s) && isnan(cpu_sigmoid2(NAN).one_minus_s));
}
END_TEST

/* ---- the activation kernels, called directly on host buffers ---- */

static kiln_ref ref_of(kiln_buf *b, float *p, size_t n) {
    b->ptr = p;
    b->size = n * sizeof(float);
    kiln_ref r = {.buf = b};
    return r;
}

/* y = f(x) through cpu_act_fwd; dx = 0 + dy * f'(x) through cpu_act_bwd. */
static void run_act(int kind, const float *x, const float *dy, float *y, float *dx, int64_t n) {
    kiln_buf bx, by, bdy, bdx;
    kiln_act_args a = {0};
    a.x = ref_of(&bx, (float *)x, (size_t)n);
    a.y = ref_of(&by, y, (size_t)n);
    a.n = n;
    a.kind = kind;
    ck_assert_int_eq(cpu_act_fwd(NULL, &a), KILN_OK);
    if (!dx) return;
    memset(dx, 0, (size_t)n * sizeof *dx);
    a.dy = ref_of(&bdy, (float *)dy, (size_t)n);
    a.dx = ref_of(&bdx, dx, (size_t)n);
    ck_assert_int_eq(cpu_act_bwd(NULL, &a), KILN_OK);
}

/* n inputs evenly spaced over [lo, hi]. */
static float *ramp(int64_t n, float lo, float hi) {
    float *x = malloc((size_t)n * sizeof *x);
    ck_assert(x != NULL);
    for (int64_t i = 0; i < n; i++) x[i] = lo + (hi - lo) * (float)i / (float)(n - 1);
    return x;
}

static float *filled(int64_t n, float v) {
    float *p = malloc((size_t)n * sizeof *p);
    ck_assert(p != NULL);
    for (int64_t i = 0; i < n; i++) p[i] = v;
    return p;
}

/* GELU u(x), rounded as the kernel (and PyTorch) round it, and u'(x). */
static float gelu_u(float v) { return GELU_K * (v + GELU_C * (v * v * v)); }
static float gelu_du(float v) { return GELU_K * (1.0f + 3.0f * GELU_C * v * v); }

/* The double reference of the same function, given the f32 u: GELU's f32 result depends
 * on the rounding of u (at u = -7 one ulp of u moves sigmoid(2u) by 14 ulp), which the
 * kernel shares with PyTorch; what is checked here is everything after u. */
static double sigmoid_d(double z) { return 1.0 / (1.0 + exp(-z)); }

/* An activation's value, its slope, and the size of the slope's terms, in double: the slope
 * is a sum of terms of either sign, so it is measured against their size. */
typedef struct act_reference {
    double value, slope, slope_size;
} act_reference;

static act_reference gelu_reference(float x) {
    const double v = x, u = gelu_u(x), s = sigmoid_d(2.0 * u);
    const double slope_u = 2.0 * v * s * (1.0 - s) * gelu_du(x);
    return (act_reference){.value = v * s, .slope = s + slope_u, .slope_size = fabs(s) + fabs(slope_u)};
}

static act_reference silu_reference(float x) {
    const double v = x, s = sigmoid_d(v);
    return (act_reference){.value = v * s, .slope = s * (1.0 + v * (1.0 - s)),
                           .slope_size = fabs(s) + fabs(s * v * (1.0 - s))};
}

/* The kernels of activation `kind` on an odd count of inputs over [lo, hi] (vector tails,
 * several blocks, the threaded path): forward within 4 ulp of the value, backward within 8
 * ulp of the size of the slope's terms. */
static void expect_reference(const char *name, int kind, float lo, float hi, act_reference (*reference)(float)) {
    const int64_t n = 200003;
    float *x = ramp(n, lo, hi), *dy = filled(n, 1.0f), *y = malloc(n * 4), *dx = malloc(n * 4);
    run_act(kind, x, dy, y, dx, n);
    double worst_f = 0, worst_b = 0;
    int64_t at_f = 0, at_b = 0;
    for (int64_t i = 0; i < n; i++) {
        const act_reference r = reference(x[i]);
        const double ef = fabs(y[i] - r.value) / ulp_floor(r.value);
        const double eb = fabs(dx[i] - r.slope) / ulp_floor(r.slope_size);
        if (ef > worst_f) worst_f = ef, at_f = i;
        if (eb > worst_b) worst_b = eb, at_b = i;
    }
    ck_assert_msg(worst_f <= 4.0, "%s forward: %.2f ulp at x = %.9g", name, worst_f, x[at_f]);
    ck_assert_msg(worst_b <= 8.0, "%s backward: %.2f ulp at x = %.9g", name, worst_b, x[at_b]);
    free(x), free(dy), free(y), free(dx);
}

START_TEST(gelu_matches_double_reference) { expect_reference("gelu", KILN_ACT_GELU, -12.0f, 12.0f, gelu_reference); }
END_TEST

START_TEST(silu_matches_double_reference) { expect_reference("silu", KILN_ACT_SILU, -90.0f, 90.0f, silu_reference); }
END_TEST

/* The kernels run in whichever clone the CPU picks (AVX-512, AVX2, baseline); this test
 * is compiled for baseline x86-64. Same formulas, same bits: no clone may contract into
 * FMAs or reorder. The formulas are written out again here on purpose. */
START_TEST(kernels_match_baseline_build_bit_for_bit) {
    const int64_t n = 100001;
    float *x = ramp(n, -9.0f, 9.0f), *dy = ramp(n, 2.0f, -1.0f);
    float *y = malloc(n * 4), *dx = malloc(n * 4);
    run_act(KILN_ACT_GELU, x, dy, y, dx, n);
    for (int64_t i = 0; i < n; i++) {
        const float v = x[i], u = gelu_u(v), du = gelu_du(v);
        const cpu_sigmoid_pair p = cpu_sigmoid2(2.0f * u);
        const float fy = v * p.s, fdx = 0.0f + dy[i] * (p.s + 2.0f * v * p.s * p.one_minus_s * du);
        ck_assert_msg(to_bits(y[i]) == to_bits(fy) && to_bits(dx[i]) == to_bits(fdx),
                      "gelu at x = %.9g: kernel %.9g / %.9g, baseline %.9g / %.9g", v, y[i], dx[i], fy, fdx);
    }
    run_act(KILN_ACT_SILU, x, dy, y, dx, n);
    for (int64_t i = 0; i < n; i++) {
        const cpu_sigmoid_pair p = cpu_sigmoid2(x[i]);
        const float fy = x[i] * p.s, fdx = 0.0f + dy[i] * (p.s * (1.0f + x[i] * p.one_minus_s));
        ck_assert_msg(to_bits(y[i]) == to_bits(fy) && to_bits(dx[i]) == to_bits(fdx),
                      "silu at x = %.9g: kernel %.9g / %.9g, baseline %.9g / %.9g", x[i], y[i], dx[i], fy, fdx);
    }
    free(x), free(dy), free(y), free(dx);
}
END_TEST

START_TEST(relu_kernels) {
    const float x[7] = {-2.0f, -0.0f, 0.0f, 1e-30f, 0.5f, 3.0f, -1e30f};
    const float dy[7] = {1, 1, 1, 1, 2, -1, 1};
    float y[7], dx[7];
    run_act(KILN_ACT_RELU, x, dy, y, dx, 7);
    const float relu[7] = {0, 0, 0, 1e-30f, 0.5f, 3.0f, 0}, drelu[7] = {0, 0, 0, 1, 2, -1, 0};
    for (int i = 0; i < 7; i++) ck_assert(y[i] == relu[i] && dx[i] == drelu[i]);
    run_act(KILN_ACT_RELU2, x, dy, y, dx, 7);
    const float relu2[7] = {0, 0, 0, 0, 0.25f, 9.0f, 0}, drelu2[7] = {0, 0, 0, 2e-30f, 2.0f, -6.0f, 0};
    for (int i = 0; i < 7; i++) ck_assert_msg(y[i] == relu2[i] && dx[i] == drelu2[i], "relu2 at %d", i);
    /* a non-finite upstream gradient is not dropped at the kink (dy * 0 = NaN) */
    const float inf_dy[7] = {INFINITY, INFINITY, INFINITY, INFINITY, INFINITY, INFINITY, INFINITY};
    run_act(KILN_ACT_RELU, x, inf_dy, y, dx, 7);
    ck_assert(isnan(dx[0]) && isinf(dx[5]));
}
END_TEST

START_TEST(non_finite_inputs) {
    const float x[6] = {NAN, INFINITY, -INFINITY, 1e30f, -1e30f, -20.0f};
    const float dy[6] = {1, 1, 1, 1, 1, 1};
    float y[6], dx[6];
    run_act(KILN_ACT_GELU, x, dy, y, dx, 6);
    /* as PyTorch's gelu(approximate='tanh'): values NaN, inf, NaN (-inf * 0), x, -0, -0;
     * gradients NaN wherever x^3 overflows (inf * 0), 0 far left */
    ck_assert(isnan(y[0]) && isnan(dx[0]));
    ck_assert(isinf(y[1]) && y[1] > 0 && isnan(dx[1]));
    ck_assert(isnan(y[2]) && isnan(dx[2]));
    ck_assert(y[3] == 1e30f && isnan(dx[3]));
    ck_assert(y[4] == 0.0f && isnan(dx[4]));
    ck_assert(y[5] <= 0.0f && y[5] > -1e-30f && fabsf(dx[5]) < 1e-30f);
    run_act(KILN_ACT_SILU, x, dy, y, dx, 6);
    /* as PyTorch's silu: values NaN, inf, NaN, x, -0, -4.1e-8; gradients NaN, NaN, NaN, 1,
     * -0, -3.9e-8 */
    ck_assert(isnan(y[0]) && isnan(dx[0]));
    ck_assert(isinf(y[1]) && y[1] > 0 && isnan(dx[1]));
    ck_assert(isnan(y[2]) && isnan(dx[2]));
    ck_assert(y[3] == 1e30f && dx[3] == 1.0f);
    ck_assert(y[4] == 0.0f && dx[4] == 0.0f);
    ck_assert(fabs(y[5] - -4.1223074731533416e-08) < 1e-14 && fabs(dx[5] - -3.916192170549948e-08) < 1e-14);
}
END_TEST

static void add_tests(Suite *s, TCase *tc) {
    (void)s;
    tcase_add_test(tc, expf_within_one_ulp);
    tcase_add_test(tc, expf_edges);
    tcase_add_test(tc, sigmoid_pair_within_three_ulp);
    tcase_add_test(tc, gelu_matches_double_reference);
    tcase_add_test(tc, silu_matches_double_reference);
    tcase_add_test(tc, kernels_match_baseline_build_bit_for_bit);
    tcase_add_test(tc, relu_kernels);
    tcase_add_test(tc, non_finite_inputs);
}

int main(int argc, char **argv) { return kt_main(argc, argv, "cpu_vmath", add_tests, NULL, 0); }
