/* A GPU backend's GEMM kernel slot against the CPU's (--backend vulkan or opencl), called
 * directly through the backend table so that everything the matmul op never asks for is
 * covered too: alpha, beta (and beta == 0 ignoring a NaN C), f16 inputs and output, every
 * transpose, batches with a shared operand (stride 0), operands at odd element offsets,
 * padded leading dimensions (NaN in the padding of A and B: no kernel may read it; C's
 * padding must come back untouched), and shapes on both sides of each kernel's tiles.
 *
 * Every case runs once with each variant the backend can be forced to (KILN_VK_GEMM, read
 * at each product; KILN_CL_GEMM, read when a context opens; ignored where that variant
 * does not apply), so the kernels a device class does not pick by default stay checked on
 * lavapipe and PoCL too. Each backend has its own cases, chosen for its kernels' tiles and
 * packing paths. In Vulkan's KILN_VK_MIN_LIMITS mode, f16 is refused everywhere
 * (test_vulkan_f16 checks that): the f16 cases are skipped there. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "testutil.h"

/* Where an operand lies in its buffer. */
typedef struct placement {
    int64_t offset; /* its first element (odd: misaligned) */
    int64_t pad;    /* its leading dimension exceeds its stored rows' length by this much */
} placement;

typedef struct gemm_case {
    const char *name;
    int64_t m, n, k, batch;
    int trans_a, trans_b;
    kiln_dtype a_dtype, b_dtype, c_dtype;
    float alpha, beta;
    int bias;
    int shared_a, shared_b; /* stride 0: one matrix for the whole batch */
    placement a, b, c;
} gemm_case; /* a dtype left out is f32 (KILN_F32 is 0) */

/* Vulkan: sizes on both sides of the switch between the tiled kernel and the CPU-device
 * ones (and, in KILN_VK_MIN_LIMITS mode, the fallbacks) */
