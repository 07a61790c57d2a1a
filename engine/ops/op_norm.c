/* LayerNorm and RMSNorm over the last axis, with their backward.
 *
 * The forward saves the per-row statistics (LayerNorm: mean and rstd; RMSNorm: rstd) as
 * arena tensors in rec->saved, so the backward kernel does not recompute them. x, weight,
 * bias, y and the gradients share one dtype (f32 or f16); the statistics are always f32. */
#include <math.h>

#include "abi/kernel_abi.h"
#include "core/internal.h"
#include "ops/op_grad.h"

/* Shared checks: x f32 or f16 with at least one dim, weight/bias (optional) [C] of x's
 * dtype, eps >= 0. */
static kiln_status check_norm(const char *name, const kiln_tensor *x, const kiln_tensor *weight,
                              const kiln_tensor *bias, float eps) {
    char sx[64], sp[64];
    kiln_status s = kiln_check_float(name, x, "x");
    if (s) return s;
    if (x->ndim < 1)
        return kiln_set_error(KILN_ERR_SHAPE, "%s: x is a scalar; it needs a last axis to normalize over", name);
    int64_t c = x->shape[x->ndim - 1];
    const kiln_tensor *params[2] = {weight, bias};
    const char *what[2] = {"weight", "bias"};
    for (int i = 0; i < 2; i++) {
        const kiln_tensor *p = params[i];
        if (!p) continue;
        if ((s = kiln_check_same_dtype(name, x, "x", p, what[i]))) return s;
        if (p->ndim != 1 || p->shape[0] != c)
            return kiln_set_error(KILN_ERR_SHAPE, "%s: %s is %s; it must be [%lld] to match x %s", name,
                                  what[i], kiln_shape_str(p, sp, sizeof sp), (long long)c,
                                  kiln_shape_str(x, sx, sizeof sx));
    }
    if (!(eps >= 0.0f) || isinf(eps))
        return kiln_set_error(KILN_ERR_ARGUMENT, "%s: eps is %g; it must be finite and >= 0", name, (double)eps);
    return KILN_OK;
}

/* Fills the parts of the kernel arguments that forward and backward share. */
static kiln_norm_args norm_args(const kiln_tensor *x, const kiln_tensor *weight, const kiln_tensor *bias,
                                const kiln_tensor *mean, const kiln_tensor *rstd, float eps, int rms) {
    kiln_norm_args a = {0};
    a.x = kiln_ref_of(x);
    a.weight = kiln_ref_of(weight);
    a.bias = kiln_ref_of(bias);
    a.mean = kiln_ref_of(mean);
    a.rstd = kiln_ref_of(rstd);
    a.cols = x->shape[x->ndim - 1];
    a.rows = kiln_numel(x) / a.cols;
    a.eps = eps;
    a.rms = rms ? KILN_ABI_NORM_RMS : KILN_ABI_NORM_LAYER;
    a.dtype = x->dtype; /* mean and rstd are f32 whatever it is */
    return a;
}

/* rec->in = {x, weight, bias} (weight and bias may be NULL); saved = {mean, rstd} (LayerNorm)
 * or {NULL, rstd} (RMSNorm); i[0] = 1 for RMSNorm. */
static kiln_status norm_backward(kiln_tape_rec *rec) {
    kiln_tensor *x = rec->in[0], *weight = rec->in[1], *bias = rec->in[2];
    kiln_tensor *dx, *dweight, *dbias;
    kiln_status s;
    if ((s = op_grad_to_add(x, &dx)) || (s = op_grad_to_add(weight, &dweight)) || (s = op_grad_to_add(bias, &dbias))) return s;
    if (!dx && !dweight && !dbias) return KILN_OK;
    kiln_norm_args a = norm_args(x, weight, bias, rec->saved[0], rec->saved[1], rec->f[0], rec->i[0]);
    a.dy = kiln_ref_of(rec->out->grad);
    a.dx = kiln_ref_of(dx);
    a.dweight = kiln_ref_of(dweight);
    a.dbias = kiln_ref_of(dbias);
    return KILN_CALL(x->ctx, norm_bwd, &a);
}

static kiln_tensor *norm_op(kiln_tensor *x, kiln_tensor *weight, kiln_tensor *bias, float eps, int rms) {
    const char *name = rms ? "rmsnorm" : "layernorm";
    if (check_norm(name, x, weight, bias, eps)) return NULL;
    kiln_ctx *ctx = x->ctx;
    int64_t rows = kiln_numel(x) / x->shape[x->ndim - 1];
    kiln_tensor *y = kiln_op_output(ctx, x->dtype, x->ndim, x->shape);
    kiln_tensor *mean = rms ? NULL : kiln_tensor_temp(ctx, KILN_F32, 1, &rows);
    kiln_tensor *rstd = kiln_tensor_temp(ctx, KILN_F32, 1, &rows);
    if (!y || (!rms && !mean) || !rstd) return NULL;
    kiln_norm_args a = norm_args(x, weight, bias, mean, rstd, eps, rms);
    a.y = kiln_ref_of(y);
    if (KILN_CALL(ctx, norm_fwd, &a)) return NULL;
    kiln_tensor *ins[3] = {x, weight, bias};
    if (kiln_needs_tape(ctx, 3, ins)) {
        kiln_tape_rec *rec = kiln_tape_push(ctx, norm_backward, y, 3, ins);
        if (!rec) return NULL;
        rec->saved[0] = mean;
        rec->saved[1] = rstd;
        rec->f[0] = eps;
        rec->i[0] = rms;
    }
    return y;
}

kiln_tensor *kiln_layernorm(kiln_tensor *x, kiln_tensor *weight, kiln_tensor *bias, float eps) {
    if (!x) return NULL;
    return norm_op(x, weight, bias, eps, 0);
}

kiln_tensor *kiln_rmsnorm(kiln_tensor *x, kiln_tensor *weight, float eps) {
    if (!x) return NULL;
    return norm_op(x, weight, NULL, eps, 1);
}
