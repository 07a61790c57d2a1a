/* Elementwise activations (GELU, ReLU, SiLU, squared ReLU) with their backward, in f32 or
 * f16 (y, dy and dx take x's dtype). */
#include "core/internal.h"

static const char *const g_act_names[] = {
    [KILN_ACT_GELU] = "gelu", [KILN_ACT_RELU] = "relu", [KILN_ACT_SILU] = "silu", [KILN_ACT_RELU2] = "relu2"};

/* dx += dy * f'(x): the kernel recomputes f'(x) from the saved input. */
static kiln_status activation_backward(kiln_tape_rec *rec) {
    kiln_tensor *x = rec->in[0], *dy = rec->out->grad;
    kiln_tensor *dx = kiln_grad_acc(x);
    if (!dx) return kiln_error_status();
    kiln_act_args a = {0};
    a.x = kiln_ref_of(x);
    a.dy = kiln_ref_of(dy);
    a.dx = kiln_ref_of(dx);
    a.n = kiln_numel(x);
    a.kind = (int)rec->i[0];
    a.dtype = x->dtype;
    return KILN_CALL(x->ctx, act_bwd, &a);
}

kiln_tensor *kiln_activation(kiln_tensor *x, kiln_act kind) {
    if (!x) return NULL;
    if ((int)kind < KILN_ACT_GELU || (int)kind > KILN_ACT_RELU2)
        return kiln_fail(KILN_ERR_ARGUMENT, "activation: unknown kind %d (use a kiln_act: KILN_ACT_GELU, "
                                            "KILN_ACT_RELU, KILN_ACT_SILU or KILN_ACT_RELU2)", (int)kind);
    const char *name = g_act_names[kind];
    if (kiln_check_float(name, x, "x")) return NULL;
    kiln_ctx *ctx = x->ctx;
    kiln_tensor *y = kiln_op_output(ctx, x->dtype, x->ndim, x->shape);
    if (!y) return NULL;
    kiln_act_args a = {0};
    a.x = kiln_ref_of(x);
    a.y = kiln_ref_of(y);
    a.n = kiln_numel(x);
    a.kind = (int)kind;
    a.dtype = x->dtype;
    if (KILN_CALL(ctx, act_fwd, &a)) return NULL;
    if (kiln_needs_tape(ctx, 1, &x)) {
        kiln_tape_rec *rec = kiln_tape_push(ctx, activation_backward, y, 1, &x);
        if (!rec) return NULL;
        rec->i[0] = kind;
    }
    return y;
}

kiln_tensor *kiln_gelu(kiln_tensor *x) { return kiln_activation(x, KILN_ACT_GELU); }
kiln_tensor *kiln_relu(kiln_tensor *x) { return kiln_activation(x, KILN_ACT_RELU); }
kiln_tensor *kiln_silu(kiln_tensor *x) { return kiln_activation(x, KILN_ACT_SILU); }
kiln_tensor *kiln_relu2(kiln_tensor *x) { return kiln_activation(x, KILN_ACT_RELU2); }
