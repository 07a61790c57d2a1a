/* The kernel classes of a transformer at GPT-2 sizes, each through its engine op, timed on
 * the device with kiln_timer_begin/end, and given as a percentage of the ceiling that
 * bounds it: GEMMs against the FMA ceiling of their arithmetic, the memory-bound kernels
 * against copy bandwidth.
 *
 *   GEMM       [M, 768] x [768, 3072] (GPT-2's MLP) as NN (forward), NT (input gradient)
 *              and TN (weight gradient), f32, and f16 (f16 operands and product, f32
 *              accumulation: what mixed-precision training runs). M (the tokens
 *              of a batch) is sized from the f32 ceiling so one product takes ~20 ms.
 *   softmax    causal, over scores [1, 12, 1024, 1024] (one sequence of GPT-2's attention)
 *   LayerNorm  [8192, 768] forward; backward of sum(LayerNorm(x))
 *   xent       cross-entropy of logits [256, 50257] (GPT-2's vocabulary), forward, backward
 *   AdamW      one step over 7.1M weights (one GPT-2 block), with the gradient norm
 *
 * Bytes are what each kernel must move at least (an element read or written once), so a
 * percentage of copy bandwidth says how close it comes to streaming its data once. Each
 * result is checked (a sampled GEMM against a host dot product, a softmax row, finiteness)
 * before it counts: a fast wrong answer is not a result. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"

#define GPT2_C 768
#define GPT2_F 3072
#define GPT2_V 50257

int bench_gemm_m(const bench_device *d, const bench_options *o) {
    return o->quick ? bench_gemm_rows(d, 0.0005, 16, 8192) : bench_gemm_rows(d, 0.02, 256, 8192);
}

int bench_gemm_rows(const bench_device *d, double target_s, int lo, int hi) {
    double gflops = bench_ceiling_value(bench_find(d, "fma.f32"));
    if (!isfinite(gflops)) gflops = 50.0; /* unmeasured: assume a slow device */
    double rows = target_s * gflops * 1e9 / (2.0 * GPT2_C * GPT2_F);
    int m = lo;
    while (m * 2 <= hi && m * 2 <= rows) m *= 2;
    return m;
}

/* ---- GEMM ---- */

typedef struct gemm_work {
    kiln_tensor *a, *b, *c;
    int ta, tb;
    int64_t m, n, k;      /* of the product op(a) op(b) */
    const float *ha, *hb; /* host copies of a and b (f16-rounded for f16) */
} gemm_work;

static int matmul_run(void *arg) {
    gemm_work *g = arg;
    g->c = kiln_matmul(g->a, g->b, NULL, g->ta, g->tb);
    return g->c ? 0 : -1;
}

/* 64 sampled entries of C against double-precision dot products of the same inputs. The
 * tolerance is far above f32 rounding (and above inputs rounded to f16) and far below the
 * size of an entry, so it catches a wrong product, not imprecision (the op tests do that). */
static int matmul_check(void *arg, char *err, size_t errlen) {
    gemm_work *g = arg;
    float *c = malloc((size_t)(g->m * g->n) * sizeof *c);
    if (!c) return snprintf(err, errlen, "out of host memory"), -1;
    int rc = 0;
    if (kiln_download_f32(g->c, c, g->m * g->n)) {
        snprintf(err, errlen, "reading the product: %s", kiln_error_message());
        rc = -1;
    }
    const int64_t lda = g->ta ? g->m : g->k, ldb = g->tb ? g->k : g->n;
    for (int s = 0; rc == 0 && s < 64; s++) {
        int64_t i = (int64_t)(kiln_rng_u32(5, 1, (uint64_t)s) % (uint64_t)g->m);
        int64_t j = (int64_t)(kiln_rng_u32(5, 2, (uint64_t)s) % (uint64_t)g->n);
        double ref = 0, mag = 0;
        for (int64_t p = 0; p < g->k; p++) {
            double x = g->ta ? g->ha[p * lda + i] : g->ha[i * lda + p];
            double y = g->tb ? g->hb[j * ldb + p] : g->hb[p * ldb + j];
            ref += x * y;
            mag += fabs(x * y);
        }
        /* f16 operands give an f16 product: one more rounding, half an ulp of 2^-10 */
        double rounding = g->c->dtype == KILN_F16 ? 1e-3 * fabs(ref) : 0;
        if (!(fabs(c[i * g->n + j] - ref) <= 1e-4 * mag + rounding + 1e-6)) {
            snprintf(err, errlen, "the product is wrong: C[%lld, %lld] = %g, expected %g", (long long)i,
                     (long long)j, (double)c[i * g->n + j], ref);
            rc = -1;
        }
    }
    free(c);
    return rc;
}

