/* The Vulkan GEMM kernel slot against the CPU reference, called directly through the
 * backend table so that everything the matmul op never asks for is covered too: alpha,
 * beta (and beta == 0 ignoring a NaN C), f16 inputs, every transpose, batches with shared
 * operands, operands at odd element offsets, and sizes on both sides of the switch between
 * the tiled kernel and the CPU-device ones (and, in KILN_VK_MIN_LIMITS mode, the
 * fallbacks). Every case runs once with the variant vk_gemm.c picks and once forced to each
 * variant by KILN_VK_GEMM (ignored where that variant does not apply), so the kernels a
 * device class does not pick by default stay checked on lavapipe too. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "testutil.h"

#ifdef KILN_HAVE_VULKAN

typedef struct gemm_case {
    const char *name;
    int64_t m, n, k, batch;
    int ta, tb;
    kiln_dtype at, bt;
    float alpha, beta;
    int bias, shared_a, shared_b;
    int64_t a_skip; /* operand A starts this many elements into its buffer */
    int64_t ld_pad; /* lda and ldb exceed the stored rows' lengths by this much */
} gemm_case;

static const gemm_case cases[] = {
    {"tiny_nn", 7, 9, 5, 1, 0, 0, KILN_F32, KILN_F32, 1.0f, 0.0f, 0, 0, 0, 0},
    {"tiny_tt_alpha_beta", 7, 9, 5, 1, 1, 1, KILN_F32, KILN_F32, 0.75f, -1.5f, 1, 0, 0, 0},
    {"tiny_nt_bias", 13, 1, 17, 1, 0, 1, KILN_F32, KILN_F32, 1.0f, 0.0f, 1, 0, 0, 0},
    {"k1", 31, 29, 1, 1, 1, 0, KILN_F32, KILN_F32, 1.0f, 1.0f, 0, 0, 0, 0},
    {"m1", 1, 300, 257, 1, 0, 0, KILN_F32, KILN_F32, 1.0f, 0.0f, 1, 0, 0, 0},
    {"odd_nn", 67, 45, 131, 1, 0, 0, KILN_F32, KILN_F32, 1.0f, 0.0f, 1, 0, 0, 0},
    {"odd_nt", 67, 45, 131, 1, 0, 1, KILN_F32, KILN_F32, -0.5f, 0.25f, 0, 0, 0, 0},
    {"odd_tn", 45, 67, 131, 1, 1, 0, KILN_F32, KILN_F32, 1.0f, 1.0f, 1, 0, 0, 0},
    {"odd_tt", 45, 67, 131, 1, 1, 1, KILN_F32, KILN_F32, 2.0f, 0.0f, 0, 0, 0, 0},
    {"f16_both", 70, 33, 150, 1, 0, 1, KILN_F16, KILN_F16, 1.0f, 0.0f, 1, 0, 0, 0},
    {"f16_a_odd_offset", 37, 41, 190, 1, 1, 0, KILN_F16, KILN_F32, 1.0f, -1.0f, 0, 0, 0, 1},
    {"f32_odd_offset", 37, 41, 190, 1, 0, 0, KILN_F32, KILN_F32, 1.0f, 0.0f, 0, 0, 0, 3},
    {"batched", 33, 29, 65, 4, 0, 0, KILN_F32, KILN_F32, 1.0f, 0.0f, 1, 0, 0, 0},
    {"batched_shared_b", 33, 29, 300, 3, 0, 1, KILN_F32, KILN_F32, 1.0f, 0.5f, 0, 0, 1, 0},
    {"batched_shared_a", 20, 50, 300, 3, 1, 0, KILN_F16, KILN_F32, 1.0f, 0.0f, 1, 1, 0, 0},
    {"square_256", 256, 256, 256, 1, 0, 0, KILN_F32, KILN_F32, 1.0f, 0.0f, 0, 0, 0, 0},
    /* several blocks of every CPU-device kernel in both directions, a partial last block,
     * and a k that leaves a partial texel and a partial unrolled iteration in both shapes
     * of gemm_shuffle.comp (83 steps of 4 k: 3 and 2 per iteration) */
    {"blocks_tt_batched", 100, 150, 329, 2, 1, 1, KILN_F32, KILN_F32, 1.0f, 0.5f, 1, 0, 0, 0},
    /* leading dimensions and offsets in whole texels (16 bytes): the CPU-device kernels pack
     * these through texel fetches (gemm_pack_texel.comp), with partial texels at the ends
     * of rows (k % 4) and of columns (rows % 4) */
    {"texel_nn_pad", 70, 37, 101, 2, 0, 0, KILN_F32, KILN_F32, 1.0f, 0.0f, 1, 0, 0, 0, 3},
    {"texel_tt_pad", 37, 70, 101, 1, 1, 1, KILN_F32, KILN_F32, 0.5f, 1.0f, 0, 0, 0, 0, 3},
    {"texel_nt_shared_b", 64, 96, 128, 3, 0, 1, KILN_F32, KILN_F32, 1.0f, 0.0f, 1, 0, 1, 0, 0},
    {"texel_tn_offset", 44, 40, 48, 1, 1, 0, KILN_F32, KILN_F32, 1.0f, 0.0f, 0, 0, 0, 4, 0},
    {"aligned_nt_batched", 70, 100, 64, 3, 0, 1, KILN_F32, KILN_F32, 1.0f, 0.5f, 1, 0, 0, 4, 4},
    /* N a multiple of 64 and C in whole vec4s: gemm_shuffle.comp stores rows as vec4s */
    {"vec4_c_beta_bias", 70, 128, 40, 2, 0, 0, KILN_F32, KILN_F32, 0.5f, -1.0f, 1, 0, 0, 0, 0},
    {"vec4_c_tn", 33, 192, 72, 1, 1, 0, KILN_F32, KILN_F32, 1.0f, 0.0f, 0, 0, 0, 0, 0},
    /* f16 operands in whole texels of four halves: packed through RGBA16F texel views,
     * row-major and transposing, with gaps between the rows */
    {"f16_texel_nn_pad", 64, 40, 96, 2, 0, 0, KILN_F16, KILN_F16, 1.0f, 0.5f, 1, 0, 0, 0, 4},
    {"f16_texel_tt", 40, 72, 100, 1, 1, 1, KILN_F16, KILN_F16, 1.0f, 0.0f, 0, 0, 0, 0, 0},
};

