/* The fast CPU GEMM against its plain reference (cpu_gemm_reference), for every
 * micro-kernel this CPU has (avx512, avx2, generic on x86-64): odd sizes that fill no tile,
 * K and N across block boundaries, both transposes, f16 inputs, padded leading dimensions,
 * alpha/beta/bias, beta == 0 over a NaN-filled C, batches (strided, shared operands,
 * and the two threading modes), an f16 C (computed in f32, rounded once), and the path for a
 * few rows (cpu_gemv.c) against the reference and, bit for bit, against the blocked GEMM. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/cpu_gemm.h"
#include "testutil.h"

typedef struct shape {
    int64_t m, n, k, batch;
} shape;

typedef struct variant {
    int ta, tb;
    kiln_dtype adt, bdt;
    float alpha, beta;
    int bias;
    int pad;       /* extra elements at the end of every row (leading dimension > width) */
    int shared_b;  /* stride_b = 0 */
} variant;

static uint64_t g_rng = 12345;
static float rnd(void) {
    g_rng = g_rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (float)((double)(g_rng >> 40) / (double)(1ULL << 24) * 2.0 - 1.0);
}

/* Host memory posing as a CPU-backend buffer (struct kiln_buf of cpu_internal.h). */
static kiln_ref fill_buf(kiln_buf *h, kiln_dtype dt, int64_t count, int nan_fill) {
    size_t es = kiln_dtype_size(dt);
    h->size = (size_t)count * es;
    h->ptr = malloc(h->size ? h->size : 1);
    ck_assert(h->ptr != NULL);
    for (int64_t i = 0; i < count; i++) {
        float v = nan_fill ? NAN : rnd();
        if (dt == KILN_F16)
            ((uint16_t *)h->ptr)[i] = kiln_f32_to_f16(v);
        else
            ((float *)h->ptr)[i] = v;
    }
    kiln_ref r = {.buf = h};
    return r;
}

static double c_value(const kiln_buf *h, kiln_dtype dt, int64_t at) {
    if (dt == KILN_F16) return kiln_f16_to_f32(((const uint16_t *)h->ptr)[at]);
    return ((const float *)h->ptr)[at];
}

/* A GEMM's arguments and random operands for a shape and variant, C of dtype cdt. */
typedef struct gemm_case {
    kiln_gemm_args g;
    kiln_buf ha, hb, hbias, hc;
} gemm_case;

static void case_new(gemm_case *t, const shape *s, const variant *v, kiln_dtype cdt) {
    const int64_t m = s->m, n = s->n, k = s->k;
    /* stored shapes: A is m x k (k x m when transposed), B is k x n (n x k) */
    const int64_t a_rows = v->ta ? k : m, a_cols = v->ta ? m : k;
    const int64_t b_rows = v->tb ? n : k, b_cols = v->tb ? k : n;
    kiln_gemm_args g = {0};
    g.a_dtype = v->adt, g.b_dtype = v->bdt, g.c_dtype = cdt;
    g.m = m, g.n = n, g.k = k, g.batch = s->batch;
    g.trans_a = v->ta, g.trans_b = v->tb;
    g.lda = a_cols + v->pad, g.ldb = b_cols + v->pad, g.ldc = n + v->pad;
    g.stride_a = a_rows * g.lda, g.stride_b = v->shared_b ? 0 : b_rows * g.ldb, g.stride_c = m * g.ldc;
    g.alpha = v->alpha, g.beta = v->beta;
    g.a = fill_buf(&t->ha, v->adt, g.stride_a * s->batch, 0);
    g.b = fill_buf(&t->hb, v->bdt, b_rows * g.ldb * (v->shared_b ? 1 : s->batch), 0);
    kiln_ref bias = fill_buf(&t->hbias, KILN_F32, n, 0);
    if (v->bias) g.bias = bias;
    /* beta == 0 must ignore C even when it holds NaN */
    g.c = fill_buf(&t->hc, cdt, g.stride_c * s->batch, v->beta == 0.0f);
    t->g = g;
}