const char *bench_matmul_ceiling(const bench_device *d, kiln_dtype dt) {
    if (dt == KILN_F32) return "fma.f32";
    double h = bench_ceiling_value(bench_find(d, "fma.f16")), s = bench_ceiling_value(bench_find(d, "fma.f32"));
    return isfinite(h) && !(h < s) ? "fma.f16" : "fma.f32";
}

static void bench_gemm(kiln_ctx *ctx, const bench_options *o, bench_device *d, kiln_dtype dt, int layout, int m) {
    static const char *const names[] = {"nn", "nt", "tn"}, *const labels[] = {"NN", "NT", "TN"};
    const char *dn = dt == KILN_F32 ? "f32" : "f16";
    char key[48], label[64];
    snprintf(key, sizeof key, "gemm.%s.%s", dn, names[layout]);
    snprintf(label, sizeof label, "GEMM %s %s", dt == KILN_F32 ? "f32" : "f16->f32", labels[layout]);
    bench_figure *f = bench_add(d, BENCH_KERNELS, key, label, BENCH_GFLOPS);
    if (!f) return;
    /* NN: Y = X W (forward); NT: dX = dY W^T; TN: dW = X^T dY. */
    gemm_work g = {0};
    float *ha = NULL, *hb = NULL;
    switch (layout) {
    case 0: g = (gemm_work){.m = m, .n = GPT2_F, .k = GPT2_C}; break;
    case 1: g = (gemm_work){.tb = 1, .m = m, .n = GPT2_C, .k = GPT2_F}; break;
    default: g = (gemm_work){.ta = 1, .m = GPT2_C, .n = GPT2_F, .k = m}; break;
    }
    snprintf(f->shape, sizeof f->shape, "%lldx%lldx%lld", (long long)g.m, (long long)g.n, (long long)g.k);
    const int64_t shape_a[2] = {g.ta ? g.k : g.m, g.ta ? g.m : g.k}, shape_b[2] = {g.tb ? g.n : g.k, g.tb ? g.k : g.n};
    g.a = bench_uniform_tensor(ctx, dt, 2, shape_a, 1, -1, 1, &ha);
    g.b = g.a ? bench_uniform_tensor(ctx, dt, 2, shape_b, 2, -1, 1, &hb) : NULL;
    g.ha = ha;
    g.hb = hb;
    if (!g.b) {
        bench_engine_failure(f, "operands");
    } else {
        kiln_set_grad_enabled(ctx, 0);
        bench_work w = {.run = matmul_run, .check = matmul_check, .arg = &g,
                        .amount = 2.0 * (double)g.m * (double)g.n * (double)g.k};
        if (bench_time(ctx, &w, 1, o->repeat, f) == 0) bench_relate_compute(ctx, o, d, f, bench_matmul_ceiling(d, dt), 1);
    }
    kiln_tensor_free(g.a);
    kiln_tensor_free(g.b);
    free(ha), free(hb);
    bench_print_figure(stdout, f);
}

/* ---- memory-bound kernels ---- */

static kiln_tensor *uniform_tensor(kiln_ctx *ctx, int ndim, const int64_t *shape, uint64_t stream, float lo,
                                   float hi) {
    return bench_uniform_tensor(ctx, KILN_F32, ndim, shape, stream, lo, hi, NULL);
}

/* Element 0 of t must be finite (and within [lo, hi] when lo < hi). */
static int check_scalar(const kiln_tensor *t, double lo, double hi, const char *what, char *err, size_t errlen) {
    float v;
    if (kiln_read_scalar(t, &v)) return snprintf(err, errlen, "reading the %s: %s", what, kiln_error_message()), -1;
    if (!isfinite(v) || (lo < hi && (v < lo || v > hi)))
        return snprintf(err, errlen, "the %s is wrong (%g)", what, (double)v), -1;
    return 0;
}