static const gemm_case vulkan_cases[] = {
    {.name = "tiny_nn", .m = 7, .n = 9, .k = 5, .batch = 1, .alpha = 1.0f, .beta = 0.0f},
    {.name = "tiny_tt_alpha_beta", .m = 7, .n = 9, .k = 5, .batch = 1, .trans_a = 1, .trans_b = 1, .alpha = 0.75f,
     .beta = -1.5f, .bias = 1},
    {.name = "tiny_nt_bias", .m = 13, .n = 1, .k = 17, .batch = 1, .trans_b = 1, .alpha = 1.0f, .beta = 0.0f,
     .bias = 1},
    {.name = "k1", .m = 31, .n = 29, .k = 1, .batch = 1, .trans_a = 1, .alpha = 1.0f, .beta = 1.0f},
    {.name = "m1", .m = 1, .n = 300, .k = 257, .batch = 1, .alpha = 1.0f, .beta = 0.0f, .bias = 1},
    {.name = "odd_nn", .m = 67, .n = 45, .k = 131, .batch = 1, .alpha = 1.0f, .beta = 0.0f, .bias = 1},
    {.name = "odd_nt", .m = 67, .n = 45, .k = 131, .batch = 1, .trans_b = 1, .alpha = -0.5f, .beta = 0.25f},
    {.name = "odd_tn", .m = 45, .n = 67, .k = 131, .batch = 1, .trans_a = 1, .alpha = 1.0f, .beta = 1.0f, .bias = 1},
    {.name = "odd_tt", .m = 45, .n = 67, .k = 131, .batch = 1, .trans_a = 1, .trans_b = 1, .alpha = 2.0f, .beta = 0.0f},
    {.name = "f16_both", .m = 70, .n = 33, .k = 150, .batch = 1, .trans_b = 1, .a_dtype = KILN_F16, .b_dtype = KILN_F16,
     .alpha = 1.0f, .beta = 0.0f, .bias = 1},
    {.name = "f16_a_odd_offset", .m = 37, .n = 41, .k = 190, .batch = 1, .trans_a = 1, .a_dtype = KILN_F16,
     .alpha = 1.0f, .beta = -1.0f, .a = {.offset = 1}},
    {.name = "f32_odd_offset", .m = 37, .n = 41, .k = 190, .batch = 1, .alpha = 1.0f, .beta = 0.0f, .a = {.offset = 3}},
    {.name = "batched", .m = 33, .n = 29, .k = 65, .batch = 4, .alpha = 1.0f, .beta = 0.0f, .bias = 1},
    {.name = "batched_shared_b", .m = 33, .n = 29, .k = 300, .batch = 3, .trans_b = 1, .alpha = 1.0f, .beta = 0.5f,
     .shared_b = 1},
    {.name = "batched_shared_a", .m = 20, .n = 50, .k = 300, .batch = 3, .trans_a = 1, .a_dtype = KILN_F16,
     .alpha = 1.0f, .beta = 0.0f, .bias = 1, .shared_a = 1},
    {.name = "square_256", .m = 256, .n = 256, .k = 256, .batch = 1, .alpha = 1.0f, .beta = 0.0f},
    /* several blocks of every CPU-device kernel in both directions, a partial last block,
     * and a k that leaves a partial texel and a partial unrolled iteration in both shapes
     * of gemm_shuffle.comp (83 steps of 4 k: 3 and 2 per iteration) */
    {.name = "blocks_tt_batched", .m = 100, .n = 150, .k = 329, .batch = 2, .trans_a = 1, .trans_b = 1, .alpha = 1.0f,
     .beta = 0.5f, .bias = 1},
    /* leading dimensions and offsets in whole texels (16 bytes): the CPU-device kernels pack
     * these through texel fetches (gemm_pack_texel.comp), with partial texels at the ends
     * of rows (k % 4) and of columns (rows % 4) */
    {.name = "texel_nn_pad", .m = 70, .n = 37, .k = 101, .batch = 2, .alpha = 1.0f, .beta = 0.0f, .bias = 1,
     .a = {.pad = 3}, .b = {.pad = 3}},
    {.name = "texel_tt_pad", .m = 37, .n = 70, .k = 101, .batch = 1, .trans_a = 1, .trans_b = 1, .alpha = 0.5f,
     .beta = 1.0f, .a = {.pad = 3}, .b = {.pad = 3}},
    {.name = "texel_nt_shared_b", .m = 64, .n = 96, .k = 128, .batch = 3, .trans_b = 1, .alpha = 1.0f, .beta = 0.0f,
     .bias = 1, .shared_b = 1},
    {.name = "texel_tn_offset", .m = 44, .n = 40, .k = 48, .batch = 1, .trans_a = 1, .alpha = 1.0f, .beta = 0.0f,
     .a = {.offset = 4}},
    {.name = "aligned_nt_batched", .m = 70, .n = 100, .k = 64, .batch = 3, .trans_b = 1, .alpha = 1.0f, .beta = 0.5f,
     .bias = 1, .a = {.offset = 4, .pad = 4}, .b = {.pad = 4}},
    /* N a multiple of 64 and C in whole vec4s: gemm_shuffle.comp stores rows as vec4s */
    {.name = "vec4_c_beta_bias", .m = 70, .n = 128, .k = 40, .batch = 2, .alpha = 0.5f, .beta = -1.0f, .bias = 1},
    {.name = "vec4_c_tn", .m = 33, .n = 192, .k = 72, .batch = 1, .trans_a = 1, .alpha = 1.0f, .beta = 0.0f},
    /* f16 operands in whole texels of four halves: packed through RGBA16F texel views,
     * row-major and transposing, with gaps between the rows */
    {.name = "f16_texel_nn_pad", .m = 64, .n = 40, .k = 96, .batch = 2, .a_dtype = KILN_F16, .b_dtype = KILN_F16,
     .alpha = 1.0f, .beta = 0.5f, .bias = 1, .a = {.pad = 4}, .b = {.pad = 4}},
    {.name = "f16_texel_tt", .m = 40, .n = 72, .k = 100, .batch = 1, .trans_a = 1, .trans_b = 1, .a_dtype = KILN_F16,
     .b_dtype = KILN_F16, .alpha = 1.0f, .beta = 0.0f},
};

