/* Elementwise add, sub, mul and div (b broadcast over a: see broadcast_ok) and scale, in f32
 * or f16 (both operands of one call share the dtype; the output and the gradients take it). */
#include "core/internal.h"
#include "ops/op_grad.h"

/* b broadcasts over a when b's shape is a suffix of a's shape (a bias, a position table), or
 * when b is one element of any shape (a learned scalar gain: x * alpha, W * gamma / sigma). */
static int broadcast_ok(const kiln_tensor *a, const kiln_tensor *b) {
    if (kiln_numel(b) == 1) return 1;
    if (b->ndim > a->ndim) return 0;
    for (int i = 0; i < b->ndim; i++)
        if (b->shape[b->ndim - 1 - i] != a->shape[a->ndim - 1 - i]) return 0;
    return 1;
}

static kiln_status binary(kiln_ctx *ctx, kiln_binary_op op, const kiln_tensor *a,
                          const kiln_tensor *b, kiln_tensor *out) {
    kiln_binary_args args = {
        .a = kiln_ref_of(a),
        .b = kiln_ref_of(b),
        .out = kiln_ref_of(out),
        .n = kiln_numel(a),
        .nb = kiln_numel(b),
        .op = op,
        .dtype = out->dtype,
    };
    return KILN_CALL(ctx, binary, &args);
}

/* grad += alpha * g, where g has a's shape and grad may be the broadcast shape (a suffix of
 * a's, or one element); with `overwrite` (a fresh gradient, op_grad.h), grad = alpha * g.
 * g and grad share a dtype: a gradient has its tensor's dtype, and both operands of the op
 * had the same. */
static kiln_status accumulate(kiln_ctx *ctx, kiln_tensor *grad, const kiln_tensor *g, float alpha, int overwrite) {
    int64_t n = kiln_numel(g), nb = kiln_numel(grad);
    kiln_status s;
    if (n == nb) {
        kiln_axpby_args ax = {
            .x = kiln_ref_of(g),
            .y = kiln_ref_of(grad),
            .n = n,
            .alpha = alpha,
            .beta = overwrite ? 0.0f : 1.0f,
            .dtype = g->dtype,
        };
        return KILN_CALL(ctx, axpby, &ax);
    }
    if (nb == 1) {
        /* a scalar's gradient: the whole-tensor reduction (f32, spread over the device),
         * then added from the device as axpby's num; sum_rows would give all of g to the
         * few lanes of one column */
        kiln_tensor *sum = kiln_tensor_temp(ctx, KILN_F32, 0, NULL);
        if (!sum) return kiln_error_status();
        kiln_reduce_args r = {
            .x = kiln_ref_of(g),
            .out = kiln_ref_of(sum),
            .n = n,
            .alpha = alpha,
            .square = 0,
            .dtype = g->dtype,
        };
        if ((s = KILN_CALL(ctx, reduce, &r))) return s;
        kiln_axpby_args ax = {
            .y = kiln_ref_of(grad),
            .num = kiln_ref_of(sum), /* x absent: grad = num[0] (+ grad) */
            .n = 1,
            .alpha = 1.0f,
            .beta = overwrite ? 0.0f : 1.0f,
            .dtype = grad->dtype,
        };
        return KILN_CALL(ctx, axpby, &ax);
    }
    if (overwrite && (s = kiln_zero(grad))) return s; /* sum_rows only accumulates */
    kiln_sum_rows_args sr = {
        .x = kiln_ref_of(g),
        .out = kiln_ref_of(grad),
        .rows = n / nb,
        .cols = nb,
        .alpha = alpha,
        .dtype = g->dtype,
    };
    return KILN_CALL(ctx, sum_rows, &sr);
}

/* A temporary of a's shape and dy's dtype (the gradient terms before their reduction). */
static kiln_tensor *temp_like(const kiln_tensor *dy, const kiln_tensor *a) {
    return kiln_tensor_temp(dy->ctx, dy->dtype, a->ndim, a->shape);
}

/* The backward rules write da before they even look up db's gradient: when b is a or a
 * view of it, db then accumulates onto a complete da. */

/* y = a +- b: da += dy; db += +-dy, summed over the broadcast. */
static kiln_status add_sub_backward(kiln_tape_rec *rec, kiln_binary_op op) {
    kiln_tensor *a = rec->in[0], *b = rec->in[1], *dy = rec->out->grad, *da, *db;
    kiln_ctx *ctx = dy->ctx;
    int fresh;
    kiln_status s;
    if ((s = op_grad_to_write(a, &da, &fresh)) || (da && (s = accumulate(ctx, da, dy, 1.0f, fresh)))) return s;
    if ((s = op_grad_to_write(b, &db, &fresh)) || !db) return s;
    return accumulate(ctx, db, dy, op == KILN_BIN_SUB ? -1.0f : 1.0f, fresh);
}

/* y = a * b: da += dy * b; db += dy * a, summed over the broadcast. */
static kiln_status mul_backward(kiln_tape_rec *rec) {
    kiln_tensor *a = rec->in[0], *b = rec->in[1], *dy = rec->out->grad, *da, *db;
    kiln_ctx *ctx = dy->ctx;
    int fresh;
    kiln_status s;
    /* straight into a fresh da (same shape as dy), else through a temporary */
    kiln_tensor *t = NULL;
    if ((s = op_grad_to_write(a, &da, &fresh))) return s;
    if (da && fresh) {
        if ((s = binary(ctx, KILN_BIN_MUL, dy, b, da))) return s;
    } else if (da) {
        if (!(t = temp_like(dy, a))) return kiln_error_status();
        if ((s = binary(ctx, KILN_BIN_MUL, dy, b, t)) || (s = accumulate(ctx, da, t, 1.0f, 0))) return s;
    }
    if ((s = op_grad_to_write(b, &db, &fresh)) || !db) return s;
    if (fresh && kiln_numel(db) == kiln_numel(dy)) return binary(ctx, KILN_BIN_MUL, dy, a, db);
    if (!t && !(t = temp_like(dy, a))) return kiln_error_status();
    if ((s = binary(ctx, KILN_BIN_MUL, dy, a, t))) return s;
    return accumulate(ctx, db, t, 1.0f, fresh);
}

