/* The CPU backend in f16 (backend.h, "Precision"): every kernel called with dtype f16 must
 * give exactly what its f32 code gives on the widened values, rounded once to f16 on
 * store, "+=" outputs included (load, add in f32, round). Each kernel runs twice here on
 * the same f16-exact values: in f16, on operands placed at odd offsets inside larger
 * buffers with guard values around them (as views and arena tensors are), and in f32; the
 * f16 outputs must equal the rounded f32 outputs bit for bit, inputs and guards must be
 * untouched. Also: the vector f16 <-> f32 conversions (F16C, AVX-512) against the scalar
 * ones, over every f16 and a dense sweep of f32. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/cpu_gemm.h" /* cpu_gemm_set_backoff: keep the threaded paths on */
#include "cpu/cpu_internal.h"
#include "testutil.h"

/* Per-element checks call Check only on failure (if (!ok) ck_abort_msg): Check records
 * every assertion it is given, and millions of them made these tests mostly logging. */

/* ---- conversions ---- */

static int same_or_both_nan(float a, float b) {
    uint32_t x, y;
    memcpy(&x, &a, 4), memcpy(&y, &b, 4);
    return x == y || (isnan(a) && isnan(b));
}

START_TEST(vector_conversions_match_scalar) {
    /* every f16 value, converted in runs of odd lengths so the vector loops' tails run */
    uint16_t *h = malloc(65536 * sizeof *h), *back = malloc(65536 * sizeof *back);
    float *f = malloc(65536 * sizeof *f);
    ck_assert(h && f && back);
    for (int i = 0; i < 65536; i++) h[i] = (uint16_t)i;
    for (int64_t at = 0, len = 1; at < 65536; at += len, len = len * 3 % 97 + 1) {
        int64_t n = at + len <= 65536 ? len : 65536 - at;
        kiln_f16_to_f32_n(h + at, f + at, n);
    }
    for (int i = 0; i < 65536; i++)
        if (!same_or_both_nan(f[i], kiln_f16_to_f32((uint16_t)i)))
            ck_abort_msg("f16 %04x -> %a, scalar %a", i, f[i], kiln_f16_to_f32((uint16_t)i));
    /* and back: every f16 value survives the round trip (NaN stays NaN) */
    kiln_f32_to_f16_n(f, back, 65536);
    for (int i = 0; i < 65536; i++)
        if (!(back[i] == (uint16_t)i || (isnan(f[i]) && (back[i] & 0x7c00) == 0x7c00 && (back[i] & 0x3ff))))
            ck_abort_msg("f16 %04x round trip gave %04x", i, back[i]);
    free(h), free(f), free(back);
    /* f32 -> f16 over a dense sweep of bit patterns: every exponent, rounding ties,
     * subnormal results, overflow to inf, NaN */
    enum { N = 4096 };
    float src[N];
    uint16_t got[N];
    for (uint64_t base = 0; base < (1ull << 32); base += (uint64_t)N * 977) {
        for (int i = 0; i < N; i++) {
            uint32_t bits = (uint32_t)(base + (uint64_t)i * 977);
            if (i % 7 == 0) bits = (bits & 0xffffe000u) | 0x1000u; /* exactly halfway between two f16 */
            memcpy(&src[i], &bits, 4);
        }
        kiln_f32_to_f16_n(src, got, N - (int)(base % 13)); /* odd lengths: tails */
        for (int i = 0; i < N - (int)(base % 13); i++) {
            uint16_t want = kiln_f32_to_f16(src[i]);
            if (!(got[i] == want || (isnan(src[i]) && (got[i] & 0x7c00) == 0x7c00 && (got[i] & 0x3ff))))
                ck_abort_msg("f32 %a -> f16 %04x, scalar %04x", src[i], got[i], want);
        }
    }
}
END_TEST

/* ---- kernels ---- */

static uint64_t g_rng = 4242;
/* A random f16-exact value in about [-scale, scale]. */
static float rnd16(float scale) {
    g_rng = g_rng * 6364136223846793005ULL + 1442695040888963407ULL;
    float v = scale * (float)((double)(g_rng >> 40) / (double)(1ULL << 24) * 2.0 - 1.0);
    return kiln_f16_to_f32(kiln_f32_to_f16(v));
}

