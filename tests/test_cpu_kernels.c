/* The CPU backend's data-movement, elementwise and row kernels against plain references
 * written here as the obvious loops: bit for bit where the kernel promises the same
 * arithmetic (copies, adds, column sums), to a tight tolerance where it only reorders a
 * double accumulation (softmax, layernorm, cross-entropy, reductions); Adam bit for bit
 * against the contract's per-element formula. The sizes cross
 * the kernels' internal piece and block boundaries and their threading thresholds. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "cpu/cpu_gemm.h" /* cpu_gemm_set_backoff: keep the threaded paths on */
#include "cpu/cpu_internal.h"
#include "testutil.h"

static uint64_t g_rng = 987654321;
static float rnd(void) {
    g_rng = g_rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (float)((double)(g_rng >> 40) / (double)(1ULL << 24) * 2.0 - 1.0);
}

/* A host array posing as a CPU-backend buffer: the kernels only read ptr. */
typedef struct host_arr {
    kiln_buf buf;
    float *p;
} host_arr;

static host_arr *arr_new(int64_t n, float scale) {
    host_arr *a = malloc(sizeof *a);
    ck_assert(a != NULL);
    a->p = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
    ck_assert(a->p != NULL);
    for (int64_t i = 0; i < n; i++) a->p[i] = scale * rnd();
    a->buf.ptr = a->p;
    a->buf.size = (size_t)n * sizeof(float);
    return a;
}

static float *arr_copy(const host_arr *a, int64_t n) {
    float *c = malloc((size_t)(n > 0 ? n : 1) * sizeof *c);
    ck_assert(c != NULL);
    memcpy(c, a->p, (size_t)n * sizeof *c);
    return c;
}

static void arr_free(host_arr *a) {
    free(a->p);
    free(a);
}

static kiln_ref ref(host_arr *a) {
    kiln_ref r = {.buf = a ? &a->buf : NULL};
    return r;
}

static void expect_same_bits(const float *got, const float *want, int64_t n, const char *what) {
    for (int64_t i = 0; i < n; i++)
        ck_assert_msg(memcmp(&got[i], &want[i], sizeof(float)) == 0, "%s: element %lld is %.9g, expected %.9g", what,
                      (long long)i, got[i], want[i]);
}

/* max |got - want| / (|want| + floor) */
static void expect_close(const float *got, const double *want, int64_t n, double tol, double floor,
                         const char *what) {
    for (int64_t i = 0; i < n; i++) {
        double e = fabs(got[i] - want[i]) / (fabs(want[i]) + floor);
        ck_assert_msg(e <= tol, "%s: element %lld is %.9g, expected %.9g", what, (long long)i, got[i], want[i]);
    }
}

/* ---- copy_block and permute: bit for bit against per-element loops ---- */

static void check_copy_block(int64_t outer, int64_t src_axis, int64_t dst_axis, int64_t inner, int64_t src_start,
                             int64_t dst_start, int64_t len, int accumulate) {
    host_arr *src = arr_new(outer * src_axis * inner, 1), *dst = arr_new(outer * dst_axis * inner, 1);
    float *want = arr_copy(dst, outer * dst_axis * inner);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < len; i++)
            for (int64_t k = 0; k < inner; k++) {
                float s = src->p[(o * src_axis + src_start + i) * inner + k];
                float *d = &want[(o * dst_axis + dst_start + i) * inner + k];
                *d = accumulate ? *d + s : s;
            }
    kiln_copy_block_args a = {.src = ref(src), .dst = ref(dst), .outer = outer, .inner = inner, .src_axis = src_axis,
                              .dst_axis = dst_axis, .src_start = src_start, .dst_start = dst_start, .len = len,
                              .accumulate = accumulate, .dtype = KILN_F32};
    ck_assert_int_eq(cpu_copy_block(NULL, &a), KILN_OK);
    expect_same_bits(dst->p, want, outer * dst_axis * inner, "copy_block");
    arr_free(src), arr_free(dst), free(want);
}

