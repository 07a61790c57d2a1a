/* The tape: ops push records while grad is enabled; kiln_backward walks them in reverse.
 * Gradients are allocated zero-filled on first use and every backward rule accumulates. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

int kiln_inputs_ok(int count, ...) {
    va_list ap;
    va_start(ap, count);
    int ok = 1;
    for (int i = 0; i < count; i++)
        if (!va_arg(ap, const kiln_tensor *)) ok = 0;
    va_end(ap);
    return ok;
}

int kiln_needs_tape(kiln_ctx *ctx, int count, kiln_tensor *const *inputs) {
    if (!ctx->grad_enabled) return 0;
    for (int i = 0; i < count; i++)
        if (inputs[i] && kiln_requires_grad(inputs[i])) return 1;
    return 0;
}

kiln_tape_rec *kiln_tape_push(kiln_ctx *ctx, kiln_backward_fn backward, kiln_tensor *out,
                              int n_in, kiln_tensor *const *inputs) {
    if (ctx->tape_len == ctx->tape_cap) {
        int cap = ctx->tape_cap ? 2 * ctx->tape_cap : 256;
        kiln_tape_rec *grown = realloc(ctx->tape, (size_t)cap * sizeof *grown);
        if (!grown) return kiln_fail(KILN_ERR_MEMORY, "out of host memory for the tape");
        ctx->tape = grown;
        ctx->tape_cap = cap;
    }
    kiln_tensor **in = kiln_step_malloc(ctx, (size_t)(n_in > 0 ? n_in : 1) * sizeof *in);
    if (!in) return NULL;
    memcpy(in, inputs, (size_t)n_in * sizeof *in);
    kiln_tape_rec *rec = &ctx->tape[ctx->tape_len];
    memset(rec, 0, sizeof *rec);
    rec->backward = backward;
    rec->out = out;
    rec->in = in;
    rec->n_in = n_in;
    out->flags |= KILN_TF_REQUIRES_GRAD;
    out->tape_index = ctx->tape_len++;
    return rec;
}

/* A zero-filled gradient for t: persistent tensors keep theirs across steps. */
static kiln_tensor *alloc_grad(kiln_tensor *t) {
    kiln_tensor *g;
    if (t->flags & KILN_TF_PERSISTENT)
        g = kiln_tensor_new(t->ctx, t->dtype, t->ndim, t->shape);
    else
        g = kiln_tensor_temp(t->ctx, t->dtype, t->ndim, t->shape);
    if (!g) return NULL;
    if (!(t->flags & KILN_TF_PERSISTENT) && kiln_zero(g)) return NULL;
    return g;
}

kiln_tensor *kiln_grad_acc(kiln_tensor *t) {
    if (!t || !kiln_requires_grad(t)) return NULL;
    if (t->grad) return t->grad;
    if (t->base) {
        /* A view's gradient is the same view of the base's gradient. */
        kiln_tensor *bg = kiln_grad_acc(t->base);
        if (!bg) return NULL;
        kiln_tensor *g = kiln_step_malloc(t->ctx, sizeof *g);
        if (!g) return NULL;
        *g = *bg;
        g->ndim = t->ndim;
        memcpy(g->shape, t->shape, sizeof g->shape);
        g->offset = bg->offset + (t->offset - t->base->offset);
        g->base = bg;
        g->flags = 0;
        g->grad = NULL;
        t->grad = g;
        return g;
    }
    t->grad = alloc_grad(t);
    return t->grad;
}

/* The watched leaf that t is, or is a view of (-1 for none). */
static int watched_leaf(const kiln_tensor *t, kiln_tensor *const *leaves, int count) {
    for (; t; t = t->base)
        for (int i = 0; i < count; i++)
            if (leaves[i] == t) return i;
    return -1;
}

/* For each watched leaf, the first (lowest) tape record at or below `last` that takes it as
 * an input: once the reverse walk has run that record, nothing more flows into its gradient.
 * -1: no record does. Backward rules add only to their inputs' gradients (and a view's
 * gradient is a view of its base's), so the inputs are all that need looking at. */