enum { ROLE_IN = 0, ROLE_OUT, ROLE_INOUT };
#define MAX_OPS 10
#define GUARD 5 /* elements of guard on each side; odd, so f16 operands sit at 2-byte offsets */
#define GUARD_BITS 0x7bcdu

typedef struct operand {
    int64_t count;
    int role;
    int f32; /* always f32 (statistics, scalars, the loss): not widened */
    float center, scale; /* values in [center - scale, center + scale]; count 0: absent */
    float rel_tol;       /* f32 operands: relative tolerance (0: the same bits) */
} operand;

/* Runs a kernel on refs (one per operand) with floating dtype dt. */
typedef kiln_status (*kernel_fn)(kiln_ref *refs, kiln_dtype dt, const void *param);

typedef struct buffer {
    kiln_buf buf;
    kiln_ref ref;
} buffer;

/* The kernel in f16 (operands inside guarded buffers) and in f32, on the same values. */
static void check_kernel(const char *name, const operand *ops, int n_ops, kernel_fn run, const void *param) {
    buffer b16[MAX_OPS], b32[MAX_OPS];
    float *vals[MAX_OPS];
    kiln_ref r16[MAX_OPS], r32[MAX_OPS];
    ck_assert(n_ops <= MAX_OPS);
    for (int i = 0; i < n_ops; i++) {
        const operand *o = &ops[i];
        vals[i] = NULL, b16[i].buf.ptr = b32[i].buf.ptr = NULL;
        r16[i] = r32[i] = (kiln_ref){0};
        if (o->count == 0) continue;
        vals[i] = malloc((size_t)o->count * sizeof(float));
        for (int64_t e = 0; e < o->count; e++) vals[i][e] = kiln_f16_to_f32(kiln_f32_to_f16(o->center + rnd16(o->scale)));
        /* the f32 run: plain f32 arrays */
        b32[i].buf.size = (size_t)o->count * 4;
        b32[i].buf.ptr = malloc(b32[i].buf.size);
        memcpy(b32[i].buf.ptr, vals[i], b32[i].buf.size);
        r32[i] = (kiln_ref){.buf = &b32[i].buf};
        /* the f16 run: statistics stay f32 (still at an offset); the rest is f16 */
        const size_t es = o->f32 ? 4 : 2;
        b16[i].buf.size = (size_t)(o->count + 2 * GUARD) * es;
        b16[i].buf.ptr = malloc(b16[i].buf.size);
        uint16_t *h = b16[i].buf.ptr;
        for (size_t k = 0; k < b16[i].buf.size / 2; k++) h[k] = GUARD_BITS;
        r16[i] = (kiln_ref){.buf = &b16[i].buf, .off = GUARD * es};
        if (o->f32)
            memcpy(CPU_PTR(r16[i], float), vals[i], (size_t)o->count * 4);
        else
            for (int64_t e = 0; e < o->count; e++) CPU_PTR(r16[i], uint16_t)[e] = kiln_f32_to_f16(vals[i][e]);
    }
    ck_assert_msg(run(r16, KILN_F16, param) == KILN_OK, "%s in f16: %s", name, kiln_error_message());
    ck_assert_msg(run(r32, KILN_F32, param) == KILN_OK, "%s in f32: %s", name, kiln_error_message());
    for (int i = 0; i < n_ops; i++) {
        const operand *o = &ops[i];
        if (o->count == 0) continue;
        const float *want = b32[i].buf.ptr;
        for (int64_t e = 0; e < o->count; e++) {
            const float expect = o->role == ROLE_IN ? vals[i][e] : want[e];
            if (o->f32) {
                const float got = CPU_PTR(r16[i], float)[e];
                if (!same_or_both_nan(got, expect) && !(fabsf(got - expect) <= o->rel_tol * fabsf(expect)))
                    ck_abort_msg("%s: f32 operand %d element %lld: %.9g in the f16 run, %.9g in f32", name, i,
                                 (long long)e, got, expect);
            } else {
                const uint16_t got = CPU_PTR(r16[i], uint16_t)[e], w = kiln_f32_to_f16(expect);
                if (!(got == w || (isnan(expect) && isnan(kiln_f16_to_f32(got)))))
                    ck_abort_msg("%s: operand %d element %lld: f16 %04x (%.6g), rounded f32 result %04x (%.6g)", name,
                                 i, (long long)e, got, kiln_f16_to_f32(got), w, kiln_f16_to_f32(w));
            }
        }
        const uint16_t *h = b16[i].buf.ptr;
        const size_t halves = b16[i].buf.size / 2, guard_halves = GUARD * (o->f32 ? 2 : 1);
        for (size_t k = 0; k < guard_halves; k++)
            if (h[k] != GUARD_BITS || h[halves - 1 - k] != GUARD_BITS)
                ck_abort_msg("%s: operand %d: a guard was overwritten", name, i);
        free(vals[i]), free(b16[i].buf.ptr), free(b32[i].buf.ptr);
    }
}