START_TEST(copy_block_matches_loops) {
    for (int acc = 0; acc < 2; acc++) {
        check_copy_block(5, 7, 4, 3, 2, 1, 3, acc);       /* a middle block */
        check_copy_block(96, 384, 128, 1, 256, 0, 128, acc); /* a slice of the last axis (q/k/v) */
        check_copy_block(3, 20000, 25000, 1, 0, 4000, 20000, acc); /* runs longer than a piece */
        check_copy_block(1, 2, 3, 40000, 1, 2, 1, acc);     /* one long run */
        check_copy_block(4, 9, 9, 5, 0, 0, 9, acc);         /* the whole axis */
    }
}
END_TEST

static void check_permute(int64_t d0, int64_t d1, int64_t d2, int64_t d3, int accumulate) {
    int64_t n = d0 * d1 * d2 * d3;
    host_arr *x = arr_new(n, 1), *y = arr_new(n, 1);
    float *want = arr_copy(y, n);
    for (int64_t a = 0; a < d0; a++)
        for (int64_t b = 0; b < d1; b++)
            for (int64_t c = 0; c < d2; c++)
                for (int64_t d = 0; d < d3; d++) {
                    float v = x->p[((a * d1 + b) * d2 + c) * d3 + d];
                    float *w = &want[((a * d2 + c) * d1 + b) * d3 + d];
                    *w = accumulate ? *w + v : v;
                }
    kiln_permute_args args = {.x = ref(x), .y = ref(y), .d0 = d0, .d1 = d1, .d2 = d2, .d3 = d3,
                              .accumulate = accumulate, .dtype = KILN_F32};
    ck_assert_int_eq(cpu_permute(NULL, &args), KILN_OK);
    expect_same_bits(y->p, want, n, "permute");
    arr_free(x), arr_free(y), free(want);
}

START_TEST(permute_matches_loops) {
    for (int acc = 0; acc < 2; acc++) {
        check_permute(2, 3, 5, 7, acc);
        check_permute(3, 64, 4, 32, acc); /* split heads of a GPT batch */
        check_permute(1, 1, 1, 1, acc);
        check_permute(3, 1, 6, 2, acc);
    }
}
END_TEST

/* ---- elementwise: bit for bit ---- */

START_TEST(binary_matches_loops) {
    /* {n, nb}: nb == 1 is a scalar b, taken in blocks of a (one block, several) */
    const int64_t shapes[][2] = {{20000, 10000}, {40000, 40000}, {7, 1}, {20000, 1}, {12288, 128}, {1, 1}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const int64_t n = shapes[s][0], nb = shapes[s][1];
        for (int op = KILN_BIN_ADD; op <= KILN_BIN_DIV; op++) {
            host_arr *a = arr_new(n, 3), *b = arr_new(nb, 3), *out = arr_new(n, 1);
            float *want = malloc((size_t)n * sizeof *want);
            for (int64_t i = 0; i < n; i++) {
                float x = a->p[i], y = b->p[i % nb];
                want[i] = op == KILN_BIN_ADD ? x + y : op == KILN_BIN_SUB ? x - y : op == KILN_BIN_MUL ? x * y : x / y;
            }
            kiln_binary_args args = {.a = ref(a), .b = ref(b), .out = ref(out), .n = n, .nb = nb,
                                     .op = (kiln_binary_op)op, .dtype = KILN_F32};
            ck_assert_int_eq(cpu_binary(NULL, &args), KILN_OK);
            expect_same_bits(out->p, want, n, "binary");
            arr_free(a), arr_free(b), arr_free(out), free(want);
        }
    }
}
END_TEST