/* Leading dimensions: the stored rows' lengths, plus ld_pad. */
static int64_t lda(const gemm_case *c) { return (c->ta ? c->m : c->k) + c->ld_pad; }
static int64_t ldb(const gemm_case *c) { return (c->tb ? c->k : c->n) + c->ld_pad; }

/* NaN in the ld_pad gap at the end of every stored row: no kernel may read it (a texel
 * read across the gap must drop it, not multiply it by zero). */
static void poison_gaps(float *v, int64_t count, int64_t ld, int64_t row_len) {
    for (int64_t i = 0; i < count; i++)
        if (i % ld >= row_len) v[i] = NAN;
}

/* A tensor of `count` elements (plus `skip` leading ones) on ctx, filled from vals. */
static kiln_tensor *make(kiln_ctx *ctx, kiln_dtype dt, int64_t count, const float *vals) {
    int64_t shape[1] = {count};
    return kt_tensor(ctx, dt, 1, shape, vals);
}

static float *random_values(int64_t n, uint64_t stream) {
    float *v = malloc((size_t)n * sizeof *v);
    for (int64_t i = 0; i < n; i++) v[i] = kiln_rng_normal(0x6e33, stream, (uint64_t)i);
    return v;
}

/* Runs the case on ctx; returns C (batch * m * n floats, malloc'd). */
static float *run(kiln_ctx *ctx, const gemm_case *c, const float *av, const float *bv, const float *cv,
                  const float *biasv, int64_t a_count, int64_t b_count) {
    kiln_tensor *A = make(ctx, c->at, a_count + c->a_skip, av);
    kiln_tensor *B = make(ctx, c->bt, b_count, bv);
    kiln_tensor *C = make(ctx, KILN_F32, c->batch * c->m * c->n, cv);
    kiln_tensor *bias = c->bias ? make(ctx, KILN_F32, c->n, biasv) : NULL;
    if (c->beta == 0.0f) { /* beta == 0 must ignore C entirely, NaN included */
        ck_assert_int_eq(kiln_fill(C, NAN), KILN_OK);
    }
    kiln_gemm_args g;
    memset(&g, 0, sizeof g);
    g.a = kiln_ref_of(A);
    g.a.off += (size_t)c->a_skip * kiln_dtype_size(c->at);
    g.b = kiln_ref_of(B);
    g.c = kiln_ref_of(C);
    g.bias = kiln_ref_of(bias);
    g.a_dtype = c->at, g.b_dtype = c->bt, g.c_dtype = KILN_F32;
    g.m = c->m, g.n = c->n, g.k = c->k, g.batch = c->batch;
    g.trans_a = c->ta, g.trans_b = c->tb;
    g.lda = lda(c);
    g.ldb = ldb(c);
    g.ldc = c->n;
    g.stride_a = c->shared_a ? 0 : (c->ta ? c->k : c->m) * lda(c);
    g.stride_b = c->shared_b ? 0 : (c->tb ? c->n : c->k) * ldb(c);
    g.stride_c = c->m * c->n;
    g.alpha = c->alpha, g.beta = c->beta;
    kiln_status s = ctx->be->gemm(ctx->dev, &g);
    ck_assert_msg(s == KILN_OK, "%s on %s: %s", c->name, kiln_backend_name(ctx), kiln_error_message());
    int64_t nc = c->batch * c->m * c->n;
    float *out = malloc((size_t)nc * sizeof *out);
    ck_assert_int_eq(kiln_download_f32(C, out, nc), KILN_OK);
    kiln_tensor_free(A), kiln_tensor_free(B), kiln_tensor_free(C), kiln_tensor_free(bias);
    return out;
}

