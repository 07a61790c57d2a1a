/* The f16 variant of every OpenCL kernel is its f32 variant rounded once.
 *
 * The contract (backend.h, "Precision"): with dtype f16 a kernel loads to f32, computes and
 * accumulates in f32 and rounds once on store. So run each kernel twice on the same values,
 * held in f32 buffers and in f16 buffers (values chosen exactly representable in f16; "+="
 * outputs start from such values too): the f16 result must be the f32 result rounded to
 * nearest even. Both variants come from the same source and do the same f32 arithmetic in
 * the same order, so they agree exactly but for the rare element where the two compiled
 * programs differ in an f32 last bit (a vectorized exp against a scalar one) right at an
 * f16 rounding boundary: at most 1 f16 ulp, on at most 1% of the elements. A kernel that
 * rounded an intermediate to f16 (a softmax storing exp() in y and rescaling it, a "+=" in
 * two steps) is off by an ulp on a large share of them and fails. Outputs that stay f32
 * (mean, rstd, lse, the loss, reductions) must match the f32 run to 1e-6.
 *
 * This calls the backend table directly, so it checks the kernels on their own; the op
 * tests (test_op_*) compare the f16 ops with the CPU reference. Registered under oclgrind
 * too (tests/opencl.cmake), hence the small sizes. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#ifdef KILN_HAVE_OPENCL
#include "opencl/cl_internal.h"

static kiln_ctx *g_ctx;
#define BE (g_ctx->be)
#define DEV (g_ctx->dev)
#define DT(h) ((h) ? KILN_F16 : KILN_F32)

/* ---- values ---- */

static float round16(float v) { return kiln_f16_to_f32(kiln_f32_to_f16(v)); }

/* n values shift + scale * N(0, 1), rounded to f16, from their own random stream */
static float *normal_values(int64_t n, uint64_t stream, float scale, float shift) {
    float *v = malloc((size_t)n * sizeof *v);
    for (int64_t i = 0; i < n; i++) v[i] = round16(shift + scale * kiln_rng_normal(11, stream, (uint64_t)i));
    return v;
}

/* the same values in an f32 and an f16 buffer: one per variant */
typedef struct pair {
    kiln_tensor *t[2]; /* [0] f32, [1] f16 */
    int64_t n;
} pair;

static pair pair_of(const float *v, int64_t n) {
    pair p = {.t = {kt_tensor(g_ctx, KILN_F32, 1, &n, v), kt_tensor(g_ctx, KILN_F16, 1, &n, v)}, .n = n};
    ck_assert(p.t[0] && p.t[1]);
    return p;
}

static pair pair_normal(int64_t n, uint64_t stream, float scale, float shift) {
    float *v = normal_values(n, stream, scale, shift);
    pair p = pair_of(v, n);
    free(v);
    return p;
}

static kiln_ref ref(pair p, int h) { return kiln_ref_of(p.t[h]); }

static void pair_free(pair p) { kiln_tensor_free(p.t[0]), kiln_tensor_free(p.t[1]); }

/* f32-only operands: one tensor per variant when written, one shared when read */
static kiln_tensor *f32_tensor(int64_t n, const float *v) {
    float *zeros = NULL;
    if (!v) v = zeros = calloc((size_t)n, sizeof *zeros);
    kiln_tensor *t = kt_tensor(g_ctx, KILN_F32, 1, &n, v);
    free(zeros);
    ck_assert(t);
    return t;
}

static kiln_tensor *i32_tensor(int64_t n, const int32_t *v) {
    kiln_tensor *t = kt_tensor_i32(g_ctx, 1, &n, v);
    ck_assert(t);
    return t;
}

/* ---- comparisons ---- */

/* an f16 bit pattern as an integer that counts ulps across zero (-0 == +0) */
static int ordered(uint16_t h) { return (h & 0x8000) ? -(int)(h & 0x7fff) : (int)(h & 0x7fff); }
static int is_nan16(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff); }