#define OPS(...) ((const operand[]){__VA_ARGS__}), (int)(sizeof((const operand[]){__VA_ARGS__}) / sizeof(operand))

/* -- elementwise -- */

static kiln_status run_axpby(kiln_ref *r, kiln_dtype dt, const void *p) {
    const float beta = *(const float *)p;
    kiln_axpby_args a = {.x = r[0], .y = r[1], .num = r[2], .den = r[3], .n = 3001, .alpha = 0.75f, .beta = beta,
                         .dtype = dt};
    return cpu_axpby(NULL, &a);
}
typedef struct binary_param {
    kiln_binary_op op;
    int64_t nb; /* 41: a row of b per row of a; 1: a scalar b */
} binary_param;
static kiln_status run_binary(kiln_ref *r, kiln_dtype dt, const void *p) {
    const binary_param *bp = p;
    kiln_binary_args a = {.a = r[0], .b = r[1], .out = r[2], .n = 37 * 41, .nb = bp->nb, .op = bp->op, .dtype = dt};
    return cpu_binary(NULL, &a);
}
static kiln_status run_sum_rows(kiln_ref *r, kiln_dtype dt, const void *p) {
    (void)p;
    kiln_sum_rows_args a = {.x = r[0], .out = r[1], .rows = 67, .cols = 131, .alpha = -0.5f, .dtype = dt};
    return cpu_sum_rows(NULL, &a);
}
static kiln_status run_act(kiln_ref *r, kiln_dtype dt, const void *p) {
    kiln_act_args a = {.x = r[0], .y = r[1], .dy = r[2], .dx = r[3], .n = 5003, .kind = *(const int *)p, .dtype = dt};
    return CPU_HAS(a.y) ? cpu_act_fwd(NULL, &a) : cpu_act_bwd(NULL, &a);
}
static kiln_status run_reduce(kiln_ref *r, kiln_dtype dt, const void *p) {
    kiln_reduce_args a = {.x = r[0], .out = r[1], .n = 40009, .alpha = 0.25f, .square = *(const int *)p, .dtype = dt};
    return cpu_reduce(NULL, &a);
}
static kiln_status run_dropout_bwd(kiln_ref *r, kiln_dtype dt, const void *p) {
    (void)p;
    kiln_dropout_args a = {.dy = r[0], .dx = r[1], .n = 999, .prob = 0.3f, .seed = 7, .stream = 3, .dtype = dt};
    return cpu_dropout_bwd(NULL, &a);
}