/* Another C with the same contents as t's. It draws the random numbers a fresh C would, so
 * that every case keeps the data its tolerance was checked with (a one-element C whose terms
 * cancel has a large relative error in any f32 sum). */
static kiln_ref case_c_copy(const gemm_case *t, kiln_buf *h) {
    kiln_ref r = fill_buf(h, t->g.c_dtype, (int64_t)(t->hc.size / kiln_dtype_size(t->g.c_dtype)), 0);
    memcpy(h->ptr, t->hc.ptr, h->size);
    return r;
}

static void case_free(gemm_case *t) { free(t->ha.ptr), free(t->hb.ptr), free(t->hbias.ptr), free(t->hc.ptr); }

/* Runs fast and reference GEMMs on the same inputs, C of dtype cdt, and compares every C
 * element. */
static void check_one_c(const shape *s, const variant *v, kiln_dtype cdt) {
    const int64_t m = s->m, n = s->n, k = s->k;
    gemm_case t;
    case_new(&t, s, v, cdt);
    kiln_gemm_args g = t.g, r = t.g;
    kiln_buf hc_ref;
    const kiln_buf hc_fast = t.hc;
    r.c = case_c_copy(&t, &hc_ref);

    ck_assert_msg(cpu_gemm(NULL, &g) == KILN_OK, "%s", kiln_error_message());
    ck_assert(cpu_gemm_reference(NULL, &r) == KILN_OK);
    double num = 0, den = 0;
    for (int64_t b = 0; b < s->batch; b++)
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                int64_t at = b * g.stride_c + i * g.ldc + j;
                const double cf = c_value(&hc_fast, cdt, at), cr = c_value(&hc_ref, cdt, at);
                /* asserted only on failure: Check records every assertion, and a call per
                 * element of a C of millions made the test spend its time logging */
                if (!isfinite(cf))
                    ck_abort_msg("%s: C[%lld,%lld,%lld] = %g (m %lld n %lld k %lld ta %d tb %d beta %g)",
                                 cpu_gemm_active_kernel()->name, (long long)b, (long long)i, (long long)j, cf,
                                 (long long)m, (long long)n, (long long)k, v->ta, v->tb, v->beta);
                double d = cf - cr;
                num += d * d;
                den += cr * cr;
            }
    double err = num / (den > 1e-30 ? den : 1e-30);
    /* an f16 C: both round the f32 sum once, but the sums (blocked f32, double) may fall on
     * either side of a rounding boundary: a rare one-ulp difference (up to 2^-10 relative),
     * which in a C of a few dozen elements can weigh up to 2^-20 / dozens */
    const double tol = cdt == KILN_F16 ? 3e-7 : 1e-11;
    ck_assert_msg(err < tol, "%s: normalized error %g (m %lld n %lld k %lld batch %lld ta %d tb %d a %s b %s c %s alpha %g beta %g bias %d pad %d)",
                  cpu_gemm_active_kernel()->name, err, (long long)m, (long long)n, (long long)k, (long long)s->batch,
                  v->ta, v->tb, kiln_dtype_name(v->adt), kiln_dtype_name(v->bdt), kiln_dtype_name(cdt), v->alpha,
                  v->beta, v->bias, v->pad);
    /* the padding between rows of C is never written (compared as bits: it may be NaN) */
    if (v->pad) {
        const size_t es = kiln_dtype_size(cdt);
        for (int64_t i = 0; i < m; i++) {
            const int64_t at = i * g.ldc + n;
            ck_assert(!memcmp((char *)hc_fast.ptr + at * es, (char *)hc_ref.ptr + at * es, es) || v->beta == 0.0f);
        }
    }
    free(hc_ref.ptr);
    case_free(&t);
}

