/* The OpenCL GEMM kernel slot against the CPU's, for every variant (direct, cpu, tiled:
 * forced with KILN_CL_GEMM at open), on odd shapes that are not multiples of any tile, both
 * transposes, f16 inputs and output, alpha/beta/bias, padded leading dimensions, batch
 * strides with 0 (a shared operand), and operands at odd element offsets.
 *
 * It calls the backend tables directly (the ops only use alpha = 1 and beta in {0, 1}).
 * Where beta == 0 the output starts as NaN, which must not leak into the result; the
 * padding between rows of C must come back untouched. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "testutil.h"

#ifdef KILN_HAVE_OPENCL

typedef struct gemm_case {
    const char *name;
    int64_t m, n, k, batch;
    int ta, tb;
    kiln_dtype adt, bdt, cdt;
    float alpha, beta;
    int bias;
    int shared_a, shared_b; /* stride 0 */
    int64_t pad;            /* extra elements per row of A, B and C (ld > minimum) */
    int64_t off;            /* first element of each operand (odd: misaligned) */
} gemm_case;

#define F32 KILN_F32
#define F16 KILN_F16
static const gemm_case cases[] = {
    {"1x1x1", 1, 1, 1, 1, 0, 0, F32, F32, F32, 1, 0, 0, 0, 0, 0, 0},
    {"nn_odd", 7, 5, 3, 1, 0, 0, F32, F32, F32, 1, 0, 1, 0, 0, 0, 0},
    {"nt_odd", 13, 33, 17, 1, 0, 1, F32, F32, F32, 1, 0, 0, 0, 0, 0, 1},
    {"tn_odd", 29, 19, 23, 1, 1, 0, F32, F32, F32, 1, 0, 1, 0, 0, 2, 3},
    {"tt_odd", 17, 45, 9, 1, 1, 1, F32, F32, F32, 1, 0, 0, 0, 0, 0, 0},
    {"tile_edges", 65, 67, 31, 1, 0, 0, F32, F32, F32, 1, 0, 1, 0, 0, 0, 0},
    {"exact_tiles", 24, 64, 16, 1, 0, 1, F32, F32, F32, 1, 0, 0, 0, 0, 0, 0},
    {"long_k", 5, 7, 301, 1, 1, 0, F32, F32, F32, 1, 0, 0, 0, 0, 0, 0},
    {"alpha_beta_bias", 19, 21, 11, 1, 0, 0, F32, F32, F32, -0.75f, 0.5f, 1, 0, 0, 3, 1},
    {"accumulate", 9, 40, 15, 1, 1, 1, F32, F32, F32, 1, 1, 0, 0, 0, 1, 0},
    {"k_zero", 6, 5, 0, 1, 0, 0, F32, F32, F32, 1, 0.25f, 1, 0, 0, 0, 0},
    {"batched", 11, 13, 7, 3, 0, 0, F32, F32, F32, 1, 0, 1, 0, 0, 0, 0},
    {"batched_tn_beta", 6, 9, 10, 4, 1, 0, F32, F32, F32, 2, -1, 0, 0, 0, 1, 2},
    {"shared_b", 10, 12, 9, 3, 0, 1, F32, F32, F32, 1, 0, 1, 0, 1, 0, 0},
    {"shared_a", 10, 12, 9, 3, 1, 0, F32, F32, F32, 1, 0, 0, 1, 0, 0, 1},
    {"f16_inputs", 21, 19, 13, 1, 0, 1, F16, F16, F32, 1, 0, 1, 0, 0, 0, 1},
    {"f16_a_batched", 7, 15, 33, 2, 1, 0, F16, F32, F32, 0.5f, 1, 0, 0, 1, 1, 3},
    {"f16_b_tt", 18, 5, 22, 1, 1, 1, F32, F16, F32, 1, 0, 0, 0, 0, 0, 0},
    /* whole packing blocks of f16 (the converting fast path), both source layouts, at odd
     * element offsets (vector loads of halves need only 2-byte alignment) */
    {"f16_blocks_nt", 40, 70, 50, 1, 0, 1, F16, F16, F32, 1, 0, 0, 0, 0, 0, 1},
    {"f16_blocks_tn", 40, 70, 50, 2, 1, 0, F16, F16, F32, 1, 0, 1, 0, 0, 3, 0},
};