/* y = a / b: da += q with q = dy / b; db -= dy * a / b^2 = q * y, summed over the
 * broadcast, so the one division serves both (y is the saved output). b == 0 gives inf or
 * NaN gradients, as the forward gives inf or NaN. */
static kiln_status div_backward(kiln_tape_rec *rec) {
    kiln_tensor *a = rec->in[0], *b = rec->in[1], *y = rec->out, *dy = y->grad, *da, *db, *q;
    kiln_ctx *ctx = dy->ctx;
    int fresh;
    kiln_status s;
    if ((s = op_grad_to_write(a, &da, &fresh))) return s;
    q = da && fresh ? da : temp_like(dy, a); /* a fresh da is written whole with q's values */
    if (!q) return kiln_error_status();
    if ((s = binary(ctx, KILN_BIN_DIV, dy, b, q))) return s;
    if (da && !fresh && (s = accumulate(ctx, da, q, 1.0f, 0))) return s;
    if ((s = op_grad_to_write(b, &db, &fresh)) || !db) return s;
    /* q * y goes to a temporary even when db is fresh and whole: q may be da, and db may be
     * da too (b is a) */
    kiln_tensor *t = temp_like(dy, a);
    if (!t) return kiln_error_status();
    if ((s = binary(ctx, KILN_BIN_MUL, q, y, t))) return s;
    return accumulate(ctx, db, t, -1.0f, fresh);
}

static kiln_status binary_backward(kiln_tape_rec *rec) {
    kiln_binary_op op = (kiln_binary_op)rec->i[0];
    switch (op) {
    case KILN_BIN_ADD:
    case KILN_BIN_SUB: return add_sub_backward(rec, op);
    case KILN_BIN_MUL: return mul_backward(rec);
    case KILN_BIN_DIV: return div_backward(rec);
    }
    return kiln_set_error(KILN_ERR_ARGUMENT, "binary backward: unknown op %d", (int)op);
}

static const char *const g_names[] = {
    [KILN_BIN_ADD] = "add",
    [KILN_BIN_SUB] = "sub",
    [KILN_BIN_MUL] = "mul",
    [KILN_BIN_DIV] = "div",
};

static kiln_tensor *binary_op(kiln_tensor *a, kiln_tensor *b, kiln_binary_op op) {
    if (!kiln_inputs_ok(2, a, b)) return NULL;
    kiln_ctx *ctx = a->ctx;
    if (kiln_check_same_dtype(g_names[op], a, "a", b, "b")) return NULL;
    if (!broadcast_ok(a, b)) {
        char sa[64], sb[64];
        return kiln_fail(KILN_ERR_SHAPE,
                         "%s: shapes %s and %s do not match (b must be a's shape, its trailing dims or one element)",
                         g_names[op], kiln_shape_str(a, sa, sizeof sa), kiln_shape_str(b, sb, sizeof sb));
    }
    kiln_tensor *out = kiln_op_output(ctx, a->dtype, a->ndim, a->shape);
    if (!out || binary(ctx, op, a, b, out)) return NULL;
    kiln_tensor *ins[2] = {a, b};
    if (kiln_needs_tape(ctx, 2, ins)) {
        kiln_tape_rec *rec = kiln_tape_push(ctx, binary_backward, out, 2, ins);
        if (!rec) return NULL;
        rec->i[0] = op;
    }
    return out;
}

kiln_tensor *kiln_add(kiln_tensor *a, kiln_tensor *b) { return binary_op(a, b, KILN_BIN_ADD); }
kiln_tensor *kiln_sub(kiln_tensor *a, kiln_tensor *b) { return binary_op(a, b, KILN_BIN_SUB); }
kiln_tensor *kiln_mul(kiln_tensor *a, kiln_tensor *b) { return binary_op(a, b, KILN_BIN_MUL); }
kiln_tensor *kiln_div(kiln_tensor *a, kiln_tensor *b) { return binary_op(a, b, KILN_BIN_DIV); }

static kiln_status scale_backward(kiln_tape_rec *rec) {
    int fresh;
    kiln_tensor *dx = op_grad_overwrite(rec->in[0], &fresh);
    if (!dx) return kiln_error_status();
    return accumulate(dx->ctx, dx, rec->out->grad, rec->f[0], fresh);
}

kiln_tensor *kiln_scale(kiln_tensor *x, float alpha) {
    if (!x) return NULL;
    if (kiln_check_float("scale", x, "x")) return NULL;
    kiln_ctx *ctx = x->ctx;
    kiln_tensor *y = kiln_op_output(ctx, x->dtype, x->ndim, x->shape);
    if (!y) return NULL;
    kiln_axpby_args ax = {
        .x = kiln_ref_of(x),
        .y = kiln_ref_of(y),
        .n = kiln_numel(x),
        .alpha = alpha,
        .beta = 0.0f,
        .dtype = x->dtype,
    };
    if (KILN_CALL(ctx, axpby, &ax)) return NULL;
    if (kiln_needs_tape(ctx, 1, &x)) {
        kiln_tape_rec *rec = kiln_tape_push(ctx, scale_backward, y, 1, &x);
        if (!rec) return NULL;
        rec->f[0] = alpha;
    }
    return y;
}