START_TEST(elementwise_kernels) {
    static const float beta1 = 1.0f, beta0 = 0.0f;
    /* x, y (+=), num and den (f32 scalars) */
    check_kernel("axpby +=",
                 OPS({.count = 3001, .role = ROLE_IN, .scale = 1}, {.count = 3001, .role = ROLE_INOUT, .scale = 1},
                     {.count = 1, .role = ROLE_IN, .f32 = 1, .center = 0.5f, .scale = 1},
                     {.count = 1, .role = ROLE_IN, .f32 = 1, .center = 1, .scale = 1}),
                 run_axpby, &beta1);
    check_kernel("axpby =",
                 OPS({.count = 3001, .role = ROLE_IN, .scale = 1}, {.count = 3001, .role = ROLE_OUT, .scale = 1},
                     {.count = 0, .role = ROLE_IN, .f32 = 1, .scale = 1},
                     {.count = 0, .role = ROLE_IN, .f32 = 1, .scale = 1}),
                 run_axpby, &beta0);
    static const binary_param mul = {.op = KILN_BIN_MUL, .nb = 41}, sub = {.op = KILN_BIN_SUB, .nb = 41},
                              div = {.op = KILN_BIN_DIV, .nb = 41}, div_scalar = {.op = KILN_BIN_DIV, .nb = 1},
                              mul_scalar = {.op = KILN_BIN_MUL, .nb = 1};
    check_kernel("binary mul",
                 OPS({.count = 37 * 41, .role = ROLE_IN, .scale = 2}, {.count = 41, .role = ROLE_IN, .scale = 2},
                     {.count = 37 * 41, .role = ROLE_OUT, .scale = 1}),
                 run_binary, &mul);
    check_kernel("binary sub",
                 OPS({.count = 37 * 41, .role = ROLE_IN, .scale = 2}, {.count = 41, .role = ROLE_IN, .scale = 2},
                     {.count = 37 * 41, .role = ROLE_OUT, .scale = 1}),
                 run_binary, &sub);
    /* divisors in [1, 3], away from 0 */
    check_kernel("binary div",
                 OPS({.count = 37 * 41, .role = ROLE_IN, .scale = 2},
                     {.count = 41, .role = ROLE_IN, .center = 2, .scale = 1},
                     {.count = 37 * 41, .role = ROLE_OUT, .scale = 1}),
                 run_binary, &div);
    check_kernel("binary div scalar",
                 OPS({.count = 37 * 41, .role = ROLE_IN, .scale = 2}, {.count = 1, .role = ROLE_IN, .center = 2, .scale = 1},
                     {.count = 37 * 41, .role = ROLE_OUT, .scale = 1}),
                 run_binary, &div_scalar);
    check_kernel("binary mul scalar",
                 OPS({.count = 37 * 41, .role = ROLE_IN, .scale = 2}, {.count = 1, .role = ROLE_IN, .scale = 2},
                     {.count = 37 * 41, .role = ROLE_OUT, .scale = 1}),
                 run_binary, &mul_scalar);
    check_kernel("sum_rows",
                 OPS({.count = 67 * 131, .role = ROLE_IN, .scale = 1}, {.count = 131, .role = ROLE_INOUT, .scale = 4}),
                 run_sum_rows, NULL);
    static const int gelu = KILN_ACT_GELU, silu = KILN_ACT_SILU;
    check_kernel("gelu fwd",
                 OPS({.count = 5003, .role = ROLE_IN, .scale = 4}, {.count = 5003, .role = ROLE_OUT, .scale = 1},
                     {.count = 0, .role = ROLE_IN, .scale = 1}, {.count = 0, .role = ROLE_IN, .scale = 1}),
                 run_act, &gelu);
    check_kernel("silu bwd",
                 OPS({.count = 5003, .role = ROLE_IN, .scale = 4}, {.count = 0, .role = ROLE_OUT, .scale = 1},
                     {.count = 5003, .role = ROLE_IN, .scale = 1}, {.count = 5003, .role = ROLE_INOUT, .scale = 1}),
                 run_act, &silu);
    static const int sum = 0, squares = 1;
    check_kernel(
        "reduce sum",
        OPS({.count = 40009, .role = ROLE_IN, .scale = 1}, {.count = 1, .role = ROLE_OUT, .f32 = 1, .scale = 1}),
        run_reduce, &sum);
    check_kernel(
        "reduce squares +=",
        OPS({.count = 40009, .role = ROLE_IN, .scale = 1}, {.count = 1, .role = ROLE_INOUT, .f32 = 1, .scale = 1}),
        run_reduce, &squares);
    check_kernel("dropout bwd",
                 OPS({.count = 999, .role = ROLE_IN, .scale = 1}, {.count = 999, .role = ROLE_INOUT, .scale = 1}),
                 run_dropout_bwd, NULL);
}
END_TEST

/* -- rows: norms, softmax, cross-entropy, entropy -- */

static kiln_status run_layernorm(kiln_ref *r, kiln_dtype dt, const void *p) {
    (void)p;
    kiln_norm_args a = {0};
    a.x = r[0], a.weight = r[1], a.bias = r[2], a.mean = r[3], a.rstd = r[4];
    a.rows = 13, a.cols = 301, a.eps = 1e-5f, a.dtype = dt;
    if (CPU_HAS(r[5])) {
        a.y = r[5];
        return cpu_norm_fwd(NULL, &a);
    }
    a.dy = r[6], a.dx = r[7];
    a.dweight = r[1].buf ? r[8] : (kiln_ref){0};
    a.dbias = r[2].buf ? r[8] : (kiln_ref){0};
    return cpu_norm_bwd(NULL, &a);
}