static int64_t rows_of(int64_t r, int64_t c, int trans) { return trans ? c : r; }
static int64_t cols_of(int64_t r, int64_t c, int trans) { return trans ? r : c; }

/* Storage of one operand: `count` matrices of rows x ld (or one when shared). */
typedef struct operand {
    int64_t rows, cols, ld, stride, total;
} operand;

static operand layout(int64_t rows, int64_t cols, int64_t pad, int64_t off, int64_t batch, int shared) {
    operand o = {rows, cols, cols + pad, 0, 0};
    o.stride = shared ? 0 : rows * o.ld + 5; /* a gap between matrices, too */
    o.total = off + (shared ? 0 : (batch - 1) * o.stride) + rows * o.ld;
    if (o.total < 1) o.total = 1; /* K = 0: an empty operand still needs a buffer */
    return o;
}

static float *random_values(int64_t n, uint64_t stream, int halves) {
    float *v = malloc((size_t)n * sizeof *v);
    for (int64_t i = 0; i < n; i++) {
        float x = kiln_rng_normal(77, stream, (uint64_t)i);
        /* f16 operands hold values exactly representable in f16 on both sides */
        v[i] = halves ? kiln_f16_to_f32(kiln_f32_to_f16(x)) : x;
    }
    return v;
}

/* Runs the case on ctx; returns C's whole storage as f32 (malloc'd). */
static float *run(kiln_ctx *ctx, const gemm_case *g, const operand *oa, const operand *ob,
                  const operand *oc, float *const vals[4]) {
    kiln_tensor *a = kt_tensor(ctx, g->adt, 1, &oa->total, vals[0]);
    kiln_tensor *b = kt_tensor(ctx, g->bdt, 1, &ob->total, vals[1]);
    kiln_tensor *c = kt_tensor(ctx, g->cdt, 1, &oc->total, vals[2]);
    kiln_tensor *bias = g->bias ? kt_tensor(ctx, F32, 1, &g->n, vals[3]) : NULL;
    kiln_gemm_args args = {0};
    args.a = kiln_ref_of(a);
    args.a.off += (size_t)g->off * kiln_dtype_size(g->adt);
    args.b = kiln_ref_of(b);
    args.b.off += (size_t)g->off * kiln_dtype_size(g->bdt);
    args.c = kiln_ref_of(c);
    args.c.off += (size_t)g->off * kiln_dtype_size(g->cdt);
    args.bias = kiln_ref_of(bias);
    args.a_dtype = g->adt, args.b_dtype = g->bdt, args.c_dtype = g->cdt;
    args.m = g->m, args.n = g->n, args.k = g->k, args.batch = g->batch;
    args.trans_a = g->ta, args.trans_b = g->tb;
    args.lda = oa->ld, args.ldb = ob->ld, args.ldc = oc->ld;
    args.stride_a = oa->stride, args.stride_b = ob->stride, args.stride_c = oc->stride;
    args.alpha = g->alpha, args.beta = g->beta;
    kiln_status s = ctx->be->gemm(ctx->dev, &args);
    ck_assert_msg(s == KILN_OK, "%s on %s: %s", g->name, kiln_backend_name(ctx), kiln_error_message());
    float *out = malloc((size_t)oc->total * sizeof *out);
    ck_assert(kiln_download_f32(c, out, oc->total) == KILN_OK);
    kiln_tensor_free(a), kiln_tensor_free(b), kiln_tensor_free(c), kiln_tensor_free(bias);
    return out;
}

static const char *g_variant;