/* p's f16 buffer must hold its f32 buffer rounded once (see the top of the file) */
static void expect_rounded_once(pair p, const char *what) {
    float *f = malloc((size_t)p.n * sizeof *f);
    uint16_t *h = malloc((size_t)p.n * sizeof *h);
    ck_assert(kiln_download(p.t[0], f, (size_t)p.n * 4) == KILN_OK);
    ck_assert(kiln_download(p.t[1], h, (size_t)p.n * 2) == KILN_OK);
    int64_t off_by_one = 0;
    for (int64_t i = 0; i < p.n; i++) {
        uint16_t want = kiln_f32_to_f16(f[i]);
        ck_assert_msg(!is_nan16(want) && !is_nan16(h[i]), "%s[%lld]: NaN (f32 %g, f16 0x%04x)", what,
                      (long long)i, f[i], h[i]);
        int d = abs(ordered(want) - ordered(h[i]));
        ck_assert_msg(d <= 1, "%s[%lld]: f16 variant %g, f32 variant %g rounds to %g (%d ulps)", what,
                      (long long)i, kiln_f16_to_f32(h[i]), f[i], kiln_f16_to_f32(want), d);
        off_by_one += d;
    }
    ck_assert_msg(off_by_one <= p.n / 100 + 1,
                  "%s: %lld of %lld elements 1 ulp away from the f32 result rounded once: rounded twice?",
                  what, (long long)off_by_one, (long long)p.n);
    free(f), free(h);
}

/* f32 outputs of the two variants: the same f32 computation on the same values */
static void expect_same_f32(kiln_tensor *a, kiln_tensor *b, const char *what) {
    int64_t n = kiln_numel(a);
    float *x = malloc((size_t)n * sizeof *x), *y = malloc((size_t)n * sizeof *y);
    ck_assert(kiln_download(a, x, (size_t)n * 4) == KILN_OK);
    ck_assert(kiln_download(b, y, (size_t)n * 4) == KILN_OK);
    for (int64_t i = 0; i < n; i++)
        ck_assert_msg(fabsf(x[i] - y[i]) <= 1e-6f * (1.0f + fabsf(x[i])), "%s[%lld]: f32 variant %g, f16 variant %g",
                      what, (long long)i, x[i], y[i]);
    free(x), free(y);
}

#define CALL(slot, args) ck_assert_msg(BE->slot(DEV, (args)) == KILN_OK, "%s", kiln_error_message())

/* ---- the kernels ---- */

START_TEST(elementwise) {
    enum { N = 1031, NB = 37 * 3 };
    pair x = pair_normal(N, 1, 1, 0);
    float numden[2] = {3.0f, 7.0f};
    kiln_tensor *num = f32_tensor(1, numden), *den = f32_tensor(1, numden + 1);
    /* b: the whole of a, a row of NB broadcast, or one element; divisors kept from 0 */
    const int64_t nbs[3] = {N * 3, NB, 1};
    for (int op = KILN_BIN_ADD; op <= KILN_BIN_DIV; op++)
        for (int form = 0; form < 3; form++) {
            pair out = pair_normal(N * 3, 4, 1, 0); /* N * 3: divisible by NB */
            pair a = pair_normal(N * 3, 5, 1, 0), b = pair_normal(nbs[form], 6 + (uint64_t)form, 1,
                                                                  op == KILN_BIN_DIV ? 4.0f : 0.0f);
            for (int h = 0; h < 2; h++) {
                kiln_binary_args args = {.a = ref(a, h), .b = ref(b, h), .out = ref(out, h), .n = N * 3,
                                         .nb = nbs[form], .op = (kiln_binary_op)op, .dtype = DT(h)};
                CALL(binary, &args);
            }
            expect_rounded_once(out, "binary");
            pair_free(out), pair_free(a), pair_free(b);
        }
    /* axpby: overwrite, accumulate, with the device scalars, without x */
    for (int form = 0; form < 4; form++) {
        pair y = pair_normal(N, 7, 1, 0);
        for (int h = 0; h < 2; h++) {
            kiln_axpby_args args = {.x = form == 3 ? (kiln_ref){0} : ref(x, h), .y = ref(y, h), .n = N, .alpha = 0.37f,
                                    .beta = form == 0 ? 0.0f : 0.8f, .dtype = DT(h)};
            if (form >= 2) args.num = kiln_ref_of(num), args.den = kiln_ref_of(den);
            CALL(axpby, &args);
        }
        expect_rounded_once(y, "axpby");
        pair_free(y);
    }
    pair_free(x);
    kiln_tensor_free(num), kiln_tensor_free(den);
}
END_TEST