/* OpenCL: odd shapes that are not multiples of any tile, every placement on A, B and C */
static const gemm_case opencl_cases[] = {
    {.name = "1x1x1", .m = 1, .n = 1, .k = 1, .batch = 1, .alpha = 1},
    {.name = "nn_odd", .m = 7, .n = 5, .k = 3, .batch = 1, .alpha = 1, .bias = 1},
    {.name = "nt_odd", .m = 13, .n = 33, .k = 17, .batch = 1, .trans_b = 1, .alpha = 1, .a = {.offset = 1},
     .b = {.offset = 1}, .c = {.offset = 1}},
    {.name = "tn_odd", .m = 29, .n = 19, .k = 23, .batch = 1, .trans_a = 1, .alpha = 1, .bias = 1,
     .a = {.offset = 3, .pad = 2}, .b = {.offset = 3, .pad = 2}, .c = {.offset = 3, .pad = 2}},
    {.name = "tt_odd", .m = 17, .n = 45, .k = 9, .batch = 1, .trans_a = 1, .trans_b = 1, .alpha = 1},
    {.name = "tile_edges", .m = 65, .n = 67, .k = 31, .batch = 1, .alpha = 1, .bias = 1},
    {.name = "exact_tiles", .m = 24, .n = 64, .k = 16, .batch = 1, .trans_b = 1, .alpha = 1},
    {.name = "long_k", .m = 5, .n = 7, .k = 301, .batch = 1, .trans_a = 1, .alpha = 1},
    {.name = "alpha_beta_bias", .m = 19, .n = 21, .k = 11, .batch = 1, .alpha = -0.75f, .beta = 0.5f, .bias = 1,
     .a = {.offset = 1, .pad = 3}, .b = {.offset = 1, .pad = 3}, .c = {.offset = 1, .pad = 3}},
    {.name = "accumulate", .m = 9, .n = 40, .k = 15, .batch = 1, .trans_a = 1, .trans_b = 1, .alpha = 1, .beta = 1,
     .a = {.pad = 1}, .b = {.pad = 1}, .c = {.pad = 1}},
    {.name = "k_zero", .m = 6, .n = 5, .k = 0, .batch = 1, .alpha = 1, .beta = 0.25f, .bias = 1},
    {.name = "batched", .m = 11, .n = 13, .k = 7, .batch = 3, .alpha = 1, .bias = 1},
    {.name = "batched_tn_beta", .m = 6, .n = 9, .k = 10, .batch = 4, .trans_a = 1, .alpha = 2, .beta = -1,
     .a = {.offset = 2, .pad = 1}, .b = {.offset = 2, .pad = 1}, .c = {.offset = 2, .pad = 1}},
    {.name = "shared_b", .m = 10, .n = 12, .k = 9, .batch = 3, .trans_b = 1, .alpha = 1, .bias = 1, .shared_b = 1},
    {.name = "shared_a", .m = 10, .n = 12, .k = 9, .batch = 3, .trans_a = 1, .alpha = 1, .shared_a = 1,
     .a = {.offset = 1}, .b = {.offset = 1}, .c = {.offset = 1}},
    {.name = "f16_inputs", .m = 21, .n = 19, .k = 13, .batch = 1, .trans_b = 1, .a_dtype = KILN_F16,
     .b_dtype = KILN_F16, .alpha = 1, .bias = 1, .a = {.offset = 1}, .b = {.offset = 1}, .c = {.offset = 1}},
    {.name = "f16_a_batched", .m = 7, .n = 15, .k = 33, .batch = 2, .trans_a = 1, .a_dtype = KILN_F16, .alpha = 0.5f,
     .beta = 1, .shared_b = 1, .a = {.offset = 3, .pad = 1}, .b = {.offset = 3, .pad = 1},
     .c = {.offset = 3, .pad = 1}},
    {.name = "f16_b_tt", .m = 18, .n = 5, .k = 22, .batch = 1, .trans_a = 1, .trans_b = 1, .b_dtype = KILN_F16,
     .alpha = 1},
    /* whole packing blocks of f16 (the converting fast path), both source layouts, at odd
     * element offsets (vector loads of halves need only 2-byte alignment) */
    {.name = "f16_blocks_nt", .m = 40, .n = 70, .k = 50, .batch = 1, .trans_b = 1, .a_dtype = KILN_F16,
     .b_dtype = KILN_F16, .alpha = 1, .a = {.offset = 1}, .b = {.offset = 1}, .c = {.offset = 1}},
    {.name = "f16_blocks_tn", .m = 40, .n = 70, .k = 50, .batch = 2, .trans_a = 1, .a_dtype = KILN_F16,
     .b_dtype = KILN_F16, .alpha = 1, .bias = 1, .a = {.pad = 3}, .b = {.pad = 3}, .c = {.pad = 3}},
    /* f16 output: the CPU has none, so the reference is its f32 result rounded to f16 */
    {.name = "f16_output", .m = 23, .n = 17, .k = 12, .batch = 2, .trans_b = 1, .a_dtype = KILN_F16,
     .c_dtype = KILN_F16, .alpha = 1, .bias = 1, .a = {.offset = 1, .pad = 1}, .b = {.offset = 1, .pad = 1},
     .c = {.offset = 1, .pad = 1}},
};