static kiln_status run_rmsnorm_bwd(kiln_ref *r, kiln_dtype dt, const void *p) {
    (void)p;
    kiln_norm_args a = {0};
    a.x = r[0], a.weight = r[1], a.rstd = r[2], a.dy = r[3], a.dx = r[4], a.dweight = r[5];
    a.rows = 17, a.cols = 95, a.eps = 1e-6f, a.dtype = dt, a.rms = KILN_ABI_NORM_RMS;
    return cpu_norm_bwd(NULL, &a);
}

static kiln_status run_softmax(kiln_ref *r, kiln_dtype dt, const void *p) {
    const int aliased = *(const int *)p;
    kiln_softmax_args a = {0};
    a.batch = 2, a.heads = 3, a.tq = 7, a.tk = 9, a.scale = 0.5f, a.temperature = 1.5f, a.causal = 1, a.dtype = dt;
    if (aliased < 0) { /* forward */
        a.x = r[0], a.add = r[1], a.y = r[2];
        return cpu_softmax_fwd(NULL, &a);
    }
    /* backward; aliased: dx and dadd are one gradient (softmax(x, add = x)) */
    a.y = r[0], a.dy = r[1], a.dx = r[2], a.dadd = aliased ? r[2] : r[3];
    return cpu_softmax_bwd(NULL, &a);
}

typedef struct xent_shape {
    int backward;
    int64_t rows, vocab;
} xent_shape;

/* Targets spread over the vocabulary, every fifth row ignored. */
static kiln_status run_xent(kiln_ref *r, kiln_dtype dt, const void *p) {
    const xent_shape *x = p;
    int32_t targets[64];
    ck_assert(x->rows <= 64);
    for (int64_t i = 0; i < x->rows; i++) targets[i] = i % 5 == 1 ? -100 : (int32_t)((i * 7919 + 3) % x->vocab);
    kiln_buf tb = {.ptr = targets, .size = sizeof targets};
    kiln_xent_args a = {0};
    a.logits = r[0], a.targets = (kiln_ref){.buf = &tb}, a.lse = r[1], a.count = r[2];
    a.rows = x->rows, a.vocab = x->vocab, a.smoothing = 0.1f, a.ignore_index = -100, a.dtype = dt;
    if (x->backward) {
        a.dloss = r[3], a.dlogits = r[4];
        return cpu_xent_bwd(NULL, &a);
    }
    a.loss = r[3];
    return cpu_xent_fwd(NULL, &a);
}

static kiln_status run_entropy(kiln_ref *r, kiln_dtype dt, const void *p) {
    kiln_entropy_args a = {.p = r[0], .out = r[1], .dout = r[2], .dp = r[3], .batch = 2, .heads = 3, .tq = 5, .tk = 11,
                           .dtype = dt};
    return *(const int *)p ? cpu_entropy_bwd(NULL, &a) : cpu_entropy_fwd(NULL, &a);
}