START_TEST(activations) {
    enum { N = 2053 };
    for (int kind = 0; kind < 5; kind++) {
        int k = kind == 4 ? KILN_ACT_SQRT : kind;
        pair x = k == KILN_ACT_SQRT ? pair_normal(N, 8, 1, 4) : pair_normal(N, 8, 2, 0);
        pair y = pair_normal(N, 9, 1, 0), dy = pair_normal(N, 10, 1, 0), dx = pair_normal(N, 11, 1, 0);
        for (int h = 0; h < 2; h++) {
            kiln_act_args a = {.x = ref(x, h), .y = ref(y, h), .dy = ref(dy, h), .dx = ref(dx, h), .n = N, .kind = k,
                               .dtype = DT(h)};
            CALL(act_fwd, &a);
            if (k != KILN_ACT_SQRT) CALL(act_bwd, &a);
        }
        expect_rounded_once(y, "act_fwd");
        if (k != KILN_ACT_SQRT) expect_rounded_once(dx, "act_bwd");
        pair_free(x), pair_free(y), pair_free(dy), pair_free(dx);
    }
}
END_TEST

START_TEST(dropout) {
    enum { N = 1500 };
    pair x = pair_normal(N, 12, 1, 0), y = pair_normal(N, 13, 1, 0), dx = pair_normal(N, 14, 1, 0);
    for (int h = 0; h < 2; h++) {
        kiln_dropout_args a = {.x = ref(x, h), .y = ref(y, h), .dy = ref(x, h), .dx = ref(dx, h), .n = N, .prob = 0.3f,
                               .seed = 5, .stream = 9, .dtype = DT(h)};
        CALL(dropout_fwd, &a);
        CALL(dropout_bwd, &a);
    }
    expect_rounded_once(y, "dropout_fwd");
    expect_rounded_once(dx, "dropout_bwd");
    pair_free(x), pair_free(y), pair_free(dx);
}
END_TEST

START_TEST(reductions) {
    enum { N = 3001, ROWS = 37, COLS = 45 };
    pair x = pair_normal(N, 15, 1, 0.5f);
    kiln_tensor *out[2] = {f32_tensor(2, NULL), f32_tensor(2, NULL)};
    for (int h = 0; h < 2; h++) {
        kiln_reduce_args sum = {.x = ref(x, h), .out = kiln_ref_of(out[h]), .n = N, .alpha = 0.5f, .dtype = DT(h)};
        CALL(reduce, &sum);
        kiln_reduce_args sq = {.x = ref(x, h),
                               .out = {.buf = kiln_ref_of(out[h]).buf, .off = kiln_ref_of(out[h]).off + 4}, .n = N,
                               .alpha = 1, .square = 1, .dtype = DT(h)};
        CALL(reduce, &sq);
    }
    expect_same_f32(out[0], out[1], "reduce");
    pair m = pair_normal(ROWS * COLS, 16, 1, 0), col = pair_normal(COLS, 17, 1, 0);
    for (int h = 0; h < 2; h++) {
        kiln_sum_rows_args a = {.x = ref(m, h), .out = ref(col, h), .rows = ROWS, .cols = COLS, .alpha = -0.5f,
                                .dtype = DT(h)};
        CALL(sum_rows, &a);
    }
    expect_rounded_once(col, "sum_rows");
    pair_free(x), pair_free(m), pair_free(col);
    kiln_tensor_free(out[0]), kiln_tensor_free(out[1]);
}
END_TEST

START_TEST(embedding) {
    enum { ROWS = 23, VOCAB = 11, DIM = 70 };
    int32_t ids[ROWS];
    for (int r = 0; r < ROWS; r++) ids[r] = (r * 7) % VOCAB; /* repeated ids add up */
    kiln_tensor *id = i32_tensor(ROWS, ids);
    pair table = pair_normal(VOCAB * DIM, 18, 1, 0), out = pair_normal(ROWS * DIM, 19, 1, 0);
    pair dout = pair_normal(ROWS * DIM, 20, 1, 0), dtable = pair_normal(VOCAB * DIM, 21, 1, 0);
    for (int h = 0; h < 2; h++) {
        kiln_embed_args a = {.table = ref(table, h), .ids = kiln_ref_of(id), .out = ref(out, h), .dout = ref(dout, h),
                             .dtable = ref(dtable, h), .rows = ROWS, .vocab = VOCAB, .dim = DIM, .dtype = DT(h)};
        CALL(embed_fwd, &a);
        CALL(embed_bwd, &a);
    }
    expect_rounded_once(out, "embed_fwd");
    expect_rounded_once(dtable, "embed_bwd");
    pair_free(table), pair_free(out), pair_free(dout), pair_free(dtable);
    kiln_tensor_free(id);
}
END_TEST