START_TEST(axpby_matches_loops) {
    const int64_t n = 50001;
    for (int with_x = 0; with_x < 2; with_x++)
        for (int zero_beta = 0; zero_beta < 2; zero_beta++) {
            host_arr *x = arr_new(n, 1), *y = arr_new(n, 1), *num = arr_new(1, 1), *den = arr_new(1, 1);
            num->p[0] = 3.0f, den->p[0] = 7.0f;
            if (zero_beta)
                for (int64_t i = 0; i < n; i++) y->p[i] = NAN; /* beta == 0 must not read y */
            float *want = arr_copy(y, n);
            const float alpha = 0.37f * 3.0f / 7.0f, beta = zero_beta ? 0.0f : -1.25f;
            for (int64_t i = 0; i < n; i++) {
                float xv = with_x ? x->p[i] : 1.0f;
                want[i] = zero_beta ? alpha * xv : alpha * xv + beta * want[i];
            }
            kiln_axpby_args a = {.x = with_x ? ref(x) : ref(NULL), .y = ref(y), .num = ref(num), .den = ref(den),
                                 .n = n, .alpha = 0.37f, .beta = beta, .dtype = KILN_F32};
            ck_assert_int_eq(cpu_axpby(NULL, &a), KILN_OK);
            expect_same_bits(y->p, want, n, "axpby");
            arr_free(x), arr_free(y), arr_free(num), arr_free(den), free(want);
        }
}
END_TEST

START_TEST(sum_rows_matches_column_loops) {
    const int64_t shapes[][2] = {{300, 200}, {5, 131}, {1000, 1}, {1, 70}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const int64_t rows = shapes[s][0], cols = shapes[s][1];
        host_arr *x = arr_new(rows * cols, 1), *out = arr_new(cols, 1);
        float *want = arr_copy(out, cols);
        for (int64_t j = 0; j < cols; j++) { /* down each column, in double */
            double acc = 0;
            for (int64_t i = 0; i < rows; i++) acc += x->p[i * cols + j];
            want[j] += 0.5f * (float)acc;
        }
        kiln_sum_rows_args a = {.x = ref(x), .out = ref(out), .rows = rows, .cols = cols, .alpha = 0.5f,
                                .dtype = KILN_F32};
        ck_assert_int_eq(cpu_sum_rows(NULL, &a), KILN_OK);
        expect_same_bits(out->p, want, cols, "sum_rows");
        arr_free(x), arr_free(out), free(want);
    }
}
END_TEST

START_TEST(fill_zero_and_values) {
    host_arr *p = arr_new(1000, 1);
    kiln_fill_args f = {.dst = ref(p), .n = 1000, .dtype = KILN_F32, .value = 0.0f};
    ck_assert_int_eq(cpu_fill(NULL, &f), KILN_OK);
    for (int i = 0; i < 1000; i++) ck_assert(p->p[i] == 0.0f && !signbit(p->p[i]));
    f.value = -0.0f; /* not all-zero bits: filled as a value */
    ck_assert_int_eq(cpu_fill(NULL, &f), KILN_OK);
    for (int i = 0; i < 1000; i++) ck_assert(p->p[i] == 0.0f && signbit(p->p[i]));
    f.value = 2.5f;
    f.n = 999;
    ck_assert_int_eq(cpu_fill(NULL, &f), KILN_OK);
    for (int i = 0; i < 999; i++) ck_assert(p->p[i] == 2.5f);
    ck_assert(signbit(p->p[999]));
    arr_free(p);
}
END_TEST

/* ---- reductions: close to a double loop, and the same bits on any thread count ---- */

