/* Cross-entropy from logits with label smoothing and ignore_index: one fused kernel for
 * log-softmax and the mean over non-ignored rows, and a backward kernel that reuses the
 * forward's per-row log-sum-exp. The logits (and their gradient) may be f16; the loss, the
 * row count and the saved log-sum-exp are f32 (docs/design.md "Precision": the loss stays f32). */
#include "core/internal.h"

/* rows x vocab geometry of logits [..., V]. */
static kiln_xent_args xent_args(const kiln_tensor *logits, const kiln_tensor *targets,
                                const kiln_tensor *lse, const kiln_tensor *count, float smoothing,
                                int ignore_index) {
    kiln_xent_args a = {0};
    a.logits = kiln_ref_of(logits);
    a.targets = kiln_ref_of(targets);
    a.lse = kiln_ref_of(lse);
    a.count = kiln_ref_of(count);
    a.vocab = logits->shape[logits->ndim - 1];
    a.rows = kiln_numel(logits) / a.vocab;
    a.smoothing = smoothing;
    a.ignore_index = ignore_index;
    a.dtype = logits->dtype;
    return a;
}

/* in = {logits}; saved = {targets, lse [rows], count [1]}; f[0] = smoothing,
 * i[0] = ignore_index. */
static kiln_status xent_backward(kiln_tape_rec *rec) {
    kiln_tensor *logits = rec->in[0];
    kiln_tensor *dlogits = kiln_grad_acc(logits);
    if (!dlogits) return kiln_error_status();
    kiln_xent_args a = xent_args(logits, rec->saved[0], rec->saved[1], rec->saved[2], rec->f[0],
                                 (int)rec->i[0]);
    a.dloss = kiln_ref_of(rec->out->grad);
    a.dlogits = kiln_ref_of(dlogits);
    return KILN_CALL(logits->ctx, xent_bwd, &a);
}

static kiln_status check_inputs(const kiln_tensor *logits, const kiln_tensor *targets,
                                float smoothing) {
    char sl[64], st[64];
    kiln_status s = kiln_check_float("cross_entropy", logits, "logits");
    if (s) return s;
    if (targets->dtype != KILN_I32)
        return kiln_set_error(KILN_ERR_DTYPE, "cross_entropy: targets must be i32 class ids, got %s",
                              kiln_dtype_name(targets->dtype));
    int same = logits->ndim >= 1 && targets->ndim == logits->ndim - 1;
    for (int d = 0; same && d < targets->ndim; d++) same = targets->shape[d] == logits->shape[d];
    if (!same)
        return kiln_set_error(KILN_ERR_SHAPE,
                              "cross_entropy: logits %s need targets of shape [...] = the logits' "
                              "shape without the last (vocab) axis, got %s",
                              kiln_shape_str(logits, sl, sizeof sl), kiln_shape_str(targets, st, sizeof st));
    if (targets->ctx != logits->ctx)
        return kiln_set_error(KILN_ERR_ARGUMENT, "cross_entropy: targets belong to another context");
    if (!(smoothing >= 0.0f && smoothing <= 1.0f))
        return kiln_set_error(KILN_ERR_ARGUMENT, "cross_entropy: label_smoothing must be in [0, 1], got %g",
                              smoothing);
    return KILN_OK;
}

kiln_tensor *kiln_cross_entropy(kiln_tensor *logits, kiln_tensor *targets, float label_smoothing,
                                int ignore_index) {
    if (!kiln_inputs_ok(2, logits, targets)) return NULL;
    if (check_inputs(logits, targets, label_smoothing)) return NULL;
    kiln_ctx *ctx = logits->ctx;
    int64_t rows = kiln_numel(targets);
    kiln_tensor *loss = kiln_op_output(ctx, KILN_F32, 0, NULL);
    kiln_tensor *count = kiln_tensor_temp(ctx, KILN_F32, 0, NULL);
    kiln_tensor *lse = kiln_tensor_temp(ctx, KILN_F32, 1, &rows);
    if (!loss || !count || !lse) return NULL;
    kiln_xent_args a = xent_args(logits, targets, lse, count, label_smoothing, ignore_index);
    a.loss = kiln_ref_of(loss);
    /* device backends flag a bad target here; the engine reports it on the next read */
    a.err_flag = kiln_ref_of(ctx->err_flag);
    if (KILN_CALL(ctx, xent_fwd, &a)) return NULL;
    if (kiln_needs_tape(ctx, 1, &logits)) {
        kiln_tape_rec *rec = kiln_tape_push(ctx, xent_backward, loss, 1, &logits);
        if (!rec) return NULL;
        rec->saved[0] = targets;
        rec->saved[1] = lse;
        rec->saved[2] = count;
        rec->f[0] = label_smoothing;
        rec->i[0] = ignore_index;
    }
    return loss;
}