START_TEST(row_kernels) {
    const int64_t n = 13 * 301, c = 301;
    /* x, weight, bias, mean (f32), rstd (f32), y | dy, dx (+=), dweight or dbias (+=) */
    check_kernel("layernorm fwd",
                 OPS({.count = n, .role = ROLE_IN, .center = 0.5f, .scale = 2},
                     {.count = c, .role = ROLE_IN, .scale = 1}, {.count = c, .role = ROLE_IN, .scale = 1},
                     {.count = 13, .role = ROLE_OUT, .f32 = 1, .scale = 1},
                     {.count = 13, .role = ROLE_OUT, .f32 = 1, .scale = 1}, {.count = n, .role = ROLE_OUT, .scale = 1}),
                 run_layernorm, NULL);
    check_kernel("layernorm bwd dweight",
                 OPS({.count = n, .role = ROLE_IN, .center = 0.5f, .scale = 2},
                     {.count = c, .role = ROLE_IN, .scale = 1}, {.count = 0, .role = ROLE_IN, .scale = 1},
                     {.count = 13, .role = ROLE_IN, .f32 = 1, .scale = 1},
                     {.count = 13, .role = ROLE_IN, .f32 = 1, .center = 0.5f, .scale = 1},
                     {.count = 0, .role = ROLE_OUT, .scale = 1}, {.count = n, .role = ROLE_IN, .scale = 1},
                     {.count = n, .role = ROLE_INOUT, .scale = 1}, {.count = c, .role = ROLE_INOUT, .scale = 3}),
                 run_layernorm, NULL);
    check_kernel("layernorm bwd dbias",
                 OPS({.count = n, .role = ROLE_IN, .center = 0.5f, .scale = 2},
                     {.count = 0, .role = ROLE_IN, .scale = 1}, {.count = c, .role = ROLE_IN, .scale = 1},
                     {.count = 13, .role = ROLE_IN, .f32 = 1, .scale = 1},
                     {.count = 13, .role = ROLE_IN, .f32 = 1, .center = 0.5f, .scale = 1},
                     {.count = 0, .role = ROLE_OUT, .scale = 1}, {.count = n, .role = ROLE_IN, .scale = 1},
                     {.count = n, .role = ROLE_INOUT, .scale = 1}, {.count = c, .role = ROLE_INOUT, .scale = 3}),
                 run_layernorm, NULL);
    check_kernel("rmsnorm bwd",
                 OPS({.count = 17 * 95, .role = ROLE_IN, .scale = 2}, {.count = 95, .role = ROLE_IN, .scale = 1},
                     {.count = 17, .role = ROLE_IN, .f32 = 1, .center = 0.5f, .scale = 1},
                     {.count = 17 * 95, .role = ROLE_IN, .scale = 1},
                     {.count = 17 * 95, .role = ROLE_INOUT, .scale = 1}, {.count = 95, .role = ROLE_INOUT, .scale = 1}),
                 run_rmsnorm_bwd, NULL);
    const int64_t sm = 2 * 3 * 7 * 9;
    static const int fwd = -1, separate = 0, aliased = 1;
    check_kernel("softmax fwd",
                 OPS({.count = sm, .role = ROLE_IN, .scale = 3}, {.count = sm, .role = ROLE_IN, .scale = 1},
                     {.count = sm, .role = ROLE_OUT, .scale = 1}),
                 run_softmax, &fwd);
    check_kernel("softmax bwd",
                 OPS({.count = sm, .role = ROLE_IN, .center = 0.5f, .scale = 0.5f},
                     {.count = sm, .role = ROLE_IN, .scale = 1}, {.count = sm, .role = ROLE_INOUT, .scale = 1},
                     {.count = sm, .role = ROLE_INOUT, .scale = 1}),
                 run_softmax, &separate);
    /* dx and dadd one tensor: both accumulations must land, as in f32 */
    check_kernel("softmax bwd aliased",
                 OPS({.count = sm, .role = ROLE_IN, .center = 0.5f, .scale = 0.5f},
                     {.count = sm, .role = ROLE_IN, .scale = 1}, {.count = sm, .role = ROLE_INOUT, .scale = 1},
                     {.count = 0, .role = ROLE_IN, .scale = 1}),
                 run_softmax, &aliased);
    static const int forward = 0, backward = 1;
    /* targets include ignored rows; lse, count, loss and dloss are f32 */
    static const xent_shape xf = {.rows = 9, .vocab = 201}, xb = {.backward = 1, .rows = 9, .vocab = 201};
    check_kernel(
        "xent fwd",
        OPS({.count = 9 * 201, .role = ROLE_IN, .scale = 4}, {.count = 9, .role = ROLE_OUT, .f32 = 1, .scale = 1},
            {.count = 1, .role = ROLE_OUT, .f32 = 1, .scale = 1}, {.count = 1, .role = ROLE_OUT, .f32 = 1, .scale = 1}),
        run_xent, &xf);
    check_kernel("xent bwd",
                 OPS({.count = 9 * 201, .role = ROLE_IN, .scale = 4},
                     {.count = 9, .role = ROLE_IN, .f32 = 1, .center = 5, .scale = 1},
                     {.count = 1, .role = ROLE_IN, .f32 = 1, .center = 6, .scale = 0.5f},
                     {.count = 1, .role = ROLE_IN, .f32 = 1, .center = 1, .scale = 1},
                     {.count = 9 * 201, .role = ROLE_INOUT, .scale = 1}),
                 run_xent, &xb);
    /* a vocabulary large enough that f16 logits are widened in several blocks of rows: the
     * loss then sums the blocks' totals, grouped differently from one pass (a few ulp) */
    static const xent_shape xfb = {.rows = 45, .vocab = 50001}, xbb = {.backward = 1, .rows = 45, .vocab = 50001};
    const int64_t nb = 45 * 50001;
    check_kernel("xent fwd in blocks",
                 OPS({.count = nb, .role = ROLE_IN, .scale = 4}, {.count = 45, .role = ROLE_OUT, .f32 = 1, .scale = 1},
                     {.count = 1, .role = ROLE_OUT, .f32 = 1, .scale = 1},
                     {.count = 1, .role = ROLE_OUT, .f32 = 1, .scale = 1, .rel_tol = 1e-6f}),
                 run_xent, &xfb);
    check_kernel("xent bwd in blocks",
                 OPS({.count = nb, .role = ROLE_IN, .scale = 4},
                     {.count = 45, .role = ROLE_IN, .f32 = 1, .center = 12, .scale = 1},
                     {.count = 1, .role = ROLE_IN, .f32 = 1, .center = 30, .scale = 0.5f},
                     {.count = 1, .role = ROLE_IN, .f32 = 1, .center = 1, .scale = 1},
                     {.count = nb, .role = ROLE_INOUT, .scale = 1e-4f}),
                 run_xent, &xbb);
    const int64_t en = 2 * 3 * 5 * 11;
    check_kernel("entropy fwd",
                 OPS({.count = en, .role = ROLE_IN, .center = 0.5f, .scale = 0.5f},
                     {.count = 3, .role = ROLE_OUT, .f32 = 1, .scale = 1},
                     {.count = 0, .role = ROLE_IN, .f32 = 1, .scale = 1}, {.count = 0, .role = ROLE_OUT, .scale = 1}),
                 run_entropy, &forward);
    check_kernel("entropy bwd",
                 OPS({.count = en, .role = ROLE_IN, .center = 0.5f, .scale = 0.5f},
                     {.count = 0, .role = ROLE_OUT, .f32 = 1, .scale = 1},
                     {.count = 3, .role = ROLE_IN, .f32 = 1, .scale = 1},
                     {.count = en, .role = ROLE_INOUT, .scale = 1}),
                 run_entropy, &backward);
}
END_TEST