START_TEST(reduce_is_thread_count_independent) {
    const int64_t sizes[] = {1, 7, 63, 64, 65, 1000, 300001};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        const int64_t n = sizes[s];
        host_arr *x = arr_new(n, 1), *out = arr_new(2, 1);
        double sum = 0, sumsq = 0;
        for (int64_t i = 0; i < n; i++) sum += x->p[i], sumsq += (double)x->p[i] * x->p[i];
        float got[2][2];
        for (int threads = 1; threads <= 2; threads++) {
#ifdef _OPENMP
            omp_set_num_threads(threads);
#endif
            kiln_reduce_args r = {.x = ref(x), .out = ref(out), .n = n, .alpha = 0.25f, .dtype = KILN_F32};
            ck_assert_int_eq(cpu_reduce(NULL, &r), KILN_OK);
            out->p[1] = 1.0f;
            kiln_reduce_args q = {.x = ref(x), .out = {.buf = &out->buf, .off = sizeof(float)}, .n = n, .alpha = 1.0f,
                                  .square = 1, .dtype = KILN_F32};
            ck_assert_int_eq(cpu_reduce(NULL, &q), KILN_OK);
            got[threads - 1][0] = out->p[0], got[threads - 1][1] = out->p[1];
        }
        double want[2] = {0.25 * sum, 1.0 + sumsq};
        expect_close(got[0], want, 2, 1e-6, 1e-6, "reduce");
        expect_same_bits(got[1], got[0], 2, "reduce on 2 threads vs 1");
        arr_free(x), arr_free(out);
    }
#ifdef _OPENMP
    omp_set_num_threads(omp_get_num_procs());
#endif
}
END_TEST

/* ---- softmax: against a double-precision loop per row ---- */

static void check_softmax(int64_t batch, int64_t heads, int64_t tq, int64_t tk, int causal, int with_lengths,
                          int with_add, float scale, float temperature) {
    const int64_t n = batch * heads * tq * tk;
    host_arr *x = arr_new(n, 4), *add = with_add ? arr_new(n, 2) : NULL, *y = arr_new(n, 1);
    host_arr *lengths = arr_new(batch, 1);
    int32_t *len = (int32_t *)(void *)lengths->p;
    for (int64_t b = 0; b < batch; b++) len[b] = (int32_t)((b * 5 + 3) % (tk + 1)); /* 0 included */
    kiln_softmax_args a = {0};
    a.x = ref(x), a.add = ref(add), a.lengths = with_lengths ? ref(lengths) : ref(NULL), a.y = ref(y);
    a.batch = batch, a.heads = heads, a.tq = tq, a.tk = tk;
    a.scale = scale, a.temperature = temperature, a.causal = causal;
    ck_assert_int_eq(cpu_softmax_fwd(NULL, &a), KILN_OK);
    double *want = malloc((size_t)tk * sizeof *want);
    for (int64_t r = 0; r < batch * heads * tq; r++) {
        const int64_t b = r / (heads * tq), i = r % tq;
        double zmax = -INFINITY, sum = 0;
        for (int64_t j = 0; j < tk; j++) {
            int masked = (causal && j > i + (tk - tq)) || (with_lengths && j >= len[b]);
            double z = ((double)scale * x->p[r * tk + j] + (add ? add->p[r * tk + j] : 0.0)) / temperature;
            want[j] = masked ? NAN : z;
            if (!masked && z > zmax) zmax = z;
        }
        for (int64_t j = 0; j < tk; j++) {
            want[j] = isnan(want[j]) ? 0.0 : exp(want[j] - zmax);
            sum += want[j];
        }
        for (int64_t j = 0; j < tk; j++) {
            want[j] = sum > 0 ? want[j] / sum : 0.0;
            if (want[j] == 0.0) /* masked keys (and all-masked rows) are exactly 0 */
                ck_assert_msg(y->p[r * tk + j] == 0.0f, "softmax row %lld key %lld: %g", (long long)r, (long long)j,
                              y->p[r * tk + j]);
        }
        expect_close(y->p + r * tk, want, tk, 2e-6, 1e-30, "softmax");
    }
    free(want);
    arr_free(x), arr_free(y), arr_free(lengths);
    if (add) arr_free(add);
}