/* One backend's cases and the variants its GEMM can be forced to. */
typedef struct gemm_suite {
    const char *backend;
    const gemm_case *cases;
    int n_cases;
    const char *variant_env;
    const char *variants[5]; /* "" lets the backend choose */
    int n_variants;
    int variant_read_at_open; /* a context must open after variant_env is set */
    uint64_t seed;            /* of the operands' values */
    int64_t batch_gap;        /* elements between the matrices of a batch */
} gemm_suite;

static const gemm_suite g_suites[] = {
    {.backend = "vulkan",
     .cases = vulkan_cases,
     .n_cases = (int)(sizeof vulkan_cases / sizeof vulkan_cases[0]),
     .variant_env = "KILN_VK_GEMM",
     .variants = {"", "tiled", "packed", "shuffle", "shuffle16"}, /* vk_gemm.c, pick_variant */
     .n_variants = 5,
     .seed = 0x6e33},
    {.backend = "opencl",
     .cases = opencl_cases,
     .n_cases = (int)(sizeof opencl_cases / sizeof opencl_cases[0]),
     .variant_env = "KILN_CL_GEMM",
     .variants = {"direct", "cpu", "tiled"}, /* cl_ops_gemm.c */
     .n_variants = 3,
     .variant_read_at_open = 1,
     .seed = 77,
     .batch_gap = 5},
};

static const gemm_suite *g_suite;

/* Storage of one operand: `batch` matrices of rows x ld (one when shared). */
typedef struct storage {
    int64_t rows, cols, ld, offset, stride, total;
} storage;

static storage storage_of(int64_t rows, int64_t cols, placement p, int64_t batch, int shared) {
    storage s = {.rows = rows, .cols = cols, .ld = cols + p.pad, .offset = p.offset};
    s.stride = shared ? 0 : rows * s.ld + g_suite->batch_gap;
    s.total = p.offset + (shared ? 0 : (batch - 1) * s.stride) + rows * s.ld;
    if (s.total < 1) s.total = 1; /* K = 0: an empty operand still needs a buffer */
    return s;
}

/* NaN in the padding at the end of every stored row: no kernel may read it (a texel read
 * across the padding must drop it, not multiply it by zero). */
static void poison_padding(float *v, const storage *s, int64_t batch) {
    for (int64_t b = 0; b < (s->stride ? batch : 1); b++)
        for (int64_t r = 0; r < s->rows; r++)
            for (int64_t j = s->cols; j < s->ld; j++) v[s->offset + b * s->stride + r * s->ld + j] = NAN;
}