static void check_case(const gemm_case *g) {
    kiln_ctx *cpu = kt_cpu();
    setenv("KILN_CL_GEMM", g_variant, 1);
    kiln_ctx *cl;
    ck_assert_msg(kiln_open("opencl", &cl) == KILN_OK, "%s", kiln_error_message());
    operand oa = layout(rows_of(g->m, g->k, g->ta), cols_of(g->m, g->k, g->ta), g->pad, g->off, g->batch, g->shared_a);
    operand ob = layout(rows_of(g->k, g->n, g->tb), cols_of(g->k, g->n, g->tb), g->pad, g->off, g->batch, g->shared_b);
    operand oc = layout(g->m, g->n, g->pad, g->off, g->batch, 0);
    float *vals[4] = {random_values(oa.total, 1, g->adt == F16), random_values(ob.total, 2, g->bdt == F16),
                      random_values(oc.total, 3, g->cdt == F16), random_values(g->n, 4, 0)};
    if (g->beta == 0)
        for (int64_t i = 0; i < oc.total; i++) vals[2][i] = NAN; /* must be ignored */
    /* the CPU computes f32 C; an f16 C is compared after rounding the reference */
    gemm_case ref = *g;
    ref.cdt = F32;
    float *want = run(cpu, &ref, &oa, &ob, &oc, vals);
    float *got = run(cl, g, &oa, &ob, &oc, vals);
    double num = 0, den = 0;
    for (int64_t bt = 0; bt < g->batch; bt++) {
        for (int64_t i = 0; i < g->m; i++) {
            for (int64_t j = 0; j < oc.ld; j++) {
                int64_t e = g->off + bt * oc.stride + i * oc.ld + j;
                if (j >= g->n) { /* padding: untouched */
                    ck_assert_msg(memcmp(&got[e], &vals[2][e], 4) == 0 || (isnan(got[e]) && isnan(vals[2][e])),
                                  "%s/%s: padding at %lld was written", g->name, g_variant, (long long)e);
                    continue;
                }
                float w = g->cdt == F16 ? kiln_f16_to_f32(kiln_f32_to_f16(want[e])) : want[e];
                ck_assert_msg(isfinite(got[e]), "%s/%s: C[%lld] = %g", g->name, g_variant, (long long)e, got[e]);
                num += ((double)got[e] - w) * ((double)got[e] - w);
                den += (double)w * w;
            }
        }
    }
    double err = num / (den > 1e-30 ? den : 1e-30);
    ck_assert_msg(err <= 1e-10, "%s with KILN_CL_GEMM=%s: normalized error %.3g", g->name, g_variant, err);
    for (int i = 0; i < 4; i++) free(vals[i]);
    free(want);
    free(got);
    kiln_close(cl);
}

START_TEST(gemm_matches_cpu) { check_case(&cases[_i]); }
END_TEST

/* f16 output: the CPU has none, so the reference is its f32 result rounded to f16. */
START_TEST(gemm_f16_output) {
    gemm_case g = {"f16_output", 23, 17, 12, 2, 0, 1, F16, F32, F16, 1, 0, 1, 0, 0, 1, 1};
    check_case(&g);
}
END_TEST

int main(int argc, char **argv) {
    (void)argc, (void)argv;
    kiln_ctx *probe;
    if (kiln_open("opencl", &probe) != KILN_OK) {
        fprintf(stderr, "skipping: %s\n", kiln_error_message());
        return 77;
    }
    kiln_close(probe);
    static const char *const variants[] = {"direct", "cpu", "tiled"};
    int failed = 0;
    for (int v = 0; v < 3; v++) {
        g_variant = variants[v];
        Suite *s = suite_create("opencl_gemm");
        TCase *tc = tcase_create(g_variant);
        tcase_set_timeout(tc, 600);
        tcase_add_loop_test(tc, gemm_matches_cpu, 0, (int)(sizeof cases / sizeof cases[0]));
        tcase_add_test(tc, gemm_f16_output);
        suite_add_tcase(s, tc);
        SRunner *sr = srunner_create(s);
        printf("KILN_CL_GEMM=%s\n", g_variant);
        srunner_run_all(sr, CK_NORMAL);
        failed += srunner_ntests_failed(sr);
        srunner_free(sr);
    }
    return failed ? 1 : 0;
}

#else
int main(void) { return 77; } /* built without OpenCL */
#endif