START_TEST(softmax_matches_double_rows) {
    check_softmax(2, 3, 64, 64, 1, 0, 0, 0.17677669f, 1.0f); /* GPT attention */
    check_softmax(3, 2, 5, 9, 1, 1, 1, 1.0f, 0.7f);          /* cached keys, lengths, add */
    check_softmax(2, 3, 9, 5, 1, 0, 0, 2.0f, 1.0f);          /* tq > tk: leading rows see nothing */
    check_softmax(4, 1, 3, 37, 0, 1, 0, 1.0f, 2.0f);         /* lengths only, one of them 0 */
    check_softmax(1, 1, 2, 1, 0, 0, 1, 1.0f, 1.0f);
}
END_TEST

/* ---- layernorm forward and backward: against double loops ---- */

START_TEST(layernorm_matches_double_rows) {
    const int64_t shapes[][2] = {{96, 128}, {3, 13}, {5, 1}, {2, 300}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const int64_t rows = shapes[s][0], cols = shapes[s][1], n = rows * cols;
        host_arr *x = arr_new(n, 2), *w = arr_new(cols, 1), *b = arr_new(cols, 1), *y = arr_new(n, 1);
        host_arr *mean = arr_new(rows, 1), *rstd = arr_new(rows, 1), *dy = arr_new(n, 1), *dx = arr_new(n, 1);
        host_arr *dw = arr_new(cols, 1), *db = arr_new(cols, 1);
        for (int64_t i = 0; i < n; i++) x->p[i] += 3.0f; /* an offset mean, as residual streams have */
        float *dx0 = arr_copy(dx, n), *dw0 = arr_copy(dw, cols), *db0 = arr_copy(db, cols);
        kiln_norm_args a = {0};
        a.x = ref(x), a.weight = ref(w), a.bias = ref(b), a.y = ref(y), a.mean = ref(mean), a.rstd = ref(rstd);
        a.dy = ref(dy), a.dx = ref(dx), a.dweight = ref(dw), a.dbias = ref(db);
        a.rows = rows, a.cols = cols, a.eps = 1e-5f;
        ck_assert_int_eq(cpu_norm_fwd(NULL, &a), KILN_OK);
        ck_assert_int_eq(cpu_norm_bwd(NULL, &a), KILN_OK);
        double *want_y = malloc((size_t)n * sizeof(double)), *want_dx = malloc((size_t)n * sizeof(double));
        double *want_dw = calloc((size_t)cols, sizeof(double)), *want_db = calloc((size_t)cols, sizeof(double));
        for (int64_t r = 0; r < rows; r++) {
            const float *xr = x->p + r * cols, *g = dy->p + r * cols;
            double m = 0, v = 0, sg = 0, sgx = 0;
            for (int64_t j = 0; j < cols; j++) m += xr[j];
            m /= (double)cols;
            for (int64_t j = 0; j < cols; j++) v += (xr[j] - m) * (xr[j] - m);
            const double rs = 1.0 / sqrt(v / (double)cols + 1e-5);
            for (int64_t j = 0; j < cols; j++) {
                const double xhat = (xr[j] - m) * rs, gw = (double)g[j] * w->p[j];
                want_y[r * cols + j] = xhat * w->p[j] + b->p[j];
                sg += gw, sgx += gw * xhat;
                want_dw[j] += g[j] * xhat, want_db[j] += g[j];
            }
            for (int64_t j = 0; j < cols; j++) {
                const double xhat = (xr[j] - m) * rs, gw = (double)g[j] * w->p[j];
                want_dx[r * cols + j] = dx0[r * cols + j] + rs * (gw - sg / (double)cols - xhat * sgx / (double)cols);
            }
        }
        for (int64_t j = 0; j < cols; j++) want_dw[j] += dw0[j], want_db[j] += db0[j];
        /* y and dx are sums of O(1) f32 terms: an absolute bound (floor 1) */
        expect_close(y->p, want_y, n, 2e-6, 1.0, "layernorm y");
        expect_close(dx->p, want_dx, n, 2e-6, 1.0, "layernorm dx");
        expect_close(dw->p, want_dw, cols, 2e-6, 1.0, "layernorm dweight");
        expect_close(db->p, want_db, cols, 2e-6, 1.0, "layernorm dbias");
        free(want_y), free(want_dx), free(want_dw), free(want_db), free(dx0), free(dw0), free(db0);
        arr_free(x), arr_free(w), arr_free(b), arr_free(y), arr_free(mean), arr_free(rstd);
        arr_free(dy), arr_free(dx), arr_free(dw), arr_free(db);
    }
}
END_TEST

