/* Inverted dropout from the counter-based RNG.
 *
 * The mask is a function of (seed, stream, element index) only: every backend draws the
 * same mask, and the backward regenerates it from the (seed, stream) saved in the tape
 * record instead of keeping a mask tensor alive.
 *
 * Streams: every call in training mode takes stream = ctx->rng_stream++, also when p == 0,
 * so the mask of a dropout site depends on how many dropout calls came before it, not on
 * their probabilities. Calls outside training mode take no stream, so an evaluation pass
 * between training steps does not shift the training masks. */
#include "core/internal.h"

static kiln_dropout_args dropout_args(const kiln_tensor *x, float prob, uint64_t seed,
                                      uint64_t stream) {
    kiln_dropout_args d = {0};
    d.n = kiln_numel(x);
    d.prob = prob;
    d.seed = seed;
    d.stream = stream;
    d.dtype = x->dtype; /* x, y, dy and dx alike */
    return d;
}

/* f[0] = p; i[0], i[1] = seed, stream (the bits of the uint64 values). */
static kiln_status dropout_backward(kiln_tape_rec *rec) {
    kiln_tensor *x = rec->in[0];
    kiln_tensor *dx = kiln_grad_acc(x);
    if (!dx) return kiln_error_status();
    kiln_dropout_args d = dropout_args(x, rec->f[0], (uint64_t)rec->i[0], (uint64_t)rec->i[1]);
    d.dy = kiln_ref_of(rec->out->grad);
    d.dx = kiln_ref_of(dx);
    return KILN_CALL(x->ctx, dropout_bwd, &d);
}

kiln_tensor *kiln_dropout(kiln_tensor *x, float p) {
    if (!x) return NULL;
    if (!(p >= 0.0f && p < 1.0f))
        return kiln_fail(KILN_ERR_ARGUMENT, "dropout: probability must be in [0, 1), got %g", p);
    if (kiln_check_float("dropout", x, "x")) return NULL;
    kiln_ctx *ctx = x->ctx;
    if (!ctx->training) return x;
    uint64_t stream = ctx->rng_stream++;
    /* The identity returns x itself, not a copy: nothing is computed or recorded, and the
     * gradient reaches x directly. */
    if (p == 0.0f) return x;
    kiln_tensor *y = kiln_op_output(ctx, x->dtype, x->ndim, x->shape);
    if (!y) return NULL;
    kiln_dropout_args d = dropout_args(x, p, ctx->seed, stream);
    d.x = kiln_ref_of(x);
    d.y = kiln_ref_of(y);
    if (KILN_CALL(ctx, dropout_fwd, &d)) return NULL;
    if (kiln_needs_tape(ctx, 1, &x)) {
        kiln_tape_rec *rec = kiln_tape_push(ctx, dropout_backward, y, 1, &x);
        if (!rec) return NULL;
        rec->f[0] = p;
        rec->i[0] = (int64_t)ctx->seed;
        rec->i[1] = (int64_t)stream;
    }
    return y;
}