typedef struct kernel_work {
    kiln_ctx *ctx;
    kiln_tensor *x, *w, *b, *targets; /* persistent inputs */
    kiln_tensor *leaf;                /* this step's input that takes the gradient */
    kiln_tensor *out;                 /* the timed op's output (or the loss to backprop) */
    kiln_adam *opt;
} kernel_work;

static int softmax_run(void *arg) {
    kernel_work *k = arg;
    kiln_softmax_opts so = {.scale = 0.125f /* 1/sqrt(64): GPT-2's head width */, .causal = 1};
    k->out = kiln_softmax(k->x, &so);
    return k->out ? 0 : -1;
}

/* The first query sees only the first key: its probability is exactly 1. */
static int softmax_check(void *arg, char *err, size_t errlen) {
    return check_scalar(((kernel_work *)arg)->out, 0.999999, 1.000001, "first softmax probability", err, errlen);
}

static int layernorm_fwd_run(void *arg) {
    kernel_work *k = arg;
    k->out = kiln_layernorm(k->x, k->w, k->b, 1e-5f);
    return k->out ? 0 : -1;
}

/* Row 0 of the LayerNorm output against the host's. */
static int layernorm_fwd_check(void *arg, char *err, size_t errlen) {
    kernel_work *k = arg;
    float x[GPT2_C], y[GPT2_C], w[GPT2_C], b[GPT2_C];
    if (kiln_download_f32(kiln_view_rows(k->x, 0, 1), x, GPT2_C) ||
        kiln_download_f32(kiln_view_rows(k->out, 0, 1), y, GPT2_C) || kiln_download_f32(k->w, w, GPT2_C) ||
        kiln_download_f32(k->b, b, GPT2_C))
        return snprintf(err, errlen, "reading the LayerNorm row: %s", kiln_error_message()), -1;
    double mean = 0, var = 0;
    for (int i = 0; i < GPT2_C; i++) mean += x[i];
    mean /= GPT2_C;
    for (int i = 0; i < GPT2_C; i++) var += (x[i] - mean) * (x[i] - mean);
    double rstd = 1.0 / sqrt(var / GPT2_C + 1e-5);
    for (int i = 0; i < GPT2_C; i++) {
        double ref = (x[i] - mean) * rstd * w[i] + b[i];
        if (!(fabs(y[i] - ref) <= 1e-4 * (1 + fabs(ref))))
            return snprintf(err, errlen, "the LayerNorm output is wrong (y[0, %d] = %g, expected %g)", i,
                            (double)y[i], ref),
                   -1;
    }
    return 0;
}

/* The backward pass of sum(LayerNorm(x)) with x a step tensor, as the residual stream is in a
 * model, so its gradient is the step's own. */
static int layernorm_bwd_prepare(void *arg) {
    kernel_work *k = arg;
    kiln_set_grad_enabled(k->ctx, 1);
    k->leaf = kiln_tensor_temp(k->ctx, KILN_F32, k->x->ndim, k->x->shape);
    if (!k->leaf || kiln_copy(k->leaf, k->x)) return -1;
    kiln_set_requires_grad(k->leaf, 1);
    k->out = kiln_sum(kiln_layernorm(k->leaf, k->w, k->b, 1e-5f));
    return k->out ? 0 : -1;
}

static int backward_run(void *arg) { return kiln_backward(((kernel_work *)arg)->out, 1.0f) ? -1 : 0; }

static int leaf_grad_check(void *arg, char *err, size_t errlen) {
    return check_scalar(kiln_grad(((kernel_work *)arg)->leaf), 0, 0, "input gradient", err, errlen);
}

static int xent_fwd_run(void *arg) {
    kernel_work *k = arg;
    k->out = kiln_cross_entropy(k->x, k->targets, 0.0f, -100);
    return k->out ? 0 : -1;
}

/* Logits uniform in [-2, 2): the loss is close to log(V) = 10.8. */
static int xent_check(void *arg, char *err, size_t errlen) {
    return check_scalar(((kernel_work *)arg)->out, 9.0, 12.0, "cross-entropy", err, errlen);
}

