/* Reductions to a scalar: sum, mean, and the global L2 norm over a list of tensors. The
 * inputs may be f32 or f16; the result is an f32 scalar either way (a reduction
 * accumulates in f32 or wider, and rounding its result to f16 would throw that away). */
#include <math.h>
#include <stdio.h>

#include "core/internal.h"
#include "ops/op_grad.h"

/* d(alpha * sum x) / dx = alpha: dx += alpha * dout[0]. */
static kiln_status sum_backward(kiln_tape_rec *rec) {
    kiln_tensor *x = rec->in[0], *dy = rec->out->grad;
    int fresh;
    kiln_tensor *dx = op_grad_overwrite(x, &fresh);
    if (!dx) return kiln_error_status();
    kiln_axpby_args a = {
        .y = kiln_ref_of(dx),
        .num = kiln_ref_of(dy),
        .n = kiln_numel(x),
        .alpha = rec->f[0],
        .beta = fresh ? 0.0f : 1.0f,
        .dtype = dx->dtype,
    };
    return KILN_CALL(x->ctx, axpby, &a);
}

static kiln_tensor *scaled_sum(kiln_tensor *x, float alpha_per_n, const char *name) {
    if (!x) return NULL;
    if (kiln_check_float(name, x, "x")) return NULL;
    kiln_ctx *ctx = x->ctx;
    float alpha = alpha_per_n != 0 ? 1.0f / (float)kiln_numel(x) : 1.0f;
    kiln_tensor *y = kiln_op_output(ctx, KILN_F32, 0, NULL);
    if (!y) return NULL;
    kiln_reduce_args a = {
        .x = kiln_ref_of(x),
        .out = kiln_ref_of(y),
        .n = kiln_numel(x),
        .alpha = alpha,
        .square = 0,
        .dtype = x->dtype,
    };
    if (KILN_CALL(ctx, reduce, &a)) return NULL;
    if (kiln_needs_tape(ctx, 1, &x)) {
        kiln_tape_rec *rec = kiln_tape_push(ctx, sum_backward, y, 1, &x);
        if (!rec) return NULL;
        rec->f[0] = alpha;
    }
    return y;
}

kiln_tensor *kiln_sum(kiln_tensor *x) { return scaled_sum(x, 0, "sum"); }
kiln_tensor *kiln_mean(kiln_tensor *x) { return scaled_sum(x, 1, "mean"); }

/* d norm / d x_t = x_t / norm: dx_t += dout * x_t / norm, with dout and norm read on the
 * device (the axpby kernel's num and den scalars), so nothing is read back. The gradient
 * at norm == 0 is 0/0 = NaN: the norm is not differentiable there. */
static kiln_status global_norm_backward(kiln_tape_rec *rec) {
    kiln_tensor *norm = rec->out, *dout = norm->grad;
    for (int t = 0; t < rec->n_in; t++) {
        kiln_tensor *x = rec->in[t];
        if (!kiln_requires_grad(x)) continue;
        int fresh;
        kiln_tensor *dx = op_grad_overwrite(x, &fresh);
        if (!dx) return kiln_error_status();
        kiln_axpby_args a = {
            .x = kiln_ref_of(x),
            .y = kiln_ref_of(dx),
            .num = kiln_ref_of(dout),
            .den = kiln_ref_of(norm),
            .n = kiln_numel(x),
            .alpha = 1.0f,
            .beta = fresh ? 0.0f : 1.0f,
            .dtype = x->dtype,
        };
        kiln_status s = KILN_CALL(x->ctx, axpby, &a);
        if (s) return s;
    }
    return KILN_OK;
}

kiln_tensor *kiln_global_norm(kiln_tensor *const *xs, int count) {
    if (!xs || count < 1)
        return kiln_fail(KILN_ERR_ARGUMENT, "global_norm: needs at least one tensor (got %d%s)", count,
                         xs ? "" : ", xs is NULL");
    for (int t = 0; t < count; t++)
        if (!xs[t]) return NULL;
    kiln_ctx *ctx = xs[0]->ctx;
    for (int t = 0; t < count; t++) {
        char what[32], first[32];
        snprintf(what, sizeof what, "tensor %d", t);
        snprintf(first, sizeof first, "tensor %d", 0);
        if (kiln_check_same_dtype("global_norm", xs[t], what, xs[0], first)) return NULL;
        if (xs[t]->ctx != ctx)
            return kiln_fail(KILN_ERR_ARGUMENT, "global_norm: tensor %d belongs to a different context than tensor 0", t);
    }
    /* sum of squares accumulated over every tensor into one zeroed scalar, then its sqrt */
    kiln_tensor *sumsq = kiln_tensor_temp(ctx, KILN_F32, 0, NULL);
    kiln_tensor *norm = kiln_op_output(ctx, KILN_F32, 0, NULL);
    if (!sumsq || !norm || kiln_zero(sumsq)) return NULL;
    for (int t = 0; t < count; t++) {
        kiln_reduce_args r = {
            .x = kiln_ref_of(xs[t]),
            .out = kiln_ref_of(sumsq),
            .n = kiln_numel(xs[t]),
            .alpha = 1.0f,
            .square = 1,
            .dtype = xs[t]->dtype,
        };
        if (KILN_CALL(ctx, reduce, &r)) return NULL;
    }
    kiln_act_args a = {0};
    a.x = kiln_ref_of(sumsq);
    a.y = kiln_ref_of(norm);
    a.n = 1;
    a.kind = KILN_ACT_SQRT;
    if (KILN_CALL(ctx, act_fwd, &a)) return NULL;
    if (kiln_needs_tape(ctx, count, xs)) {
        if (!kiln_tape_push(ctx, global_norm_backward, norm, count, xs)) return NULL;
    }
    return norm;
}