START_TEST(norms) {
    enum { ROWS = 9, COLS = 203 };
    for (int layer = 1; layer >= 0; layer--) {
        pair x = pair_normal(ROWS * COLS, 22, 2, 0.5f), w = pair_normal(COLS, 23, 0.5f, 1);
        pair b = pair_normal(COLS, 24, 1, 0), y = pair_normal(ROWS * COLS, 25, 1, 0);
        pair dy = pair_normal(ROWS * COLS, 26, 1, 0), dx = pair_normal(ROWS * COLS, 27, 1, 0);
        pair dw = pair_normal(COLS, 28, 1, 0), db = pair_normal(COLS, 29, 1, 0);
        kiln_tensor *mean[2] = {f32_tensor(ROWS, NULL), f32_tensor(ROWS, NULL)};
        kiln_tensor *rstd[2] = {f32_tensor(ROWS, NULL), f32_tensor(ROWS, NULL)};
        for (int h = 0; h < 2; h++) {
            kiln_norm_args a = {.x = ref(x, h), .weight = ref(w, h), .bias = layer ? ref(b, h) : (kiln_ref){0},
                                .y = ref(y, h), .mean = layer ? kiln_ref_of(mean[h]) : (kiln_ref){0},
                                .rstd = kiln_ref_of(rstd[h]), .dy = ref(dy, h), .dx = ref(dx, h), .dweight = ref(dw, h),
                                .dbias = layer ? ref(db, h) : (kiln_ref){0}, .rows = ROWS, .cols = COLS, .eps = 1e-5f,
                                .dtype = DT(h), .rms = layer ? KILN_ABI_NORM_LAYER : KILN_ABI_NORM_RMS};
            CALL(norm_fwd, &a);
            CALL(norm_bwd, &a);
        }
        const char *name = layer ? "layernorm" : "rmsnorm";
        expect_rounded_once(y, name);
        expect_rounded_once(dx, name);
        expect_rounded_once(dw, name);
        if (layer) expect_rounded_once(db, name), expect_same_f32(mean[0], mean[1], "mean");
        expect_same_f32(rstd[0], rstd[1], "rstd");
        pair_free(x), pair_free(w), pair_free(b), pair_free(y), pair_free(dy), pair_free(dx);
        pair_free(dw), pair_free(db);
        for (int h = 0; h < 2; h++) kiln_tensor_free(mean[h]), kiln_tensor_free(rstd[h]);
    }
}
END_TEST

START_TEST(softmax) {
    enum { B = 2, H = 3, TQ = 5, TK = 37, N = B * H * TQ * TK };
    int32_t lengths[B] = {37, 20};
    kiln_tensor *len = i32_tensor(B, lengths);
    for (int form = 0; form < 2; form++) {
        pair x = pair_normal(N, 30, 3, 0), add = pair_normal(N, 31, 1, 0), y = pair_normal(N, 32, 1, 0);
        pair dy = pair_normal(N, 33, 1, 0), dx = pair_normal(N, 34, 1, 0), dadd = pair_normal(N, 35, 1, 0);
        kiln_softmax_args a[2];
        for (int h = 0; h < 2; h++) {
            a[h] = (kiln_softmax_args){.x = ref(x, h), .add = form ? ref(add, h) : (kiln_ref){0},
                                       .lengths = form ? kiln_ref_of(len) : (kiln_ref){0}, .y = ref(y, h),
                                       .dy = ref(dy, h), .dx = ref(dx, h), .dadd = form ? ref(dadd, h) : (kiln_ref){0},
                                       .batch = B, .heads = H, .tq = TQ, .tk = TK, .scale = form ? 0.125f : 1.0f,
                                       .temperature = form ? 0.7f : 1.0f, .causal = !form, .dtype = DT(h)};
            CALL(softmax_fwd, &a[h]);
        }
        expect_rounded_once(y, "softmax_fwd");
        /* the backward of both variants reads the same y: the f16 one's */
        float *yv = malloc(N * sizeof *yv);
        ck_assert(kiln_download_f32(y.t[1], yv, N) == KILN_OK);
        pair y16 = pair_of(yv, N);
        free(yv);
        for (int h = 0; h < 2; h++) {
            a[h].y = ref(y16, h);
            CALL(softmax_bwd, &a[h]);
        }
        pair_free(y16);
        expect_rounded_once(dx, "softmax_bwd dx");
        if (form) expect_rounded_once(dadd, "softmax_bwd dadd");
        pair_free(x), pair_free(add), pair_free(y), pair_free(dy), pair_free(dx), pair_free(dadd);
    }
    kiln_tensor_free(len);
}
END_TEST