static int xent_bwd_prepare(void *arg) {
    kernel_work *k = arg;
    kiln_set_grad_enabled(k->ctx, 1);
    k->leaf = kiln_tensor_temp(k->ctx, KILN_F32, k->x->ndim, k->x->shape);
    if (!k->leaf || kiln_copy(k->leaf, k->x)) return -1;
    kiln_set_requires_grad(k->leaf, 1);
    k->out = kiln_cross_entropy(k->leaf, k->targets, 0.0f, -100);
    return k->out ? 0 : -1;
}

static int adam_run(void *arg) {
    kiln_adam_step_opts s = {.lr = 1e-4f};
    return kiln_adam_step(((kernel_work *)arg)->opt, &s) ? -1 : 0;
}

static int adam_check(void *arg, char *err, size_t errlen) {
    return check_scalar(((kernel_work *)arg)->x, 0, 0, "updated weight", err, errlen);
}

/* Times one memory-bound kernel and relates it to copy bandwidth. */
static void memory_kernel(kiln_ctx *ctx, const bench_options *o, bench_device *d, bench_figure *f,
                          kernel_work *k, bench_work w, int grad) {
    kiln_set_grad_enabled(ctx, grad);
    w.arg = k;
    if (bench_time(ctx, &w, 1, o->repeat, f) == 0) bench_relate(d, f, "copy");
    kiln_set_grad_enabled(ctx, 0);
    bench_print_figure(stdout, f);
}

static bench_figure *kernel_figure(bench_device *d, const char *key, const char *label, const char *shape) {
    bench_figure *f = bench_add(d, BENCH_KERNELS, key, label, BENCH_GBPS);
    if (f) snprintf(f->shape, sizeof f->shape, "%s", shape);
    return f;
}

static void bench_softmax(kiln_ctx *ctx, const bench_options *o, bench_device *d) {
    const int64_t t = o->quick ? 128 : 1024, shape[4] = {1, 12, t, t};
    char s[64];
    snprintf(s, sizeof s, "1x12x%lldx%lld", (long long)t, (long long)t);
    bench_figure *f = kernel_figure(d, "softmax.causal", "softmax, causal", s);
    if (!f) return;
    kernel_work k = {.ctx = ctx, .x = uniform_tensor(ctx, 4, shape, 1, -4, 4)};
    if (!k.x)
        bench_engine_failure(f, "input");
    else
        memory_kernel(ctx, o, d, f, &k,
                      (bench_work){.run = softmax_run, .check = softmax_check, .amount = 8.0 * t * t * 12}, 0);
    if (!k.x) bench_print_figure(stdout, f);
    kiln_tensor_free(k.x);
}

static void bench_layernorm(kiln_ctx *ctx, const bench_options *o, bench_device *d) {
    const int64_t rows = o->quick ? 256 : 8192, shape[2] = {rows, GPT2_C}, c = GPT2_C;
    const double n = (double)rows * GPT2_C;
    char s[64];
    snprintf(s, sizeof s, "%lldx%d", (long long)rows, GPT2_C);
    kernel_work k = {.ctx = ctx, .x = uniform_tensor(ctx, 2, shape, 2, -3, 3),
                     .w = uniform_tensor(ctx, 1, &c, 3, 0.5f, 1.5f), .b = uniform_tensor(ctx, 1, &c, 4, -0.5f, 0.5f)};
    bench_figure *f = kernel_figure(d, "layernorm.fwd", "LayerNorm forward", s);
    if (f && (!k.x || !k.w || !k.b)) {
        bench_engine_failure(f, "inputs");
        bench_print_figure(stdout, f);
    } else if (f) {
        /* reads x, writes y */
        memory_kernel(ctx, o, d, f, &k,
                      (bench_work){.run = layernorm_fwd_run, .check = layernorm_fwd_check, .amount = 8 * n}, 0);
        snprintf(s + strlen(s), sizeof s - strlen(s), " +seed");
        f = kernel_figure(d, "layernorm.bwd", "LayerNorm backward", s);
        kiln_set_requires_grad(k.w, 1);
        kiln_set_requires_grad(k.b, 1);
        /* the seed gradient dy (written), then the kernel: reads x and dy, writes dx */
        if (f)
            memory_kernel(ctx, o, d, f, &k,
                          (bench_work){.prepare = layernorm_bwd_prepare, .run = backward_run,
                                       .check = leaf_grad_check, .amount = 16 * n},
                          1);
    }
    kiln_tensor_free(k.x), kiln_tensor_free(k.w), kiln_tensor_free(k.b);
}