/* ---- cross-entropy: against double loops ---- */

START_TEST(xent_matches_double_rows) {
    const int64_t rows = 37, vocab = 600; /* vocab over two exp chunks */
    host_arr *z = arr_new(rows * vocab, 8), *t = arr_new(rows, 1), *loss = arr_new(1, 1), *count = arr_new(1, 1);
    host_arr *lse = arr_new(rows, 1), *dloss = arr_new(1, 1), *dz = arr_new(rows * vocab, 1);
    int32_t *tg = (int32_t *)(void *)t->p;
    for (int64_t r = 0; r < rows; r++) tg[r] = r % 5 == 4 ? -1 : (int32_t)((r * 97) % vocab);
    dloss->p[0] = 1.5f;
    float *dz0 = arr_copy(dz, rows * vocab);
    const float s = 0.1f;
    kiln_xent_args a = {0};
    a.logits = ref(z), a.targets = ref(t), a.loss = ref(loss), a.count = ref(count), a.lse = ref(lse);
    a.dloss = ref(dloss), a.dlogits = ref(dz);
    a.rows = rows, a.vocab = vocab, a.smoothing = s, a.ignore_index = -1;
    ck_assert_int_eq(cpu_xent_fwd(NULL, &a), KILN_OK);
    ck_assert_int_eq(cpu_xent_bwd(NULL, &a), KILN_OK);
    double total = 0, valid = 0;
    double *want_dz = malloc((size_t)(rows * vocab) * sizeof(double));
    for (int64_t r = 0; r < rows; r++) {
        const float *zr = z->p + r * vocab;
        double zmax = -INFINITY, se = 0, sz = 0;
        for (int64_t v = 0; v < vocab; v++) zmax = zr[v] > zmax ? zr[v] : zmax;
        for (int64_t v = 0; v < vocab; v++) se += exp(zr[v] - zmax), sz += zr[v];
        const double l = zmax + log(se);
        if (tg[r] >= 0) {
            total += (1 - s) * (l - zr[tg[r]]) + s * (l - sz / (double)vocab);
            valid += 1;
            ck_assert_msg(fabs(lse->p[r] - l) <= 1e-6 * fabs(l), "lse row %lld: %.9g vs %.9g", (long long)r, lse->p[r], l);
        }
        for (int64_t v = 0; v < vocab; v++) want_dz[r * vocab + v] = dz0[r * vocab + v];
    }
    for (int64_t r = 0; r < rows; r++) {
        if (tg[r] < 0) continue;
        const float *zr = z->p + r * vocab;
        for (int64_t v = 0; v < vocab; v++)
            want_dz[r * vocab + v] += 1.5 / valid * (exp(zr[v] - (double)lse->p[r]) - s / (double)vocab - (v == tg[r] ? 1 - s : 0));
    }
    const double want_loss = total / valid, want_count = valid;
    expect_close(loss->p, &want_loss, 1, 1e-6, 0, "xent loss");
    expect_close(count->p, &want_count, 1, 0, 0, "xent count");
    expect_close(dz->p, want_dz, rows * vocab, 1e-5, 1e-4, "xent dlogits");
    free(want_dz), free(dz0);
    arr_free(z), arr_free(t), arr_free(loss), arr_free(count), arr_free(lse), arr_free(dloss), arr_free(dz);
}
END_TEST

/* ---- Adam: bit for bit against the contract's per-element formula ---- */