/* -- moves: permute, copy_block, embedding; the GEMM's f16 output -- */

static kiln_status run_permute(kiln_ref *r, kiln_dtype dt, const void *p) {
    kiln_permute_args a = {.x = r[0], .y = r[1], .d0 = 3, .d1 = 5, .d2 = 7, .d3 = 65, .accumulate = *(const int *)p,
                           .dtype = dt};
    return cpu_permute(NULL, &a);
}
static kiln_status run_copy_block(kiln_ref *r, kiln_dtype dt, const void *p) {
    kiln_copy_block_args a = {.src = r[0], .dst = r[1], .outer = 4, .inner = 1029, .src_axis = 9, .dst_axis = 13,
                              .src_start = 2, .dst_start = 5, .len = 6, .accumulate = *(const int *)p, .dtype = dt};
    return cpu_copy_block(NULL, &a);
}
static kiln_status run_embed(kiln_ref *r, kiln_dtype dt, const void *p) {
    static int32_t ids[10] = {3, 0, 3, 16, 7, 3, 0, 16, 12, 3}; /* repeats: the scatter-add sums them */
    kiln_buf ib = {.ptr = ids, .size = sizeof ids};
    kiln_embed_args a = {0};
    a.ids = (kiln_ref){.buf = &ib}, a.rows = 10, a.vocab = 17, a.dim = 77, a.dtype = dt;
    if (*(const int *)p) {
        a.dout = r[0], a.dtable = r[1];
        return cpu_embed_bwd(NULL, &a);
    }
    a.table = r[0], a.out = r[1];
    return cpu_embed_fwd(NULL, &a);
}
static kiln_status run_sinusoid(kiln_ref *r, kiln_dtype dt, const void *p) {
    (void)p;
    kiln_sinusoid_args a = {.out = r[0], .positions = 37, .channels = 21, .dtype = dt};
    return cpu_sinusoid(NULL, &a);
}
/* The GEMM with C f16 (A and B f16 too, packed directly), beta != 0: C += A B^T. */
static kiln_status run_gemm(kiln_ref *r, kiln_dtype dt, const void *p) {
    (void)p;
    kiln_gemm_args g = {0};
    g.a = r[0], g.b = r[1], g.c = r[2], g.a_dtype = g.b_dtype = g.c_dtype = dt;
    g.m = 37, g.n = 29, g.k = 53, g.batch = 2, g.trans_b = 1, g.lda = 53, g.ldb = 53, g.ldc = 29;
    g.stride_a = 37 * 53, g.stride_b = 29 * 53, g.stride_c = 37 * 29, g.alpha = 1.0f, g.beta = 1.0f;
    return cpu_gemm(NULL, &g);
}