static float *random_values(int64_t n, uint64_t stream, int halves) {
    float *v = malloc((size_t)n * sizeof *v);
    for (int64_t i = 0; i < n; i++) {
        float x = kiln_rng_normal(g_suite->seed, stream, (uint64_t)i);
        /* f16 operands hold values exactly representable in f16 on both sides */
        v[i] = halves ? kiln_f16_to_f32(kiln_f32_to_f16(x)) : x;
    }
    return v;
}

/* The operands of a case, laid out, with their values: A, B, C and the bias. */
typedef struct operands {
    storage a, b, c;
    float *vals[4];
} operands;

/* Runs the case on ctx; returns C's whole storage as f32 (malloc'd). */
static float *run(kiln_ctx *ctx, const gemm_case *g, const operands *o) {
    kiln_tensor *a = kt_tensor(ctx, g->a_dtype, 1, &o->a.total, o->vals[0]);
    kiln_tensor *b = kt_tensor(ctx, g->b_dtype, 1, &o->b.total, o->vals[1]);
    kiln_tensor *c = kt_tensor(ctx, g->c_dtype, 1, &o->c.total, o->vals[2]);
    kiln_tensor *bias = g->bias ? kt_tensor(ctx, KILN_F32, 1, &g->n, o->vals[3]) : NULL;
    kiln_gemm_args args = {
        .a = kiln_ref_of(a), .b = kiln_ref_of(b), .c = kiln_ref_of(c), .bias = kiln_ref_of(bias),
        .a_dtype = g->a_dtype, .b_dtype = g->b_dtype, .c_dtype = g->c_dtype,
        .m = g->m, .n = g->n, .k = g->k, .batch = g->batch, .trans_a = g->trans_a, .trans_b = g->trans_b,
        .lda = o->a.ld, .ldb = o->b.ld, .ldc = o->c.ld,
        .stride_a = o->a.stride, .stride_b = o->b.stride, .stride_c = o->c.stride,
        .alpha = g->alpha, .beta = g->beta};
    args.a.off += (size_t)o->a.offset * kiln_dtype_size(g->a_dtype);
    args.b.off += (size_t)o->b.offset * kiln_dtype_size(g->b_dtype);
    args.c.off += (size_t)o->c.offset * kiln_dtype_size(g->c_dtype);
    kiln_status s = ctx->be->gemm(ctx->dev, &args);
    ck_assert_msg(s == KILN_OK, "%s on %s: %s", g->name, kiln_backend_name(ctx), kiln_error_message());
    float *out = malloc((size_t)o->c.total * sizeof *out);
    ck_assert_int_eq(kiln_download_f32(c, out, o->c.total), KILN_OK);
    kiln_tensor_free(a), kiln_tensor_free(b), kiln_tensor_free(c), kiln_tensor_free(bias);
    return out;
}

/* C from the device against the reference: within 1e-10 normalized error on the product's
 * elements (the reference rounded to f16 for an f16 C), the padding untouched. The first
 * element that fails is reported: an assertion per element would cost minutes (Check
 * records the place of every assertion that passes). */
