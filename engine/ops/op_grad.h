/* Gradients that a backward rule may overwrite instead of accumulating into.
 *
 * kiln_grad_acc hands out a gradient zero-filled, so that every backward rule can add its
 * contribution. But the first rule to reach a gradient adds to zeros: when that rule
 * writes the whole gradient with one kernel that has an overwrite mode (a GEMM with
 * beta = 0, axpby with beta = 0, a permute or block copy without accumulate), the zero
 * fill is a wasted pass over memory. In a GPT step that is most activation gradients
 * (everything a GEMM, a permute or a residual add produces), and the fill was the largest
 * cost of a CPU step outside the GEMM.
 *
 * op_grad_overwrite returns the gradient and sets *overwrite when the caller may write it
 * outright: t has no gradient yet and its gradient is storage of its own (an arena tensor:
 * not persistent, whose gradient persists across steps, and not a view, whose gradient is
 * part of its base's). The tensor is then allocated exactly as kiln_grad_acc would, minus
 * the fill. A caller that sets *overwrite MUST write every element before returning; later
 * rules find t->grad and accumulate as usual. */
#ifndef KILN_OPS_OP_GRAD_H
#define KILN_OPS_OP_GRAD_H

#include "core/internal.h"

static inline kiln_tensor *op_grad_overwrite(kiln_tensor *t, int *overwrite) {
    *overwrite = 0;
    if (!t || !kiln_requires_grad(t)) return NULL;
    if (t->grad || t->base || (t->flags & KILN_TF_PERSISTENT)) return kiln_grad_acc(t);
    kiln_tensor *g = kiln_tensor_temp(t->ctx, t->dtype, t->ndim, t->shape);
    if (!g) return NULL;
    t->grad = g;
    *overwrite = 1;
    return g;
}

/* The gradient of t for a rule that may overwrite it (*overwrite as op_grad_overwrite), or
 * NULL when t needs none. Fails only when t needs a gradient that cannot be allocated. */
static inline kiln_status op_grad_to_write(kiln_tensor *t, kiln_tensor **g, int *overwrite) {
    *g = op_grad_overwrite(t, overwrite);
    return kiln_requires_grad(t) && !*g ? kiln_error_status() : KILN_OK;
}

/* The gradient of t to accumulate into (zero-filled when new), or NULL when t needs none.
 * Fails only when t needs a gradient that cannot be allocated. */
static inline kiln_status op_grad_to_add(kiln_tensor *t, kiln_tensor **g) {
    *g = NULL;
    if (!t || !kiln_requires_grad(t)) return KILN_OK;
    *g = kiln_grad_acc(t);
    return *g ? KILN_OK : kiln_error_status();
}

#endif