/* "" lets vk_gemm.c choose; the others force a kernel (vk_gemm.c, pick_variant) */
static const char *variants[] = {"", "tiled", "packed", "shuffle", "shuffle16"};
#define N_VARIANTS (int)(sizeof variants / sizeof variants[0])

START_TEST(gemm_matches_cpu) {
    const gemm_case *c = &cases[_i];
    kiln_ctx *cpu, *vk;
    ck_assert_int_eq(kiln_open("cpu", &cpu), KILN_OK);
    ck_assert_msg(kiln_open("vulkan", &vk) == KILN_OK, "%s", kiln_error_message());
    int f16 = c->at == KILN_F16 || c->bt == KILN_F16;
    if (f16 && vk->be->supports_f16 && !vk->be->supports_f16(vk->dev)) {
        /* minimum-limits mode: f16 is refused everywhere (test_vulkan_f16 checks that) */
        kiln_close(vk);
        kiln_close(cpu);
        return;
    }
    int64_t a_count = (c->shared_a ? 1 : c->batch) * (c->ta ? c->k : c->m) * lda(c);
    int64_t b_count = (c->shared_b ? 1 : c->batch) * (c->tb ? c->n : c->k) * ldb(c);
    int64_t nc = c->batch * c->m * c->n;
    float *av = random_values(a_count + c->a_skip, 1), *bv = random_values(b_count, 2);
    float *cv = random_values(nc, 3), *biasv = random_values(c->n, 4);
    poison_gaps(av + c->a_skip, a_count, lda(c), lda(c) - c->ld_pad);
    poison_gaps(bv, b_count, ldb(c), ldb(c) - c->ld_pad);
    float *ref = run(cpu, c, av, bv, cv, biasv, a_count, b_count);
    for (int v = 0; v < N_VARIANTS; v++) {
        setenv("KILN_VK_GEMM", variants[v], 1);
        float *got = run(vk, c, av, bv, cv, biasv, a_count, b_count);
        unsetenv("KILN_VK_GEMM");
        double err = kt_normalized_error(ref, got, nc);
        ck_assert_msg(err <= 1e-10, "%s (%s): normalized error %.3g vs cpu (C[0] %g vs %g)", c->name,
                      *variants[v] ? variants[v] : "default", err, got[0], ref[0]);
        free(got);
    }
    free(av), free(bv), free(cv), free(biasv), free(ref);
    kiln_close(vk);
    kiln_close(cpu);
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_loop_test(tc, gemm_matches_cpu, 0, (int)(sizeof cases / sizeof cases[0]));
}

int main(void) {
    int skip = kt_require_backend("vulkan");
    return skip ? skip : kt_run_tests("vulkan_gemm", "vulkan", add_tests);
}

#else
int main(void) { return 77; } /* built without Vulkan */
#endif
