/* Masked softmax for attention: p = softmax((scale * scores + add) / temperature) with the
 * causal and key-length masks applied inside the kernel, and its backward. scores, add, p
 * and the gradients share one dtype (f32 or f16); the kernel computes in f32. */
#include <math.h>

#include "core/internal.h"

/* The kernel arguments for scores x (geometry, options); the caller sets y and gradients. */
static kiln_softmax_args softmax_args(const kiln_tensor *x, const kiln_tensor *add,
                                      const kiln_tensor *lengths, float scale, float temperature,
                                      int causal) {
    kiln_softmax_args s = {0};
    s.x = kiln_ref_of(x);
    s.add = kiln_ref_of(add);
    s.lengths = kiln_ref_of(lengths);
    s.batch = x->shape[0];
    s.heads = x->shape[1];
    s.tq = x->shape[2];
    s.tk = x->shape[3];
    s.scale = scale;
    s.temperature = temperature;
    s.causal = causal;
    s.dtype = x->dtype;
    return s;
}

/* in = {scores} or {scores, add}; saved[0] = key lengths (or NULL); f = {scale, temperature};
 * i[0] = causal. y is the record's output: the backward needs only y and dy. */
static kiln_status softmax_backward(kiln_tape_rec *rec) {
    kiln_tensor *x = rec->in[0], *add = rec->n_in > 1 ? rec->in[1] : NULL;
    kiln_softmax_args s = softmax_args(x, add, rec->saved[0], rec->f[0], rec->f[1], (int)rec->i[0]);
    kiln_tensor *dx = kiln_grad_acc(x), *dadd = kiln_grad_acc(add);
    if ((kiln_requires_grad(x) && !dx) || (kiln_requires_grad(add) && !dadd))
        return kiln_error_status();
    if (!dx && !dadd) return KILN_OK;
    s.y = kiln_ref_of(rec->out);
    s.dy = kiln_ref_of(rec->out->grad);
    s.dx = kiln_ref_of(dx);
    s.dadd = kiln_ref_of(dadd);
    return KILN_CALL(x->ctx, softmax_bwd, &s);
}

static kiln_status check_options(const kiln_tensor *x, const kiln_softmax_opts *o, float scale,
                                 float temperature) {
    char sx[64], so[64];
    if (!isfinite(scale))
        return kiln_set_error(KILN_ERR_ARGUMENT, "softmax: scale must be finite, got %g", scale);
    if (!(temperature > 0) || !isfinite(temperature))
        return kiln_set_error(KILN_ERR_ARGUMENT,
                              "softmax: temperature must be positive and finite (0 means 1), got %g",
                              temperature);
    const kiln_tensor *len = o ? o->key_lengths : NULL, *add = o ? o->add : NULL;
    if (len && (len->dtype != KILN_I32 || len->ndim != 1 || len->shape[0] != x->shape[0]))
        return kiln_set_error(KILN_ERR_SHAPE,
                              "softmax: key_lengths must be i32 [%lld] (one length per batch), got %s %s",
                              (long long)x->shape[0], kiln_dtype_name(len->dtype),
                              kiln_shape_str(len, so, sizeof so));
    if (add && !kiln_same_shape(add, x))
        return kiln_set_error(KILN_ERR_SHAPE, "softmax: add must have the scores' shape %s, got %s",
                              kiln_shape_str(x, sx, sizeof sx), kiln_shape_str(add, so, sizeof so));
    kiln_status s = kiln_check_same_dtype("softmax", x, "scores", add, "add");
    if (s) return s;
    if (len && len->ctx != x->ctx)
        return kiln_set_error(KILN_ERR_ARGUMENT, "softmax: key_lengths belongs to another context");
    if (add && add->ctx != x->ctx)
        return kiln_set_error(KILN_ERR_ARGUMENT, "softmax: add belongs to another context");
    return KILN_OK;
}

kiln_tensor *kiln_softmax(kiln_tensor *scores, const kiln_softmax_opts *opts) {
    if (!scores) return NULL;
    char sx[64];
    if (kiln_check_float("softmax", scores, "scores")) return NULL;
    if (scores->ndim != 4)
        return kiln_fail(KILN_ERR_SHAPE, "softmax: scores must be [B, H, Tq, Tk], got %s (reshape first)",
                         kiln_shape_str(scores, sx, sizeof sx));
    float scale = opts && opts->scale != 0 ? opts->scale : 1.0f;
    float temperature = opts && opts->temperature != 0 ? opts->temperature : 1.0f;
    int causal = opts ? opts->causal != 0 : 0;
    if (check_options(scores, opts, scale, temperature)) return NULL;
    kiln_tensor *lengths = opts ? opts->key_lengths : NULL, *add = opts ? opts->add : NULL;
    kiln_ctx *ctx = scores->ctx;
    kiln_tensor *y = kiln_op_output(ctx, scores->dtype, 4, scores->shape);
    if (!y) return NULL;
    kiln_softmax_args s = softmax_args(scores, add, lengths, scale, temperature, causal);
    s.y = kiln_ref_of(y);
    if (KILN_CALL(ctx, softmax_fwd, &s)) return NULL;
    kiln_tensor *ins[2] = {scores, add};
    int n_in = add ? 2 : 1;
    if (kiln_needs_tape(ctx, n_in, ins)) {
        kiln_tape_rec *rec = kiln_tape_push(ctx, softmax_backward, y, n_in, ins);
        if (!rec) return NULL;
        rec->saved[0] = lengths;
        rec->f[0] = scale;
        rec->f[1] = temperature;
        rec->i[0] = causal;
    }
    return y;
}
