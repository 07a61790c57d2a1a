/* Elementary functions for the CPU kernels, written so that the compiler vectorizes the
 * loops that call them: straight-line float and int32 arithmetic, selects instead of
 * branches, no calls into libm (whose expf/tanhf are scalar calls that took a third of a
 * small GPT training step).
 *
 * Accuracy, measured exhaustively against double-precision exp over every float input:
 *   cpu_expf: at most 0.99 ulp (relative error <= 8.2e-8 for normal results), exact at
 *             0, correct inf/0 beyond the f32 range, subnormal results rounded from the
 *             two-step scale below, NaN in -> NaN out.
 * cpu_sigmoid_pair then adds one division and one multiply (a few ulp in all).
 * tests/test_cpu_vmath.c checks these bounds on a dense sweep, and the GELU/SiLU kernels
 * against double-precision references.
 *
 * The code does not depend on FMA contraction or on -ffast-math: C11 mode compiles it
 * with -ffp-contract=off, so every build computes the same bits. */
#ifndef KILN_CPU_VMATH_H
#define KILN_CPU_VMATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

/* CPU_VECTOR_CLONES marks a function whose loop is worth wider vectors: GCC compiles it
 * for AVX-512, for AVX2 and for baseline x86-64, and the dynamic loader picks the best one
 * the CPU has (target_clones, an ifunc), so the loop runs 16, 8 or 4 floats at a time
 * (GELU: 0.8, 1.25 and 2.4 ns per element here). Every clone computes the same bits:
 * C11 mode compiles without FMA contraction, and tests/test_cpu_vmath.c compares the
 * kernels bit for bit with the same formulas built for baseline x86-64. Other compilers
 * and platforms get the baseline build only. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__GLIBC__) && \
    !defined(KILN_NO_VECTOR_CLONES)
#define CPU_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define CPU_VECTOR_CLONES
#endif

static inline float cpu_bits_to_float(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline uint32_t cpu_float_to_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* cond ? a : b, as bit operations. With a plain ?: GCC moves a computation that only one
 * arm uses into a branch, and then (under the default -ftrapping-math) may not execute it
 * unconditionally again: the loop stays scalar ("control flow in loop"). Masks keep both
 * arms computed and the loop vectorized. */
static inline float cpu_select(int cond, float a, float b) {
    const uint32_t mask = 0u - (uint32_t)(cond != 0);
    return cpu_bits_to_float((cpu_float_to_bits(a) & mask) | (cpu_float_to_bits(b) & ~mask));
}

/* e^x. Cody-Waite reduction x = n ln2 + r with |r| <= ln2/2 (ln2 split in a part with few
 * bits, so n * hi is exact, and a correction), e^r by the degree-6 minimax polynomial of
 * Cephes' expf, and the scale 2^n applied as 2^(n/2) * 2^(n - n/2) so both factors stay
 * normal floats over the whole range (subnormal results and overflow to inf come out of
 * the final multiply). */
static inline float cpu_expf(float x) {
    /* e^89 overflows and e^-104 rounds to 0: clamping there changes no result and keeps n
     * small. A NaN passes both comparisons unchanged and poisons r below. (Selects, not
     * ?:, or GCC splits the loop at the clamp: a clamped input has a constant result.) */
    x = cpu_select(x > 89.0f, 89.0f, x);
    x = cpu_select(x < -104.0f, -104.0f, x);
    /* n = round(x / ln2) without a rounding instruction (SSE2 has none): adding
     * 1.5 * 2^23 leaves the rounded integer in the low mantissa bits. The integer is read
     * from the bits and converted back, so even -ffast-math cannot fold (t - magic) into
     * an unrounded value. */
    const float magic = 12582912.0f;
    const float t = x * 1.44269504088896341f + magic;
    const int32_t n = (int32_t)(cpu_float_to_bits(t) - cpu_float_to_bits(magic));
    const float fn = (float)n;
    float r = x - fn * 0.693359375f; /* exact: 0.693359375 has 9 significant bits */
    r = r - fn * -2.12194440e-4f;   /* ln2 - 0.693359375 */
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * (r * r) + r + 1.0f;
    const int32_t n1 = n / 2, n2 = n - n1; /* n in [-150, 128]: each half in [-75, 64] */
    const float s1 = cpu_bits_to_float((uint32_t)(n1 + 127) << 23);
    const float s2 = cpu_bits_to_float((uint32_t)(n2 + 127) << 23);
    return p * s1 * s2;
}

