/* Backward rules that overwrite a fresh gradient instead of zero-filling it and adding
 * (engine/ops/op_grad.h). The op tests feed ops persistent tensors, whose gradients are
 * always accumulated into; here every op instead reads arena intermediates, whose first
 * gradient is written outright, in an arena poisoned with NaN so that an element the
 * overwrite missed shows. Each graph is run twice: on intermediates t = 1 * p (the
 * overwrite path) and on the persistent p themselves (the accumulate path); the gradients
 * of p must agree bit for bit. Inputs used twice and views of an intermediate check that
 * a later rule accumulates onto a complete first write. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define N_PARAMS 3

typedef kiln_tensor *(*graph_fn)(kiln_tensor *const *in);

/* Fills the arena with NaN: the next step's tensors start as garbage. */
static void poison_arena(kiln_ctx *ctx) {
    for (int round = 0; round < 2; round++) { /* the first reset may resize the arena */
        int64_t n = 1 << 18;
        kiln_tensor *junk = kiln_tensor_temp(ctx, KILN_F32, 1, &n);
        ck_assert(junk != NULL);
        ck_assert_int_eq(kiln_fill(junk, NAN), KILN_OK);
        kiln_step_reset(ctx);
    }
}

/* loss = sum(graph(in) * w) with a fixed non-uniform w, so every output element sends a
 * different gradient back. */
static kiln_tensor *weighted_loss(kiln_ctx *ctx, kiln_tensor *y) {
    ck_assert_msg(y != NULL, "graph: %s", kiln_error_message());
    int64_t n = kiln_numel(y);
    float *w = malloc((size_t)n * sizeof *w);
    for (int64_t i = 0; i < n; i++) w[i] = (float)((i * 37) % 11) - 4.5f;
    kiln_tensor *wt = kiln_tensor_temp(ctx, KILN_F32, y->ndim, y->shape);
    ck_assert(wt != NULL && kiln_upload_f32(wt, w, n) == KILN_OK);
    free(w);
    return kiln_sum(kiln_mul(y, wt));
}

/* The gradients of the params through graph, on intermediates (via_temp) or directly. */
static float **grads_of(kiln_tensor **params, int count, graph_fn graph, int via_temp) {
    kiln_ctx *ctx = params[0]->ctx;
    poison_arena(ctx);
    ck_assert_int_eq(kiln_zero_grad(params, count), KILN_OK);
    kiln_tensor *in[N_PARAMS];
    for (int i = 0; i < count; i++) in[i] = via_temp ? kiln_scale(params[i], 1.0f) : params[i];
    ck_assert_int_eq(kiln_backward(weighted_loss(ctx, graph(in)), 1.0f), KILN_OK);
    float **g = malloc((size_t)count * sizeof *g);
    for (int i = 0; i < count; i++) {
        int64_t n = kiln_numel(params[i]);
        g[i] = malloc((size_t)n * sizeof(float));
        ck_assert(kiln_download_f32(kiln_grad(params[i]), g[i], n) == KILN_OK);
    }
    kiln_step_reset(ctx);
    return g;
}

/* Params of the given shapes (up to 3 dims each), random, requiring grad. */
static void check_graph(const char *name, int count, const int64_t shapes[][4], graph_fn graph) {
    kiln_ctx *ctx = kt_ctx();
    kiln_tensor *params[N_PARAMS];
    for (int i = 0; i < count; i++) {
        int ndim = (int)shapes[i][0];
        int64_t n = 1;
        for (int d = 0; d < ndim; d++) n *= shapes[i][1 + d];
        float *v = malloc((size_t)n * sizeof *v);
        for (int64_t k = 0; k < n; k++) v[k] = sinf((float)(k * 7 + i * 13)) * 1.5f;
        params[i] = kt_tensor(ctx, KILN_F32, ndim, &shapes[i][1], v);
        kiln_set_requires_grad(params[i], 1);
        free(v);
    }
    float **fresh = grads_of(params, count, graph, 1), **acc = grads_of(params, count, graph, 0);
    for (int i = 0; i < count; i++) {
        int64_t n = kiln_numel(params[i]);
        for (int64_t k = 0; k < n; k++)
            ck_assert_msg(!isnan(fresh[i][k]) && (fresh[i][k] == acc[i][k]),
                          "%s: d param %d [%lld]: %.9g on intermediates, %.9g on params", name, i, (long long)k,
                          fresh[i][k], acc[i][k]);
        free(fresh[i]), free(acc[i]);
        kiln_tensor_free(params[i]);
    }
    free(fresh), free(acc);
}

