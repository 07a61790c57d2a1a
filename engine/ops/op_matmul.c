/* matmul: C = op(A) op(B) (+ bias), batched, with its backward.
 *
 * A, B, the bias and C share one dtype. f16 operands give an f16 C: the GEMM accumulates
 * in f32 and rounds once on store, and the gradients are f16 like their tensors. */
#include <stdio.h>

#include "core/internal.h"
#include "ops/op_grad.h"

/* One GEMM call over stored matrices: A is rows_a x cols_a (row-major), etc. */
static kiln_status gemm(kiln_ctx *ctx, const kiln_tensor *a, int ta, const kiln_tensor *b, int tb,
                        kiln_tensor *c, const kiln_tensor *bias, int64_t m, int64_t n, int64_t k,
                        int64_t batch, int64_t stride_a, int64_t stride_b, float beta) {
    kiln_gemm_args g = {0};
    g.a = kiln_ref_of(a);
    g.b = kiln_ref_of(b);
    g.c = kiln_ref_of(c);
    g.bias = kiln_ref_of(bias);
    g.a_dtype = a->dtype;
    g.b_dtype = b->dtype;
    g.c_dtype = c->dtype;
    g.m = m, g.n = n, g.k = k, g.batch = batch;
    g.trans_a = ta, g.trans_b = tb;
    g.lda = ta ? m : k;
    g.ldb = tb ? k : n;
    g.ldc = n;
    g.stride_a = stride_a;
    g.stride_b = stride_b;
    g.stride_c = m * n;
    g.alpha = 1.0f;
    g.beta = beta;
    return KILN_CALL(ctx, gemm, &g);
}

/* Geometry of a matmul, shared by forward and backward. */
typedef struct mm_dims {
    int64_t m, n, k, batch;
    int shared_b; /* B is 2-D and used by every batch */
} mm_dims;

static int dims_of(const kiln_tensor *a, const kiln_tensor *b, int ta, int tb, mm_dims *d) {
    char sa[64], sb[64];
    if (a->ndim < 2 || b->ndim < 2)
        return kiln_set_error(KILN_ERR_SHAPE, "matmul: operands need at least 2 dims, got %s and %s",
                              kiln_shape_str(a, sa, sizeof sa), kiln_shape_str(b, sb, sizeof sb));
    int64_t ar = a->shape[a->ndim - 2], ac = a->shape[a->ndim - 1];
    int64_t br = b->shape[b->ndim - 2], bc = b->shape[b->ndim - 1];
    d->m = ta ? ac : ar;
    d->k = ta ? ar : ac;
    int64_t bk = tb ? bc : br;
    d->n = tb ? br : bc;
    if (bk != d->k)
        return kiln_set_error(KILN_ERR_SHAPE, "matmul: inner dims differ: %s%s times %s%s (%lld vs %lld)",
                              kiln_shape_str(a, sa, sizeof sa), ta ? "^T" : "",
                              kiln_shape_str(b, sb, sizeof sb), tb ? "^T" : "", (long long)d->k,
                              (long long)bk);
    d->batch = kiln_shape_numel(a->ndim - 2, a->shape);
    d->shared_b = b->ndim == 2;
    if (!d->shared_b) {
        int same = a->ndim == b->ndim;
        for (int i = 0; same && i < a->ndim - 2; i++) same = a->shape[i] == b->shape[i];
        if (!same)
            return kiln_set_error(KILN_ERR_SHAPE, "matmul: batch dims differ: %s and %s (B may also be 2-D)",
                                  kiln_shape_str(a, sa, sizeof sa), kiln_shape_str(b, sb, sizeof sb));
    }
    return kiln_check_same_dtype("matmul", a, "a", b, "b");
}

/* op(A) op(B) into c with beta; when B is shared and A is not transposed, the batch folds
 * into M: one large GEMM instead of many small ones. */
static kiln_status forward_gemm(kiln_ctx *ctx, const kiln_tensor *a, const kiln_tensor *b,
                                kiln_tensor *c, const kiln_tensor *bias, int ta, int tb,
                                const mm_dims *d) {
    if (d->shared_b && !ta)
        return gemm(ctx, a, 0, b, tb, c, bias, d->m * d->batch, d->n, d->k, 1, 0, 0, 0.0f);
    return gemm(ctx, a, ta, b, tb, c, bias, d->m, d->n, d->k, d->batch, d->m * d->k,
                d->shared_b ? 0 : d->k * d->n, 0.0f);
}