/* Every kernel over the shapes and variants given, C of dtype cdt. */
static void check_all_kernels_c(const shape *shapes, int n_shapes, const variant *vars, int n_vars, kiln_dtype cdt) {
    const cpu_gemm_kernel *list[CPU_GEMM_MAX_KERNELS];
    int nk = cpu_gemm_kernels(list, CPU_GEMM_MAX_KERNELS);
    ck_assert(nk >= 1 && !strcmp(list[nk - 1]->name, "generic"));
    for (int q = 0; q < nk; q++) {
        ck_assert(cpu_gemm_use_kernel(list[q]->name));
        ck_assert_str_eq(cpu_gemm_active_kernel()->name, list[q]->name);
        for (int s = 0; s < n_shapes; s++)
            for (int v = 0; v < n_vars; v++) check_one_c(&shapes[s], &vars[v], cdt);
    }
    cpu_gemm_use_kernel(list[0]->name);
}

static void check_all_kernels(const shape *shapes, int n_shapes, const variant *vars, int n_vars) {
    check_all_kernels_c(shapes, n_shapes, vars, n_vars, KILN_F32);
}

#define F32 KILN_F32
#define F16 KILN_F16

START_TEST(odd_sizes_all_transposes) {
    static const shape shapes[] = {{.m = 1, .n = 1, .k = 1, .batch = 1},    {.m = 5, .n = 3, .k = 7, .batch = 1},
                                   {.m = 13, .n = 17, .k = 9, .batch = 1},  {.m = 31, .n = 33, .k = 1, .batch = 1},
                                   {.m = 35, .n = 47, .k = 29, .batch = 1}, {.m = 67, .n = 45, .k = 131, .batch = 1}};
    variant vars[16];
    int nv = 0;
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            vars[nv++] = (variant){.ta = ta, .tb = tb, .adt = F32, .bdt = F32, .alpha = 1.0f, .beta = 0.0f};
            vars[nv++] = (variant){.ta = ta, .tb = tb, .adt = F32, .bdt = F32, .alpha = -0.5f, .beta = 0.75f, .bias = 1,
                                   .pad = 3};
            vars[nv++] = (variant){.ta = ta, .tb = tb, .adt = F16, .bdt = F16, .alpha = 2.0f, .beta = 0.0f, .bias = 1};
            vars[nv++] = (variant){.ta = ta, .tb = tb, .adt = F32, .bdt = F16, .alpha = 1.0f, .beta = 1.0f, .pad = 1};
        }
    check_all_kernels(shapes, (int)(sizeof shapes / sizeof shapes[0]), vars, nv);
}
END_TEST

START_TEST(blocks_along_k_and_n) {
    /* K beyond one K block (beta and bias only on the first), N beyond one N block, M with
     * a number of row blocks that two threads cannot split evenly (columns split too) */
    static const shape shapes[] = {{.m = 37, .n = 29, .k = 517, .batch = 1},
                                   {.m = 3, .n = 2100, .k = 19, .batch = 1},
                                   {.m = 301, .n = 97, .k = 65, .batch = 1},
                                   {.m = 150, .n = 130, .k = 257, .batch = 1}};
    static const variant vars[] = {
        {.adt = F32, .bdt = F32, .alpha = 1.0f, .beta = 0.0f, .bias = 1},
        {.ta = 1, .tb = 1, .adt = F32, .bdt = F32, .alpha = 0.5f, .beta = -1.25f, .bias = 1, .pad = 2},
        {.tb = 1, .adt = F16, .bdt = F32, .alpha = 1.0f, .beta = 1.0f},
        {.ta = 1, .adt = F32, .bdt = F16, .alpha = 1.0f, .beta = 0.0f},
    };
    check_all_kernels(shapes, (int)(sizeof shapes / sizeof shapes[0]), vars, (int)(sizeof vars / sizeof vars[0]));
}
END_TEST