static kiln_tensor *g_matmul(kiln_tensor *const *in) { return kiln_matmul(in[0], in[1], in[2], 0, 0); }
static kiln_tensor *g_matmul_tt(kiln_tensor *const *in) { return kiln_matmul(in[0], in[1], NULL, 1, 1); }
static kiln_tensor *g_matmul_self(kiln_tensor *const *in) { return kiln_matmul(in[0], in[0], NULL, 0, 1); }
static kiln_tensor *g_matmul_batched(kiln_tensor *const *in) { return kiln_matmul(in[0], in[1], NULL, 0, 1); }
/* A 3-D and transposed, B shared: dB accumulates batch by batch */
static kiln_tensor *g_matmul_shared_ta(kiln_tensor *const *in) { return kiln_matmul(in[0], in[1], NULL, 1, 0); }
static kiln_tensor *g_add_sub(kiln_tensor *const *in) { return kiln_sub(kiln_add(in[0], in[1]), in[2]); }
static kiln_tensor *g_add_self(kiln_tensor *const *in) { return kiln_add(in[0], in[0]); }
static kiln_tensor *g_mul(kiln_tensor *const *in) { return kiln_mul(kiln_mul(in[0], in[1]), in[2]); }
static kiln_tensor *g_mul_self(kiln_tensor *const *in) { return kiln_mul(in[0], in[0]); }
static kiln_tensor *g_scale(kiln_tensor *const *in) { return kiln_scale(kiln_scale(in[0], -2.0f), 0.5f); }
static kiln_tensor *g_heads(kiln_tensor *const *in) { return kiln_merge_heads(kiln_split_heads(in[0], 3)); }
static kiln_tensor *g_concat(kiln_tensor *const *in) {
    kiln_tensor *xs[3] = {in[0], in[1], in[0]};
    return kiln_concat(xs, 3, 1);
}
static kiln_tensor *g_cast(kiln_tensor *const *in) { return kiln_cast(kiln_cast(in[0], KILN_F16), KILN_F32); }
static kiln_tensor *g_sum_mean(kiln_tensor *const *in) {
    return kiln_add(kiln_scale(in[1], 1.0f), kiln_add(kiln_sum(in[0]), kiln_mean(in[0])));
}
static kiln_tensor *g_global_norm(kiln_tensor *const *in) { return kiln_global_norm(in, 2); }
/* an intermediate and a view of it into one op, and a slice (which accumulates) */
static kiln_tensor *g_view(kiln_tensor *const *in) {
    int64_t shape[2] = {4, 6};
    kiln_tensor *v = kiln_reshape(in[0], 2, shape);
    return kiln_add(kiln_matmul(v, in[1], NULL, 0, 0), kiln_slice(kiln_matmul(v, in[1], NULL, 0, 0), 1, 0, 5));
}

START_TEST(fresh_gradients_match_accumulated) {
    const int64_t mm[][4] = {{2, 5, 7}, {2, 7, 3}, {1, 3}};
    check_graph("matmul + bias", 3, mm, g_matmul);
    const int64_t mm_tt[][4] = {{2, 7, 5}, {2, 3, 7}};
    check_graph("matmul trans_a trans_b", 2, mm_tt, g_matmul_tt);
    const int64_t self[][4] = {{2, 6, 4}};
    check_graph("matmul x x^T", 1, self, g_matmul_self);
    const int64_t bat[][4] = {{3, 2, 5, 4}, {3, 2, 6, 4}};
    check_graph("batched matmul", 2, bat, g_matmul_batched);
    const int64_t sta[][4] = {{3, 3, 4, 5}, {2, 4, 6}};
    check_graph("matmul shared B, A transposed", 2, sta, g_matmul_shared_ta);
    const int64_t add[][4] = {{3, 2, 3, 4}, {3, 2, 3, 4}, {1, 4}};
    check_graph("add/sub with broadcast", 3, add, g_add_sub);
    check_graph("mul with broadcast", 3, add, g_mul);
    check_graph("add x x", 1, self, g_add_self);
    check_graph("mul x x", 1, self, g_mul_self);
    check_graph("scale", 1, self, g_scale);
    const int64_t heads[][4] = {{3, 2, 5, 6}};
    check_graph("split/merge heads", 1, heads, g_heads);
    const int64_t cat[][4] = {{3, 2, 3, 4}, {3, 2, 5, 4}};
    check_graph("concat x y x", 2, cat, g_concat);
    check_graph("cast f16 and back", 1, self, g_cast);
    const int64_t sums[][4] = {{2, 3, 4}, {0}};
    check_graph("sum and mean", 2, sums, g_sum_mean);
    check_graph("global norm", 2, add, g_global_norm);
    const int64_t view[][4] = {{2, 3, 8}, {2, 6, 5}};
    check_graph("an intermediate and its view", 2, view, g_view);
}
END_TEST

static void add_tests(Suite *s, TCase *tc) {
    (void)s;
    tcase_add_test(tc, fresh_gradients_match_accumulated);
}

int main(int argc, char **argv) { return kt_main(argc, argv, "cpu_fresh_grads", add_tests, NULL, 0); }
