/* The toy op of docs/design.md's "How to add an op": y = s * x, with its backward. */
#include "core/internal.h"

/* f[0] = s */
static kiln_status smul_backward(kiln_tape_rec *rec) {
    kiln_tensor *x = rec->in[0];
    kiln_tensor *dx = kiln_grad_acc(x);
    if (!dx) return kiln_error_status();
    kiln_smul_args a = {.dy = kiln_ref_of(rec->out->grad), .dx = kiln_ref_of(dx), .n = kiln_numel(x),
                        .s = rec->f[0], .dtype = x->dtype};
    return KILN_CALL(x->ctx, smul_bwd, &a);
}

kiln_tensor *kiln_smul(kiln_tensor *x, float s) {
    if (!x) return NULL;
    if (kiln_check_float("smul", x, "x")) return NULL;
    kiln_ctx *ctx = x->ctx;
    kiln_tensor *y = kiln_op_output(ctx, x->dtype, x->ndim, x->shape);
    if (!y) return NULL;
    kiln_smul_args a = {.x = kiln_ref_of(x), .y = kiln_ref_of(y), .n = kiln_numel(x), .s = s, .dtype = x->dtype};
    if (KILN_CALL(ctx, smul_fwd, &a)) return NULL;
    if (kiln_needs_tape(ctx, 1, &x)) {
        kiln_tape_rec *rec = kiln_tape_push(ctx, smul_backward, y, 1, &x);
        if (!rec) return NULL;
        rec->f[0] = s;
    }
    return y;
}