START_TEST(move_kernels) {
    static const int plain = 0, accumulate = 1;
    const int64_t pn = 3 * 5 * 7 * 65;
    check_kernel("permute",
                 OPS({.count = pn, .role = ROLE_IN, .scale = 1}, {.count = pn, .role = ROLE_OUT, .scale = 1}),
                 run_permute, &plain);
    check_kernel(
        "permute +=", OPS({.count = pn, .role = ROLE_IN, .scale = 1}, {.count = pn, .role = ROLE_INOUT, .scale = 1}),
        run_permute, &accumulate);
    check_kernel("copy_block",
                 OPS({.count = 4 * 9 * 1029, .role = ROLE_IN, .scale = 1},
                     {.count = 4 * 13 * 1029, .role = ROLE_INOUT, .scale = 1}),
                 run_copy_block, &plain);
    check_kernel("copy_block +=",
                 OPS({.count = 4 * 9 * 1029, .role = ROLE_IN, .scale = 1},
                     {.count = 4 * 13 * 1029, .role = ROLE_INOUT, .scale = 1}),
                 run_copy_block, &accumulate);
    check_kernel("embed fwd",
                 OPS({.count = 17 * 77, .role = ROLE_IN, .scale = 1}, {.count = 10 * 77, .role = ROLE_OUT, .scale = 1}),
                 run_embed, &plain);
    check_kernel(
        "embed bwd",
        OPS({.count = 10 * 77, .role = ROLE_IN, .scale = 1}, {.count = 17 * 77, .role = ROLE_INOUT, .scale = 1}),
        run_embed, &accumulate);
    check_kernel("sinusoid", OPS({.count = 37 * 21, .role = ROLE_OUT, .scale = 1}), run_sinusoid, NULL);
    check_kernel("gemm f16 C +=",
                 OPS({.count = 2 * 37 * 53, .role = ROLE_IN, .scale = 1},
                     {.count = 2 * 29 * 53, .role = ROLE_IN, .scale = 1},
                     {.count = 2 * 37 * 29, .role = ROLE_INOUT, .scale = 4}),
                 run_gemm, NULL);
}
END_TEST

START_TEST(other_dtypes_are_refused) {
    float x[4] = {0};
    kiln_buf b = {.ptr = x, .size = sizeof x};
    kiln_ref r = {.buf = &b};
    kiln_act_args act = {.x = r, .y = r, .n = 4, .kind = KILN_ACT_RELU, .dtype = KILN_I32};
    ck_assert_int_eq(cpu_act_fwd(NULL, &act), KILN_ERR_DTYPE);
    ck_assert_ptr_nonnull(strstr(kiln_error_message(), "i32"));
    kiln_copy_block_args cb = {.src = r,
                               .dst = r,
                               .outer = 1,
                               .inner = 1,
                               .src_axis = 4,
                               .dst_axis = 4,
                               .len = 2,
                               .accumulate = 1,
                               .dtype = KILN_I32}; /* i32 moves, but does not add */
    ck_assert_int_eq(cpu_copy_block(NULL, &cb), KILN_ERR_DTYPE);
    cb.accumulate = 0, cb.dst_start = 2;
    ck_assert_int_eq(cpu_copy_block(NULL, &cb), KILN_OK);
}
END_TEST

static void add_tests(Suite *s, TCase *tc) {
    (void)s;
    cpu_gemm_set_backoff(0);
    tcase_add_test(tc, vector_conversions_match_scalar);
    tcase_add_test(tc, elementwise_kernels);
    tcase_add_test(tc, row_kernels);
    tcase_add_test(tc, move_kernels);
    tcase_add_test(tc, other_dtypes_are_refused);
}

int main(int argc, char **argv) { return kt_main(argc, argv, "cpu_f16", add_tests, NULL, 0); }