static void adam_plain(const kiln_adam_args *a, float coef, float g, float *p, float *m, float *v) {
    float pv = *p;
    g *= coef;
    if (!a->decoupled && a->weight_decay != 0.0f) g += a->weight_decay * pv;
    float mv = a->beta1 * *m + (1.0f - a->beta1) * g;
    float vv = a->beta2 * *v + (1.0f - a->beta2) * g * g;
    if (a->decoupled) pv -= a->lr * a->weight_decay * pv;
    pv -= a->lr * (mv / a->bc1) / (sqrtf(vv / a->bc2) + a->eps);
    *m = mv, *v = vv, *p = pv;
}

START_TEST(adam_matches_plain_formula) {
    const int64_t n = 40001; /* blocks, a tail, the threaded path */
    for (int variant = 0; variant < 4; variant++) {
        const int decoupled = variant & 1, f16 = variant >> 1;
        host_arr *p = arr_new(n, 1), *g = arr_new(n, 1), *m = arr_new(n, 0.1f), *v = arr_new(n, 0.1f);
        host_arr *coef = arr_new(1, 1), *half = arr_new(n / 2 + 1, 1);
        for (int64_t i = 0; i < n; i++) v->p[i] = fabsf(v->p[i]);
        uint16_t *g16 = (uint16_t *)(void *)g->p, *h = (uint16_t *)(void *)half->p;
        if (f16)
            for (int64_t i = 0; i < n; i++) g16[i] = kiln_f32_to_f16(0.5f * rnd());
        coef->p[0] = 0.8f;
        float *wp = arr_copy(p, n), *wm = arr_copy(m, n), *wv = arr_copy(v, n);
        kiln_adam_args a = {0};
        a.param = ref(p), a.grad = ref(g), a.m = ref(m), a.v = ref(v), a.coef = ref(coef);
        a.half_copy = f16 ? ref(half) : ref(NULL);
        a.grad_dtype = f16 ? KILN_F16 : KILN_F32;
        a.n = n, a.lr = 3e-3f, a.beta1 = 0.9f, a.beta2 = 0.95f, a.eps = 1e-8f, a.weight_decay = 0.1f;
        a.bc1 = 1.0f - powf(0.9f, 3.0f), a.bc2 = 1.0f - powf(0.95f, 3.0f), a.decoupled = decoupled;
        for (int64_t i = 0; i < n; i++)
            adam_plain(&a, 0.8f, f16 ? kiln_f16_to_f32(g16[i]) : g->p[i], &wp[i], &wm[i], &wv[i]);
        ck_assert_int_eq(cpu_adam(NULL, &a), KILN_OK);
        expect_same_bits(p->p, wp, n, "adam param");
        expect_same_bits(m->p, wm, n, "adam m");
        expect_same_bits(v->p, wv, n, "adam v");
        if (f16)
            for (int64_t i = 0; i < n; i++) ck_assert(h[i] == kiln_f32_to_f16(wp[i]));
        free(wp), free(wm), free(wv);
        arr_free(p), arr_free(g), arr_free(m), arr_free(v), arr_free(coef), arr_free(half);
    }
}
END_TEST

static void add_tests(Suite *s, TCase *tc) {
    (void)s;
    tcase_add_test(tc, copy_block_matches_loops);
    tcase_add_test(tc, permute_matches_loops);
    tcase_add_test(tc, binary_matches_loops);
    tcase_add_test(tc, axpby_matches_loops);
    tcase_add_test(tc, sum_rows_matches_column_loops);
    tcase_add_test(tc, fill_zero_and_values);
    tcase_add_test(tc, reduce_is_thread_count_independent);
    tcase_add_test(tc, softmax_matches_double_rows);
    tcase_add_test(tc, layernorm_matches_double_rows);
    tcase_add_test(tc, xent_matches_double_rows);
    tcase_add_test(tc, adam_matches_plain_formula);
}

int main(int argc, char **argv) {
    cpu_gemm_set_backoff(0); /* threaded paths on, even on a busy machine */
    return kt_main(argc, argv, "cpu_kernels", add_tests, NULL, 0);
}