START_TEST(chunks_when_k_is_huge) {
    /* packs hold at most 2^22 floats, so with K = 20000 C is done in chunks of rows (first
     * shape) or of columns (second) */
    static const shape shapes[] = {{.m = 250, .n = 3, .k = 20000, .batch = 1},
                                   {.m = 3, .n = 250, .k = 20000, .batch = 1}};
    static const variant vars[] = {{.tb = 1, .adt = F32, .bdt = F32, .alpha = 1.0f, .beta = 0.5f, .bias = 1}};
    check_all_kernels(shapes, 2, vars, 1);
}
END_TEST

START_TEST(batches) {
    /* small GEMMs (one thread), middling ones (whole GEMMs per thread), large ones (threads
     * share each GEMM, numbering their work across the batch), shared B, and K = 0
     * (C = beta C + bias) */
    static const shape shapes[] = {{.m = 7, .n = 9, .k = 5, .batch = 5},
                                   {.m = 33, .n = 17, .k = 23, .batch = 4},
                                   {.m = 130, .n = 70, .k = 90, .batch = 2},
                                   {.m = 150, .n = 130, .k = 257, .batch = 2},
                                   {.m = 5, .n = 7, .k = 0, .batch = 2}};
    static const variant vars[] = {
        {.adt = F32, .bdt = F32, .alpha = 1.0f, .beta = 0.0f, .bias = 1},
        {.tb = 1, .adt = F32, .bdt = F32, .alpha = 1.0f, .beta = 0.5f, .pad = 1, .shared_b = 1},
        {.ta = 1, .adt = F16, .bdt = F16, .alpha = -1.0f, .beta = 0.0f, .shared_b = 1},
        {.ta = 1, .tb = 1, .adt = F32, .bdt = F32, .alpha = 1.0f, .beta = 1.0f, .bias = 1},
    };
    check_all_kernels(shapes, (int)(sizeof shapes / sizeof shapes[0]), vars, (int)(sizeof vars / sizeof vars[0]));
}
END_TEST

START_TEST(f16_output) {
    /* C in f16: beta == 0 over NaN, "+=" (beta != 0), padded rows (the gaps stay as they
     * were), batches including a shared B, and both threading modes */
    static const shape shapes[] = {{.m = 1, .n = 1, .k = 1, .batch = 1},
                                   {.m = 13, .n = 17, .k = 9, .batch = 1},
                                   {.m = 67, .n = 45, .k = 131, .batch = 1},
                                   {.m = 33, .n = 17, .k = 23, .batch = 4},
                                   {.m = 90, .n = 70, .k = 140, .batch = 2}};
    static const variant vars[] = {
        {.adt = F16, .bdt = F16, .alpha = 1.0f, .beta = 0.0f, .bias = 1},
        {.ta = 1, .adt = F16, .bdt = F16, .alpha = -0.5f, .beta = 1.0f, .pad = 3},
        {.tb = 1, .adt = F16, .bdt = F16, .alpha = 1.0f, .beta = 0.5f, .bias = 1, .pad = 1, .shared_b = 1},
        {.ta = 1, .tb = 1, .adt = F32, .bdt = F32, .alpha = 1.0f, .beta = 0.0f, .pad = 2},
    };
    check_all_kernels_c(shapes, (int)(sizeof shapes / sizeof shapes[0]), vars, (int)(sizeof vars / sizeof vars[0]), F16);
}
END_TEST

START_TEST(f16_output_wide) {
    /* an f16 C wider than the f32 copy may be (2^23 floats): done in column chunks, B and
     * the bias offset per chunk, transposed or not */
    static const shape shapes[] = {{.m = 3, .n = 2800001, .k = 2, .batch = 1}};
    static const variant vars[] = {
        {.tb = 1, .adt = F16, .bdt = F16, .alpha = 1.0f, .beta = 0.5f, .bias = 1},
        {.ta = 1, .adt = F16, .bdt = F16, .alpha = 1.0f, .beta = 0.0f, .bias = 1},
    };
    check_all_kernels_c(shapes, 1, vars, 2, F16);
}
END_TEST