static void bench_xent(kiln_ctx *ctx, const bench_options *o, bench_device *d) {
    const int64_t rows = o->quick ? 8 : 256, shape[2] = {rows, GPT2_V};
    const double n = (double)rows * GPT2_V;
    char s[64];
    snprintf(s, sizeof s, "%lldx%d", (long long)rows, GPT2_V);
    kernel_work k = {.ctx = ctx, .x = uniform_tensor(ctx, 2, shape, 5, -2, 2),
                     .targets = kiln_tensor_1d(ctx, KILN_I32, rows)};
    int32_t *tg = malloc((size_t)rows * sizeof *tg);
    for (int64_t i = 0; tg && i < rows; i++) tg[i] = (int32_t)(kiln_rng_u32(13, 6, (uint64_t)i) % GPT2_V);
    int ok = k.x && k.targets && tg && !kiln_upload(k.targets, tg, (size_t)rows * sizeof *tg);
    bench_figure *f = kernel_figure(d, "xent.fwd", "cross-entropy forward", s);
    if (f && !ok) {
        bench_engine_failure(f, "inputs");
        bench_print_figure(stdout, f);
    } else if (f) {
        /* reads the logits */
        memory_kernel(ctx, o, d, f, &k, (bench_work){.run = xent_fwd_run, .check = xent_check, .amount = 4 * n}, 0);
        f = kernel_figure(d, "xent.bwd", "cross-entropy backward", s);
        /* reads the logits, writes their gradient */
        if (f)
            memory_kernel(ctx, o, d, f, &k,
                          (bench_work){.prepare = xent_bwd_prepare, .run = backward_run,
                                       .check = leaf_grad_check, .amount = 8 * n},
                          1);
    }
    free(tg);
    kiln_tensor_free(k.x), kiln_tensor_free(k.targets);
}

static void bench_adamw(kiln_ctx *ctx, const bench_options *o, bench_device *d) {
    /* one GPT-2 block's weights: 12 C^2 + 13 C = 7.09M; quick: a thirty-second */
    const int64_t shape[2] = {GPT2_C, o->quick ? 288 : 9216};
    const double n = (double)shape[0] * shape[1];
    char s[64];
    snprintf(s, sizeof s, "%.2fM weights", n * 1e-6);
    bench_figure *f = kernel_figure(d, "adamw", "AdamW step", s);
    if (!f) return;
    kernel_work k = {.ctx = ctx, .x = uniform_tensor(ctx, 2, shape, 7, -0.1f, 0.1f)};
    kiln_adam_opts ao = kiln_adam_defaults();
    ao.weight_decay = 0.1f;
    ao.decoupled = 1;
    if (k.x) kiln_set_requires_grad(k.x, 1);
    kiln_tensor *g = k.x ? uniform_tensor(ctx, 2, shape, 8, -1e-3f, 1e-3f) : NULL;
    if (!g || kiln_zero_grad(&k.x, 1) || kiln_copy(kiln_grad(k.x), g) || !(k.opt = kiln_adam_new(ctx, &k.x, 1, &ao))) {
        bench_engine_failure(f, "parameters");
        bench_print_figure(stdout, f);
    } else {
        /* the gradient norm reads g; the update reads p, g, m, v and writes p, m, v */
        memory_kernel(ctx, o, d, f, &k, (bench_work){.run = adam_run, .check = adam_check, .amount = 32 * n}, 0);
    }
    kiln_adam_free(k.opt);
    kiln_tensor_free(g);
    kiln_tensor_free(k.x);
}

void bench_kernels(kiln_ctx *ctx, const bench_options *o, bench_device *d) {
    bench_say(d, "kernels");
    bench_print_section(stdout, BENCH_KERNELS);
    const int m = bench_gemm_m(d, o);
    for (int dt = 0; dt < 2; dt++)
        for (int layout = 0; layout < 3; layout++) bench_gemm(ctx, o, d, dt ? KILN_F16 : KILN_F32, layout, m);
    bench_softmax(ctx, o, d);
    bench_layernorm(ctx, o, d);
    bench_xent(ctx, o, d);
    bench_adamw(ctx, o, d);
    kiln_set_grad_enabled(ctx, 1);
}