static kiln_status first_uses(const kiln_ctx *ctx, int last, kiln_tensor *const *leaves, int count, int **out) {
    int *first = malloc((size_t)(count > 0 ? count : 1) * sizeof *first);
    if (!first) return kiln_set_error(KILN_ERR_MEMORY, "out of host memory for kiln_backward_notify");
    for (int i = 0; i < count; i++) first[i] = -1;
    for (int r = last; r >= 0; r--) {
        const kiln_tape_rec *rec = &ctx->tape[r];
        for (int k = 0; k < rec->n_in; k++) {
            int leaf = watched_leaf(rec->in[k], leaves, count);
            if (leaf >= 0) first[leaf] = r;
        }
    }
    *out = first;
    return KILN_OK;
}

static kiln_status backward(kiln_tensor *loss, float seed, kiln_tensor *const *leaves, int count,
                            kiln_grad_ready_fn ready, void *user) {
    if (!loss) return kiln_set_error(KILN_ERR_ARGUMENT, "kiln_backward: loss is NULL");
    kiln_ctx *ctx = loss->ctx;
    if (kiln_numel(loss) != 1)
        return kiln_set_error(KILN_ERR_SHAPE, "kiln_backward: the loss must be a scalar, it has %lld elements",
                              (long long)kiln_numel(loss));
    if (loss->tape_index < 0 || loss->tape_index >= ctx->tape_len ||
        ctx->tape[loss->tape_index].out != loss)
        return kiln_set_error(KILN_ERR_STATE,
                              "kiln_backward: no tape leads to this loss (grad disabled, no input "
                              "requires grad, or backward already ran this step)");
    int *first = NULL;
    if (ready && first_uses(ctx, loss->tape_index, leaves, count, &first)) return kiln_error_status();
    kiln_tensor *g = kiln_grad_acc(loss);
    kiln_status s = g ? kiln_fill(g, seed) : kiln_error_status();
    for (int k = 0; s == KILN_OK && ready && k < count; k++)
        if (first[k] < 0) s = ready(user, k);
    for (int i = loss->tape_index; s == KILN_OK && i >= 0; i--) {
        kiln_tape_rec *rec = &ctx->tape[i];
        if (rec->out->grad) s = rec->backward(rec); /* else nothing flows back through this op */
        for (int k = 0; s == KILN_OK && ready && k < count; k++)
            if (first[k] == i) s = ready(user, k);
    }
    free(first);
    ctx->tape_len = 0; /* a second backward over the same records would double-count */
    return s;
}

kiln_status kiln_backward(kiln_tensor *loss, float seed) { return backward(loss, seed, NULL, 0, NULL, NULL); }

kiln_status kiln_backward_notify(kiln_tensor *loss, float seed, kiln_tensor *const *leaves, int count,
                                 kiln_grad_ready_fn ready, void *user) {
    if (!ready || (count > 0 && !leaves))
        return kiln_set_error(KILN_ERR_ARGUMENT, "kiln_backward_notify: no callback or no leaves");
    return backward(loss, seed, leaves, count, ready, user);
}

kiln_status kiln_zero_grad(kiln_tensor *const *params, int count) {
    for (int i = 0; i < count; i++) {
        kiln_tensor *p = params[i];
        if (!p) return kiln_set_error(KILN_ERR_ARGUMENT, "kiln_zero_grad: parameter %d is NULL", i);
        if (!p->grad) {
            if (!(p->flags & KILN_TF_REQUIRES_GRAD)) kiln_set_requires_grad(p, 1);
            if (!kiln_grad_acc(p)) return kiln_error_status();
        } else {
            kiln_status s = kiln_zero(p->grad);
            if (s) return s;
        }
    }
    return KILN_OK;
}

int kiln_tape_size(const kiln_ctx *ctx) { return ctx->tape_len; }

kiln_status kiln_check_device_errors(kiln_ctx *ctx) {
    int32_t flag = 0;
    if (!ctx->err_flag) return KILN_OK; /* still opening */
    /* a raw read: kiln_download itself calls this function */
    kiln_status s = ctx->be->download(ctx->dev, kiln_ref_of(ctx->err_flag), &flag, sizeof flag);
    if (s) return s;
    if (flag != 0) {
        kiln_fill(ctx->err_flag, 0);
        return kiln_set_error(KILN_ERR_RANGE,
                              "an index (a token id or a target) was out of range on the device");
    }
    return KILN_OK;
}