/* A few rows of C (at most CPU_GEMV_MAX_ROWS, as in decoding) take the GEMV path, which reads
 * B in place: tails of 8 in N and K, several K blocks, B of either layout wider than one
 * strip, enough work for threads, batches with a shared B; one row of C with N a multiple of
 * 8 (a decoded token's own path), wider than a strip of several rows, K blocks with a tail of
 * rows beyond its passes of eight; one row of C with K a multiple of 8 over several K blocks
 * and N a multiple of 32 but not of 64 (the 32-column steps of AVX-512's f16 pass; an f16
 * output head's 16-lane path, and its tail of rows); N a multiple of 16 but not of 32 (the
 * 16-column steps). */
static const shape few_rows_shapes[] = {{.m = 1, .n = 13, .k = 5, .batch = 1},    {.m = 2, .n = 40, .k = 257, .batch = 1},
                                        {.m = 3, .n = 2100, .k = 19, .batch = 1}, {.m = 4, .n = 67, .k = 600, .batch = 3},
                                        {.m = 1, .n = 1500, .k = 771, .batch = 1}, {.m = 4, .n = 2049, .k = 300, .batch = 1},
                                        {.m = 1, .n = 2568, .k = 523, .batch = 1}, {.m = 1, .n = 224, .k = 576, .batch = 1},
                                        {.m = 1, .n = 208, .k = 40, .batch = 1}};
static const variant few_rows_vars[] = {
    {.adt = F32, .bdt = F32, .alpha = 1.0f, .beta = 0.0f, .bias = 1},
    {.tb = 1, .adt = F32, .bdt = F32, .alpha = 1.0f, .beta = 0.0f, .bias = 1},
    {.adt = F32, .bdt = F16, .alpha = 1.0f, .beta = 0.0f, .bias = 1, .pad = 3},
    {.tb = 1, .adt = F32, .bdt = F16, .alpha = -0.5f, .beta = 0.75f, .pad = 1},
    {.ta = 1, .tb = 1, .adt = F16, .bdt = F32, .alpha = 2.0f, .beta = 1.0f, .bias = 1, .shared_b = 1},
    {.ta = 1, .adt = F16, .bdt = F16, .alpha = 1.0f, .beta = 0.5f, .pad = 2, .shared_b = 1},
};
#define N_FEW_SHAPES (int)(sizeof few_rows_shapes / sizeof few_rows_shapes[0])
#define N_FEW_VARS (int)(sizeof few_rows_vars / sizeof few_rows_vars[0])

START_TEST(few_rows_against_reference) {
    check_all_kernels_c(few_rows_shapes, N_FEW_SHAPES, few_rows_vars, N_FEW_VARS, F32);
    check_all_kernels_c(few_rows_shapes, N_FEW_SHAPES, few_rows_vars, N_FEW_VARS, F16);
}
END_TEST

/* The GEMV path gives the blocked GEMM's bits, so that a row decoded alone (with the KV
 * cache) equals the same row computed among many (without it). */
START_TEST(few_rows_same_bits_as_blocked) {
    const cpu_gemm_kernel *list[CPU_GEMM_MAX_KERNELS];
    int nk = cpu_gemm_kernels(list, CPU_GEMM_MAX_KERNELS);
    for (int q = 0; q < nk; q++) {
        ck_assert(cpu_gemm_use_kernel(list[q]->name));
        for (int i = 0; i < N_FEW_SHAPES; i++)
            for (int v = 0; v < N_FEW_VARS; v++) {
                gemm_case t;
                case_new(&t, &few_rows_shapes[i], &few_rows_vars[v], F32);
                kiln_gemm_args blocked = t.g;
                kiln_buf hc_blocked;
                blocked.c = case_c_copy(&t, &hc_blocked);
                ck_assert(cpu_gemv_applies(&t.g, list[q]));
                ck_assert(cpu_gemm(NULL, &t.g) == KILN_OK);
                cpu_gemm_set_gemv(0);
                ck_assert(cpu_gemm(NULL, &blocked) == KILN_OK);
                cpu_gemm_set_gemv(1);
                ck_assert_msg(!memcmp(t.hc.ptr, hc_blocked.ptr, t.hc.size), "%s: shape %d variant %d: other bits",
                              list[q]->name, i, v);
                free(hc_blocked.ptr);
                case_free(&t);
            }
    }
    cpu_gemm_use_kernel(list[0]->name);
}
END_TEST

