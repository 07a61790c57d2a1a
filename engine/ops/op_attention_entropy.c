/* Attention entropy per head, -sum p log p averaged over batch and queries: the diagnostic
 * that shows a head collapsing onto one key (entropy -> 0), and differentiable so it can
 * serve as a regularizer. */
#include "core/internal.h"

static kiln_entropy_args entropy_args(const kiln_tensor *p) {
    kiln_entropy_args e = {0};
    e.p = kiln_ref_of(p);
    e.batch = p->shape[0];
    e.heads = p->shape[1];
    e.tq = p->shape[2];
    e.tk = p->shape[3];
    e.dtype = p->dtype; /* p and dp; the entropies and their gradient are f32 */
    return e;
}

static kiln_status entropy_backward(kiln_tape_rec *rec) {
    kiln_tensor *p = rec->in[0];
    kiln_tensor *dp = kiln_grad_acc(p);
    if (!dp) return kiln_error_status();
    kiln_entropy_args e = entropy_args(p);
    e.dout = kiln_ref_of(rec->out->grad);
    e.dp = kiln_ref_of(dp);
    return KILN_CALL(p->ctx, entropy_bwd, &e);
}

kiln_tensor *kiln_attention_entropy(kiln_tensor *p) {
    if (!p) return NULL;
    char sp[64];
    if (kiln_check_float("attention_entropy", p, "p")) return NULL;
    if (p->ndim != 4)
        return kiln_fail(KILN_ERR_SHAPE,
                         "attention_entropy: p must be attention probabilities [B, H, Tq, Tk], got %s",
                         kiln_shape_str(p, sp, sizeof sp));
    kiln_ctx *ctx = p->ctx;
    int64_t heads = p->shape[1];
    kiln_tensor *out = kiln_op_output(ctx, KILN_F32, 1, &heads);
    if (!out) return NULL;
    kiln_entropy_args e = entropy_args(p);
    e.out = kiln_ref_of(out);
    if (KILN_CALL(ctx, entropy_fwd, &e)) return NULL;
    if (kiln_needs_tape(ctx, 1, &p) && !kiln_tape_push(ctx, entropy_backward, out, 1, &p)) return NULL;
    return out;
}