static kiln_status matmul_backward(kiln_tape_rec *rec) {
    kiln_tensor *a = rec->in[0], *b = rec->in[1], *bias = rec->n_in > 2 ? rec->in[2] : NULL;
    kiln_tensor *dc = rec->out->grad;
    kiln_ctx *ctx = dc->ctx;
    int ta = (int)rec->i[0], tb = (int)rec->i[1];
    mm_dims d;
    if (dims_of(a, b, ta, tb, &d)) return kiln_error_status();
    int64_t m = d.m, n = d.n, k = d.k, mn = m * n;
    kiln_status s = KILN_OK;
    /* each GEMM below writes all of dA (dB): beta 0 overwrites a fresh gradient (op_grad.h) */
    int fresh;
    kiln_tensor *da = op_grad_overwrite(a, &fresh);
    if (kiln_requires_grad(a) && !da) return kiln_error_status();
    if (da) {
        const float beta = fresh ? 0.0f : 1.0f;
        if (!ta) /* dA[M,K] += dC op(B)^T */
            s = d.shared_b ? gemm(ctx, dc, 0, b, !tb, da, NULL, m * d.batch, k, n, 1, 0, 0, beta)
                           : gemm(ctx, dc, 0, b, !tb, da, NULL, m, k, n, d.batch, mn, k * n, beta);
        else /* A stored [K,M]: dA += op(B) dC^T */
            s = gemm(ctx, b, tb, dc, 1, da, NULL, k, m, n, d.batch, d.shared_b ? 0 : k * n, mn, beta);
        if (s) return s;
    }
    kiln_tensor *db = op_grad_overwrite(b, &fresh);
    if (kiln_requires_grad(b) && !db) return kiln_error_status();
    if (db) {
        const float beta = fresh ? 0.0f : 1.0f;
        if (d.shared_b && !ta) {
            /* every batch adds into the one dB: fold the batch into the contraction */
            s = tb ? gemm(ctx, dc, 1, a, 0, db, NULL, n, k, m * d.batch, 1, 0, 0, beta)
                   : gemm(ctx, a, 1, dc, 0, db, NULL, k, n, m * d.batch, 1, 0, 0, beta);
        } else if (d.shared_b) {
            /* A transposed: batches cannot fold; accumulate them one after another (the
             * first one overwrites a fresh dB) */
            if (fresh && d.batch == 0) s = kiln_zero(db); /* no batch to write it */
            for (int64_t i = 0; s == KILN_OK && i < d.batch; i++) {
                kiln_tensor ai = *a, ci = *dc;
                ai.offset += (size_t)(i * m * k) * kiln_dtype_size(a->dtype);
                ci.offset += (size_t)(i * mn) * kiln_dtype_size(dc->dtype);
                const float beta_i = i == 0 ? beta : 1.0f;
                s = tb ? gemm(ctx, &ci, 1, &ai, 1, db, NULL, n, k, m, 1, 0, 0, beta_i)
                       : gemm(ctx, &ai, 0, &ci, 0, db, NULL, k, n, m, 1, 0, 0, beta_i);
            }
        } else {
            s = tb ? gemm(ctx, dc, 1, a, ta, db, NULL, n, k, m, d.batch, mn, m * k, beta)
                   : gemm(ctx, a, !ta, dc, 0, db, NULL, k, n, m, d.batch, m * k, mn, beta);
        }
        if (s) return s;
    }
    kiln_tensor *dbias = kiln_grad_acc(bias);
    if (dbias) {
        kiln_sum_rows_args sr = {
            .x = kiln_ref_of(dc),
            .out = kiln_ref_of(dbias),
            .rows = m * d.batch,
            .cols = n,
            .alpha = 1.0f,
            .dtype = dc->dtype,
        };
        s = KILN_CALL(ctx, sum_rows, &sr);
    }
    return s;
}

kiln_tensor *kiln_matmul(kiln_tensor *a, kiln_tensor *b, kiln_tensor *bias, int trans_a,
                         int trans_b) {
    if (!kiln_inputs_ok(2, a, b)) return NULL;
    kiln_ctx *ctx = a->ctx;
    mm_dims d;
    if (dims_of(a, b, trans_a, trans_b, &d)) return NULL;
    if (bias && (bias->ndim != 1 || bias->shape[0] != d.n)) {
        char sb[64];
        return kiln_fail(KILN_ERR_SHAPE, "matmul: bias is %s; it must be [%lld], one value per output column",
                         kiln_shape_str(bias, sb, sizeof sb), (long long)d.n);
    }
    if (kiln_check_same_dtype("matmul", a, "a", bias, "bias")) return NULL;
    int64_t shape[KILN_MAX_DIMS];
    for (int i = 0; i < a->ndim - 2; i++) shape[i] = a->shape[i];
    shape[a->ndim - 2] = d.m;
    shape[a->ndim - 1] = d.n;
    kiln_tensor *c = kiln_op_output(ctx, a->dtype, a->ndim, shape);
    if (!c) return NULL;
    /* the GEMM kernel takes its bias in f32 (backend.h): an f16 bias is widened, exactly */
    const kiln_tensor *bias32 = bias;
    if (bias && bias->dtype != KILN_F32) {
        kiln_tensor *t = kiln_tensor_temp(ctx, KILN_F32, 1, bias->shape);
        kiln_cast_args cast = {
            .src = kiln_ref_of(bias),
            .dst = kiln_ref_of(t),
            .n = d.n,
            .src_dtype = bias->dtype,
            .dst_dtype = KILN_F32,
        };
        if (!t || KILN_CALL(ctx, cast, &cast)) return NULL;
        bias32 = t;
    }
    if (forward_gemm(ctx, a, b, c, bias32, trans_a, trans_b, &d)) return NULL;
    kiln_tensor *ins[3] = {a, b, bias};
    int n_in = bias ? 3 : 2;
    if (kiln_needs_tape(ctx, n_in, ins)) {
        kiln_tape_rec *rec = kiln_tape_push(ctx, matmul_backward, c, n_in, ins);
        if (!rec) return NULL;
        rec->i[0] = trans_a;
        rec->i[1] = trans_b;
    }
    return c;
}