/* The fused attention with GQA (4 query heads on 2 kv heads), lengths and training dropout
 * in one form, causal with a query block shorter than the keys in the other; the backward of
 * both variants reads the same y and lse (the f16 run's y, the f32 run's lse). */
START_TEST(attention) {
    enum { B = 2, H = 4, KVH = 2, TQ = 7, TK = 13, D = 12, NQ = B * TQ * H * D, NK = B * TK * KVH * D };
    int32_t lengths[B] = {13, 6};
    kiln_tensor *len = i32_tensor(B, lengths);
    for (int form = 0; form < 2; form++) {
        pair q = pair_normal(NQ, 40, 1, 0), k = pair_normal(NK, 41, 1, 0), v = pair_normal(NK, 42, 1, 0);
        pair y = pair_normal(NQ, 43, 1, 0), dy = pair_normal(NQ, 44, 1, 0), dq = pair_normal(NQ, 45, 1, 0);
        pair dk = pair_normal(NK, 46, 1, 0), dv = pair_normal(NK, 47, 1, 0);
        kiln_tensor *lse[2] = {f32_tensor(B * H * TQ, NULL), f32_tensor(B * H * TQ, NULL)};
        kiln_tensor *delta[2] = {f32_tensor(B * H * TQ, NULL), f32_tensor(B * H * TQ, NULL)};
        kiln_attention_args a[2];
        for (int h = 0; h < 2; h++) {
            a[h] = (kiln_attention_args){
                .q = ref(q, h), .k = ref(k, h), .v = ref(v, h), .lengths = form ? kiln_ref_of(len) : (kiln_ref){0},
                .y = ref(y, h), .lse = kiln_ref_of(lse[h]), .dy = ref(dy, h), .delta = kiln_ref_of(delta[h]),
                .dq = ref(dq, h), .dk = ref(dk, h), .dv = ref(dv, h), .batch = B, .heads = H, .kv_heads = KVH,
                .tq = TQ, .tk = TK, .head_dim = D, .scale = 0.3f, .causal = !form, .dropout = form ? 0.25f : 0.0f,
                .seed = 3, .stream = 8, .dtype = DT(h)};
            CALL(attention_fwd, &a[h]);
        }
        expect_rounded_once(y, "attention_fwd y");
        expect_same_f32(lse[0], lse[1], "attention_fwd lse");
        float *yv = malloc(NQ * sizeof *yv);
        ck_assert(kiln_download_f32(y.t[1], yv, NQ) == KILN_OK);
        pair y16 = pair_of(yv, NQ);
        free(yv);
        for (int h = 0; h < 2; h++) {
            a[h].y = ref(y16, h);
            a[h].lse = kiln_ref_of(lse[0]);
            CALL(attention_bwd_dq, &a[h]);
            CALL(attention_bwd_dkv, &a[h]);
        }
        expect_same_f32(delta[0], delta[1], "attention_bwd_dq delta");
        expect_rounded_once(dq, "attention_bwd_dq dq");
        expect_rounded_once(dk, "attention_bwd_dkv dk");
        expect_rounded_once(dv, "attention_bwd_dkv dv");
        pair_free(q), pair_free(k), pair_free(v), pair_free(y), pair_free(y16), pair_free(dy);
        pair_free(dq), pair_free(dk), pair_free(dv);
        for (int h = 0; h < 2; h++) kiln_tensor_free(lse[h]), kiln_tensor_free(delta[h]);
    }
    kiln_tensor_free(len);
}
END_TEST