static void expect_close(const gemm_case *g, const operands *o, const float *want, const float *got,
                         const char *variant) {
    const char *shown = *variant ? variant : "default";
    const storage *c = &o->c;
    int64_t written = -1, not_finite = -1;
    double num = 0, den = 0;
    for (int64_t bt = 0; bt < g->batch; bt++) {
        for (int64_t i = 0; i < g->m; i++) {
            for (int64_t j = 0; j < c->ld; j++) {
                int64_t e = c->offset + bt * c->stride + i * c->ld + j;
                const float before = o->vals[2][e];
                if (j >= g->n) {
                    if (written < 0 && memcmp(&got[e], &before, 4) != 0 && !(isnan(got[e]) && isnan(before)))
                        written = e;
                    continue;
                }
                float w = g->c_dtype == KILN_F16 ? kiln_f16_to_f32(kiln_f32_to_f16(want[e])) : want[e];
                if (not_finite < 0 && !isfinite(got[e])) not_finite = e;
                num += ((double)got[e] - w) * ((double)got[e] - w);
                den += (double)w * w;
            }
        }
    }
    ck_assert_msg(written < 0, "%s (%s): padding at %lld was written", g->name, shown, (long long)written);
    ck_assert_msg(not_finite < 0, "%s (%s): C[%lld] = %g", g->name, shown, (long long)not_finite,
                  not_finite < 0 ? 0.0f : got[not_finite]);
    double err = num / (den > 1e-30 ? den : 1e-30);
    ck_assert_msg(err <= 1e-10, "%s with %s=%s: normalized error %.3g vs cpu", g->name, g_suite->variant_env, shown,
                  err);
}

START_TEST(gemm_matches_cpu) {
    const gemm_case *g = &g_suite->cases[_i];
    operands o = {
        .a = storage_of(g->trans_a ? g->k : g->m, g->trans_a ? g->m : g->k, g->a, g->batch, g->shared_a),
        .b = storage_of(g->trans_b ? g->n : g->k, g->trans_b ? g->k : g->n, g->b, g->batch, g->shared_b),
        .c = storage_of(g->m, g->n, g->c, g->batch, 0)};
    o.vals[0] = random_values(o.a.total, 1, g->a_dtype == KILN_F16);
    o.vals[1] = random_values(o.b.total, 2, g->b_dtype == KILN_F16);
    o.vals[2] = random_values(o.c.total, 3, g->c_dtype == KILN_F16);
    o.vals[3] = random_values(g->n, 4, 0);
    poison_padding(o.vals[0], &o.a, g->batch);
    poison_padding(o.vals[1], &o.b, g->batch);
    if (g->beta == 0.0f) /* beta == 0 must ignore C entirely, NaN included */
        for (int64_t i = 0; i < o.c.total; i++) o.vals[2][i] = NAN;
    /* the CPU computes an f32 C */
    gemm_case ref = *g;
    ref.c_dtype = KILN_F32;
    float *want = run(kt_cpu(), &ref, &o);
    int f16 = g->a_dtype == KILN_F16 || g->b_dtype == KILN_F16 || g->c_dtype == KILN_F16;
    kiln_ctx *dev = NULL;
    for (int v = 0; v < g_suite->n_variants; v++) {
        const char *variant = g_suite->variants[v];
        setenv(g_suite->variant_env, variant, 1);
        if (!dev || g_suite->variant_read_at_open) {
            kiln_close(dev);
            ck_assert_msg(kiln_open(g_suite->backend, &dev) == KILN_OK, "%s", kiln_error_message());
        }
        if (f16 && !kiln_supports_dtype(dev, KILN_F16)) { /* minimum-limits mode */
            unsetenv(g_suite->variant_env);
            break;
        }
        float *got = run(dev, g, &o);
        unsetenv(g_suite->variant_env);
        expect_close(g, &o, want, got, variant);
        free(got);
    }
    kiln_close(dev);
    for (int i = 0; i < 4; i++) free(o.vals[i]);
    free(want);
}
END_TEST

static void add_tests(Suite *s, TCase *tc) {
    (void)s;
    tcase_add_loop_test(tc, gemm_matches_cpu, 0, g_suite->n_cases);
}

int main(int argc, char **argv) {
    const char *backend = kt_parse_backend(argc, argv);
    for (size_t i = 0; i < sizeof g_suites / sizeof g_suites[0]; i++)
        if (!strcmp(g_suites[i].backend, backend)) g_suite = &g_suites[i];
    if (!g_suite) {
        fprintf(stderr, "test_gpu_gemm: --backend vulkan or opencl, not %s\n", backend);
        return 1;
    }
    return kt_main(argc, argv, "gpu_gemm", add_tests, NULL, 0);
}
