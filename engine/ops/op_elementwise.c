/* Elementwise add, sub, mul (with trailing-dims broadcast of b) and scale, in f32 or f16
 * (both operands of one call share the dtype; the output and the gradients take it). */
#include "core/internal.h"
#include "ops/op_grad.h"

/* b broadcasts over a when b's shape is a suffix of a's shape. */
static int broadcast_ok(const kiln_tensor *a, const kiln_tensor *b) {
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

/* grad += alpha * g, where g has a's shape and grad may be the broadcast (suffix) shape;
 * with `overwrite` (a fresh gradient, op_grad.h), grad = alpha * g. g and grad share a
 * dtype: a gradient has its tensor's dtype, and both operands of the op had the same. */
static kiln_status accumulate(kiln_ctx *ctx, kiln_tensor *grad, const kiln_tensor *g, float alpha, int overwrite) {
    int64_t n = kiln_numel(g), nb = kiln_numel(grad);
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
    kiln_status s = overwrite ? kiln_zero(grad) : KILN_OK; /* sum_rows only accumulates */
    if (s) return s;
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

/* da is written before db's gradient is even looked up: when b is a or a view of it, db
 * then accumulates onto a complete da. */
static kiln_status binary_backward(kiln_tape_rec *rec) {
    kiln_tensor *a = rec->in[0], *b = rec->in[1], *dy = rec->out->grad;
    kiln_ctx *ctx = dy->ctx;
    kiln_binary_op op = (kiln_binary_op)rec->i[0];
    kiln_tensor *da, *db;
    int fresh;
    kiln_status s;
    if (op != KILN_BIN_MUL) {
        if ((s = op_grad_to_write(a, &da, &fresh)) || (da && (s = accumulate(ctx, da, dy, 1.0f, fresh)))) return s;
        if ((s = op_grad_to_write(b, &db, &fresh)) || !db) return s;
        return accumulate(ctx, db, dy, op == KILN_BIN_SUB ? -1.0f : 1.0f, fresh);
    }
    /* da += dy * b: straight into a fresh da (same shape as dy), else through a temporary */
    kiln_tensor *t = NULL;
    if ((s = op_grad_to_write(a, &da, &fresh))) return s;
    if (da && fresh) {
        if ((s = binary(ctx, KILN_BIN_MUL, dy, b, da))) return s;
    } else if (da) {
        if (!(t = kiln_tensor_temp(ctx, dy->dtype, a->ndim, a->shape))) return kiln_error_status();
        if ((s = binary(ctx, KILN_BIN_MUL, dy, b, t)) || (s = accumulate(ctx, da, t, 1.0f, 0))) return s;
    }
    /* db += sum over the broadcast of dy * a */
    if ((s = op_grad_to_write(b, &db, &fresh)) || !db) return s;
    if (fresh && kiln_numel(db) == kiln_numel(dy)) return binary(ctx, KILN_BIN_MUL, dy, a, db);
    if (!t && !(t = kiln_tensor_temp(ctx, dy->dtype, a->ndim, a->shape))) return kiln_error_status();
    if ((s = binary(ctx, KILN_BIN_MUL, dy, a, t))) return s;
    return accumulate(ctx, db, t, 1.0f, fresh);
}

static const char *const g_names[] = {[KILN_BIN_ADD] = "add", [KILN_BIN_SUB] = "sub", [KILN_BIN_MUL] = "mul"};

static kiln_tensor *binary_op(kiln_tensor *a, kiln_tensor *b, kiln_binary_op op) {
    if (!kiln_inputs_ok(2, a, b)) return NULL;
    kiln_ctx *ctx = a->ctx;
    if (kiln_check_same_dtype(g_names[op], a, "a", b, "b")) return NULL;
    if (!broadcast_ok(a, b)) {
        char sa[64], sb[64];
        return kiln_fail(KILN_ERR_SHAPE, "%s: shapes %s and %s do not match (b must equal a or a's trailing dims)",
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