START_TEST(entropy) {
    enum { B = 2, H = 3, TQ = 4, TK = 29, N = B * H * TQ * TK };
    float *p = malloc(N * sizeof *p);
    for (int i = 0; i < N; i++) p[i] = i % 7 == 0 ? 0.0f : round16(kiln_rng_uniform(11, 36, (uint64_t)i));
    pair pp = pair_of(p, N), dp = pair_normal(N, 37, 1, 0);
    float douts[H] = {0.5f, -1.0f, 2.0f};
    kiln_tensor *dout = f32_tensor(H, douts), *out[2] = {f32_tensor(H, NULL), f32_tensor(H, NULL)};
    for (int h = 0; h < 2; h++) {
        kiln_entropy_args a = {.p = ref(pp, h), .out = kiln_ref_of(out[h]), .dout = kiln_ref_of(dout), .dp = ref(dp, h),
                               .batch = B, .heads = H, .tq = TQ, .tk = TK, .dtype = DT(h)};
        CALL(entropy_fwd, &a);
        CALL(entropy_bwd, &a);
    }
    expect_same_f32(out[0], out[1], "entropy_fwd");
    expect_rounded_once(dp, "entropy_bwd");
    pair_free(pp), pair_free(dp);
    kiln_tensor_free(dout), kiln_tensor_free(out[0]), kiln_tensor_free(out[1]);
    free(p);
}
END_TEST

START_TEST(cross_entropy) {
    enum { ROWS = 7, VOCAB = 301 };
    int32_t t[ROWS] = {0, 300, -100, 17, 150, -100, 42};
    kiln_tensor *targets = i32_tensor(ROWS, t);
    pair logits = pair_normal(ROWS * VOCAB, 38, 3, 0), dlogits = pair_normal(ROWS * VOCAB, 39, 1, 0);
    float one = 0.75f;
    kiln_tensor *dloss = f32_tensor(1, &one), *loss[2], *count[2], *lse[2];
    for (int h = 0; h < 2; h++) loss[h] = f32_tensor(1, NULL), count[h] = f32_tensor(1, NULL), lse[h] = f32_tensor(ROWS, NULL);
    for (int h = 0; h < 2; h++) {
        kiln_xent_args a = {.logits = ref(logits, h), .targets = kiln_ref_of(targets), .loss = kiln_ref_of(loss[h]),
                            .count = kiln_ref_of(count[h]), .lse = kiln_ref_of(lse[h]), .dloss = kiln_ref_of(dloss),
                            .dlogits = ref(dlogits, h), .rows = ROWS, .vocab = VOCAB, .smoothing = 0.1f,
                            .ignore_index = -100, .dtype = DT(h)};
        CALL(xent_fwd, &a);
        CALL(xent_bwd, &a);
    }
    expect_same_f32(loss[0], loss[1], "xent loss");
    expect_same_f32(count[0], count[1], "xent count");
    expect_same_f32(lse[0], lse[1], "xent lse");
    expect_rounded_once(dlogits, "xent_bwd");
    pair_free(logits), pair_free(dlogits);
    kiln_tensor_free(targets), kiln_tensor_free(dloss);
    for (int h = 0; h < 2; h++) kiln_tensor_free(loss[h]), kiln_tensor_free(count[h]), kiln_tensor_free(lse[h]);
}
END_TEST