/* sigmoid(z) = 1 / (1 + e^-z) and 1 - sigmoid(z), both accurate to a few ulp for every z:
 * the exponential is only ever taken of -|z| (no overflow), and the smaller of the two
 * values is e * a rather than 1 - a (no cancellation). */
typedef struct cpu_sigmoid_pair {
    float s, one_minus_s;
} cpu_sigmoid_pair;

static inline cpu_sigmoid_pair cpu_sigmoid2(float z) {
    const float e = cpu_expf(-fabsf(z)); /* in (0, 1] */
    const float big = 1.0f / (1.0f + e);          /* sigmoid(|z|), in [0.5, 1] */
    const float small = e * big;                   /* sigmoid(-|z|) = 1 - big */
    const int positive = z >= 0.0f;
    cpu_sigmoid_pair p = {cpu_select(positive, big, small), cpu_select(positive, small, big)};
    return p;
}

/* ---- row reductions ----
 *
 * Sums over a row accumulate in double, as the reference must, but in CPU_LANES
 * independent partial sums combined in a fixed order at the end: a single running sum is
 * a chain of dependent additions (one per 4 cycles), while independent lanes vectorize.
 * The order is fixed, so results are deterministic; they differ from a left-to-right sum
 * only by double rounding. */
#define CPU_LANES 8

/* lanes[0..CPU_LANES) combined pairwise: ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)). */
static inline double cpu_lanes_total(const double *l) {
    return ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]));
}

/* sum x[j] */
static inline double cpu_sum_f64(const float *x, int64_t n) {
    double l[CPU_LANES] = {0};
    int64_t j = 0;
    for (; j + CPU_LANES <= n; j += CPU_LANES)
        for (int k = 0; k < CPU_LANES; k++) l[k] += (double)x[j + k];
    for (int k = 0; j < n; j++, k++) l[k] += (double)x[j];
    return cpu_lanes_total(l);
}

/* sum (x[j] - c)^2, the difference taken in double */
static inline double cpu_sum_sq_dev_f64(const float *x, double c, int64_t n) {
    double l[CPU_LANES] = {0};
    int64_t j = 0;
    for (; j + CPU_LANES <= n; j += CPU_LANES)
        for (int k = 0; k < CPU_LANES; k++) {
            const double d = (double)x[j + k] - c;
            l[k] += d * d;
        }
    for (int k = 0; j < n; j++, k++) {
        const double d = (double)x[j] - c;
        l[k] += d * d;
    }
    return cpu_lanes_total(l);
}

/* sum a[j] * b[j], products in double */
static inline double cpu_dot_f64(const float *a, const float *b, int64_t n) {
    double l[CPU_LANES] = {0};
    int64_t j = 0;
    for (; j + CPU_LANES <= n; j += CPU_LANES)
        for (int k = 0; k < CPU_LANES; k++) l[k] += (double)a[j + k] * (double)b[j + k];
    for (int k = 0; j < n; j++, k++) l[k] += (double)a[j] * (double)b[j];
    return cpu_lanes_total(l);
}

/* sum a[j] * b[j] * c[j], products in double, (a b) first */
static inline double cpu_dot3_f64(const float *a, const float *b, const float *c, int64_t n) {
    double l[CPU_LANES] = {0};
    int64_t j = 0;
    for (; j + CPU_LANES <= n; j += CPU_LANES)
        for (int k = 0; k < CPU_LANES; k++) l[k] += (double)a[j + k] * (double)b[j + k] * (double)c[j + k];
    for (int k = 0; j < n; j++, k++) l[k] += (double)a[j] * (double)b[j] * (double)c[j];
    return cpu_lanes_total(l);
}

/* max x[j], ignoring NaN (like a running `if (x > m) m = x` from -inf; -inf when n == 0
 * or every value is NaN). Independent lanes again: max is exact, so their order does not
 * matter. (Here ?: is right: both arms are plain values, and GCC turns each lane into a
 * maxss without a dependency chain through one accumulator.) */
static inline float cpu_max_f32(const float *x, int64_t n) {
    float l[CPU_LANES];
    for (int k = 0; k < CPU_LANES; k++) l[k] = -INFINITY;
    int64_t j = 0;
    for (; j + CPU_LANES <= n; j += CPU_LANES)
        for (int k = 0; k < CPU_LANES; k++) l[k] = x[j + k] > l[k] ? x[j + k] : l[k];
    float m = -INFINITY;
    for (int k = 0; k < CPU_LANES; k++) m = l[k] > m ? l[k] : m;
    for (; j < n; j++) m = x[j] > m ? x[j] : m;
    return m;
}

#endif
