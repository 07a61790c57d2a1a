/* What every model's training monitoring shares (model/metrics.h's "attn_entropy"): an
 * evaluation-mode pass (no gradient, no dropout) that leaves the caller's modes as they
 * were, and the reading of the attention-entropy probe. A forward pass with
 * block_pass.entropy set leaves entropy[l] = layer l's per-head entropy [H] on the device
 * (NULL for a layer without softmax attention); model_entropy_read turns them into the
 * per-layer means and the lowest head's. */
#ifndef KILN_HOST_MODEL_MODEL_MONITOR_H
#define KILN_HOST_MODEL_MODEL_MONITOR_H

#include "kiln/kiln.h"

typedef struct model_eval_mode {
    int grad, training;
} model_eval_mode;

/* Turns gradients and training mode off and returns what they were. */
model_eval_mode model_eval_mode_enter(kiln_ctx *ctx);
void model_eval_mode_leave(kiln_ctx *ctx, model_eval_mode e);

/* per_layer[l] = the mean over heads of entropy[l] (NaN where entropy[l] is NULL), *lowest
 * = the lowest head's over every layer (NaN when no layer has one). One download per
 * layer; the tensors are the step's (the caller resets the step after). */
kiln_status model_entropy_read(kiln_tensor *const *entropy, int L, double *per_layer, double *lowest);

#endif