/* permute and copy_block: moves keep every bit, accumulations round once */
START_TEST(copies) {
    enum { D0 = 2, D1 = 3, D2 = 5, D3 = 7, N = D0 * D1 * D2 * D3 };
    for (int acc = 0; acc < 2; acc++) {
        pair x = pair_normal(N, 40, 1, 0), y = pair_normal(N, 41, 1, 0);
        for (int h = 0; h < 2; h++) {
            kiln_permute_args a = {.x = ref(x, h), .y = ref(y, h), .d0 = D0, .d1 = D1, .d2 = D2, .d3 = D3,
                                   .accumulate = acc, .dtype = DT(h)};
            CALL(permute, &a);
        }
        expect_rounded_once(y, "permute");
        pair_free(x), pair_free(y);
    }
    enum { OUTER = 3, INNER = 9, SRC = 7, DST = 11, LEN = 4 };
    for (int acc = 0; acc < 2; acc++) {
        pair src = pair_normal(OUTER * SRC * INNER, 42, 1, 0), dst = pair_normal(OUTER * DST * INNER, 43, 1, 0);
        for (int h = 0; h < 2; h++) {
            kiln_copy_block_args a = {.src = ref(src, h), .dst = ref(dst, h), .outer = OUTER, .inner = INNER,
                                      .src_axis = SRC, .dst_axis = DST, .src_start = 2, .dst_start = 5, .len = LEN,
                                      .accumulate = acc, .dtype = DT(h)};
            CALL(copy_block, &a);
        }
        expect_rounded_once(dst, "copy_block");
        pair_free(src), pair_free(dst);
    }
    /* an f16 move keeps NaN payloads and infinities bit for bit */
    uint16_t odd[4] = {0x7e01, 0xfc00, 0x0001, 0x8000}, back[4];
    int64_t four = 4;
    kiln_tensor *s = kiln_tensor_new(g_ctx, KILN_F16, 1, &four), *d = kiln_tensor_new(g_ctx, KILN_F16, 1, &four);
    ck_assert(kiln_upload(s, odd, sizeof odd) == KILN_OK);
    kiln_permute_args a = {.x = kiln_ref_of(s), .y = kiln_ref_of(d), .d0 = 1, .d1 = 1, .d2 = 1, .d3 = 4,
                           .dtype = KILN_F16};
    CALL(permute, &a);
    ck_assert(kiln_download(d, back, sizeof back) == KILN_OK);
    ck_assert_msg(!memcmp(odd, back, sizeof odd), "permute changed f16 bits: %04x %04x %04x %04x", back[0],
                  back[1], back[2], back[3]);
    kiln_tensor_free(s), kiln_tensor_free(d);
}
END_TEST

START_TEST(sinusoid) {
    enum { T = 50, C = 33 };
    pair out = pair_normal(T * C, 44, 1, 0);
    for (int h = 0; h < 2; h++) {
        kiln_sinusoid_args a = {.out = ref(out, h), .positions = T, .channels = C, .dtype = DT(h)};
        CALL(sinusoid, &a);
    }
    expect_rounded_once(out, "sinusoid");
    pair_free(out);
}
END_TEST

/* f16 A, B and C (c += A B: the output is read too) through every GEMM variant */
START_TEST(gemm_all_f16) {
    enum { M = 37, N = 45, K = 29 };
    static const char *const variants[] = {"direct", "cpu", "tiled"};
    cl_dev *d = DEV;
    const char *saved = d->gemm_force;
    for (int v = 0; v < 3; v++) {
        d->gemm_force = variants[v];
        pair a = pair_normal(M * K, 45, 1, 0), b = pair_normal(K * N, 46, 1, 0), c = pair_normal(M * N, 47, 1, 0);
        for (int h = 0; h < 2; h++) {
            kiln_gemm_args g = {.a = ref(a, h), .b = ref(b, h), .c = ref(c, h), .a_dtype = DT(h), .b_dtype = DT(h),
                                .c_dtype = DT(h), .m = M, .n = N, .k = K, .batch = 1, .trans_b = 1, .lda = K, .ldb = K,
                                .ldc = N, .alpha = 0.5f, .beta = 1.0f};
            CALL(gemm, &g);
        }
        expect_rounded_once(c, variants[v]);
        pair_free(a), pair_free(b), pair_free(c);
    }
    d->gemm_force = saved;
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, elementwise);
    tcase_add_test(tc, activations);
    tcase_add_test(tc, dropout);
    tcase_add_test(tc, reductions);
    tcase_add_test(tc, embedding);
    tcase_add_test(tc, norms);
    tcase_add_test(tc, softmax);
    tcase_add_test(tc, attention);
    tcase_add_test(tc, entropy);
    tcase_add_test(tc, cross_entropy);
    tcase_add_test(tc, copies);
    tcase_add_test(tc, sinusoid);
    tcase_add_test(tc, gemm_all_f16);
}

int main(void) { return kt_run_tests_on("opencl", &g_ctx, "opencl_kernels_f16", "kernels", add_tests); }

#else
int main(void) { return 77; } /* built without OpenCL */
#endif