START_TEST(reference_by_hand) {
    /* the oracle itself: [1 2 3; 4 5 6] [7 8; 9 10; 11 12] = [58 64; 139 154], times
     * alpha 2, plus beta 0.5 times C = 10, plus bias (1, -1) */
    float A[] = {1, 2, 3, 4, 5, 6}, B[] = {7, 8, 9, 10, 11, 12}, C[] = {10, 10, 10, 10}, bias[] = {1, -1};
    kiln_buf ba = {.ptr = A, .size = sizeof A}, bb = {.ptr = B, .size = sizeof B}, bc = {.ptr = C, .size = sizeof C},
             bbias = {.ptr = bias, .size = sizeof bias};
    kiln_gemm_args g = {.a = {.buf = &ba}, .b = {.buf = &bb}, .c = {.buf = &bc}, .bias = {.buf = &bbias},
                        .a_dtype = F32, .b_dtype = F32, .c_dtype = F32, .m = 2, .n = 2, .k = 3, .batch = 1, .lda = 3,
                        .ldb = 2, .ldc = 2, .alpha = 2.0f, .beta = 0.5f};
    ck_assert(cpu_gemm_reference(NULL, &g) == KILN_OK);
    const float want[] = {2 * 58 + 5 + 1, 2 * 64 + 5 - 1, 2 * 139 + 5 + 1, 2 * 154 + 5 - 1};
    for (int i = 0; i < 4; i++) ck_assert_float_eq(C[i], want[i]);
}
END_TEST

START_TEST(rejects_other_dtypes) {
    kiln_gemm_args g = {0};
    g.a_dtype = KILN_I32, g.b_dtype = F32, g.c_dtype = F32, g.m = g.n = g.k = g.batch = 1;
    ck_assert_int_eq(cpu_gemm(NULL, &g), KILN_ERR_DTYPE);
    g.a_dtype = F32, g.c_dtype = KILN_I32;
    ck_assert_int_eq(cpu_gemm(NULL, &g), KILN_ERR_DTYPE);
}
END_TEST

static void add_tests(Suite *s, TCase *tc) {
    (void)s;
    tcase_add_test(tc, reference_by_hand);
    tcase_add_test(tc, odd_sizes_all_transposes);
    tcase_add_test(tc, blocks_along_k_and_n);
    tcase_add_test(tc, chunks_when_k_is_huge);
    tcase_add_test(tc, batches);
    tcase_add_test(tc, f16_output);
    tcase_add_test(tc, f16_output_wide);
    tcase_add_test(tc, few_rows_against_reference);
    tcase_add_test(tc, few_rows_same_bits_as_blocked);
    tcase_add_test(tc, rejects_other_dtypes);
}

int main(int argc, char **argv) {
    cpu_gemm_set_backoff(0); /* exercise the threaded paths even on a busy machine */
    const cpu_gemm_kernel *list[CPU_GEMM_MAX_KERNELS];
    int nk = cpu_gemm_kernels(list, CPU_GEMM_MAX_KERNELS);
    printf("cpu gemm kernels:");
    for (int i = 0; i < nk; i++) printf(" %s (%dx%d)", list[i]->name, list[i]->mr, list[i]->nr);
    printf("\n");
    return kt_main(argc, argv, "cpu_gemm", add_tests, NULL, 0);
}
