/* Rotary position embeddings (kiln_rope, kiln/ops.h) and their backward.
 *
 * A rotation is orthogonal, so the backward is the same kernel turning dy by the negative
 * angle: nothing is saved but the parameters (and the frequency factors, which the record
 * keeps as a saved tensor: they are an input of the angle, not of the gradient). */
#include <math.h>

#include "core/internal.h"
#include "ops/op_grad.h"

/* Positions must stay exact in f32, where the devices form the angle. */
#define ROPE_MAX_POSITION (1 << 24)

static kiln_status check_factors(const kiln_tensor *x, const kiln_tensor *f, int64_t half) {
    char sf[64];
    if (f->dtype != KILN_F32)
        return kiln_set_error(KILN_ERR_DTYPE, "rope: freq_factors must be f32, got %s", kiln_dtype_name(f->dtype));
    if (f->ndim != 1 || f->shape[0] != half)
        return kiln_set_error(KILN_ERR_SHAPE, "rope: freq_factors is %s; it must be [%lld], half of x's head size %lld",
                              kiln_shape_str(f, sf, sizeof sf), (long long)half, (long long)(2 * half));
    if (f->ctx != x->ctx)
        return kiln_set_error(KILN_ERR_ARGUMENT, "rope: x and freq_factors belong to different contexts");
    return KILN_OK;
}

/* x [B, T, H, D] f32 or f16 with D even; the options within their ranges. */
static kiln_status check_rope(const kiln_tensor *x, const kiln_rope_opts *o) {
    char sx[64];
    kiln_status s = kiln_check_float("rope", x, "x");
    if (s) return s;
    if (x->ndim != 4 || x->shape[3] % 2 != 0 || x->shape[3] < 2)
        return kiln_set_error(KILN_ERR_SHAPE, "rope: x is %s; it must be [B, T, H, D] with D even",
                              kiln_shape_str(x, sx, sizeof sx));
    if (!(o->base > 0.0f) || isinf(o->base))
        return kiln_set_error(KILN_ERR_ARGUMENT, "rope: base is %g; it must be finite and > 0 (0 means 10000)",
                              (double)o->base);
    if (o->layout != KILN_ROPE_ADJACENT && o->layout != KILN_ROPE_HALF)
        return kiln_set_error(KILN_ERR_ARGUMENT, "rope: layout %d is neither KILN_ROPE_ADJACENT nor KILN_ROPE_HALF",
                              (int)o->layout);
    if (o->pos0 < 0 || o->pos0 > ROPE_MAX_POSITION - x->shape[1])
        return kiln_set_error(KILN_ERR_ARGUMENT, "rope: positions %lld .. %lld; they must lie in [0, %d]",
                              (long long)o->pos0, (long long)(o->pos0 + x->shape[1] - 1), ROPE_MAX_POSITION - 1);
    return o->freq_factors ? check_factors(x, o->freq_factors, x->shape[3] / 2) : KILN_OK;
}

static kiln_rope_args rope_args(const kiln_tensor *x, const kiln_rope_opts *o) {
    kiln_rope_args a = {0};
    a.freq_factors = kiln_ref_of(o->freq_factors);
    a.batch = x->shape[0];
    a.seq = x->shape[1];
    a.heads = x->shape[2];
    a.dim = x->shape[3];
    a.pos0 = o->pos0;
    a.base = o->base;
    a.layout = (int)o->layout;
    a.dtype = x->dtype;
    return a;
}

/* rec->in = {x}; saved[0] = the factors (or NULL); f[0] = base; i[0] = layout, i[1] = pos0. */
static kiln_status rope_backward(kiln_tape_rec *rec) {
    kiln_tensor *x = rec->in[0], *dx;
    int overwrite;
    kiln_status s = op_grad_to_write(x, &dx, &overwrite);
    if (s || !dx) return s;
    kiln_rope_opts o = {.base = rec->f[0], .layout = (kiln_rope_layout)rec->i[0], .pos0 = rec->i[1],
                        .freq_factors = rec->saved[0]};
    kiln_rope_args a = rope_args(x, &o);
    a.dy = kiln_ref_of(rec->out->grad);
    a.dx = kiln_ref_of(dx);
    a.accumulate = !overwrite;
    return KILN_CALL(x->ctx, rope_bwd, &a);
}

kiln_tensor *kiln_rope(kiln_tensor *x, const kiln_rope_opts *opts) {
    if (!x) return NULL;
    kiln_rope_opts o = opts ? *opts : (kiln_rope_opts){0};
    if (o.base == 0.0f) o.base = 10000.0f;
    if (check_rope(x, &o)) return NULL;
    kiln_ctx *ctx = x->ctx;
    kiln_tensor *y = kiln_op_output(ctx, x->dtype, x->ndim, x->shape);
    if (!y) return NULL;
    kiln_rope_args a = rope_args(x, &o);
    a.x = kiln_ref_of(x);
    a.y = kiln_ref_of(y);
    if (KILN_CALL(ctx, rope_fwd, &a)) return NULL;
    if (kiln_needs_tape(ctx, 1, &x)) {
        kiln_tape_rec *rec = kiln_tape_push(ctx, rope_backward, y, 1, &x);
        if (!rec) return NULL;
        rec->saved[0] = o.freq_factors;
        rec->f[0] = o.base;
        rec->i[0] = (int64_t)o.layout;
        rec->i[1] = o.pos0;
    }
    return y;
}
