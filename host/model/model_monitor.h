/* What every model's training monitoring shares (model/metrics.h's "attn_entropy"): an
 * evaluation-mode pass (no gradient, no dropout) that leaves the caller's modes as they
 * were, and the attention-entropy probe around a model's forward pass. A forward pass with
 * block_pass.entropy set leaves entropy[l] = layer l's per-head entropy [H] on the device
 * (NULL for a layer without softmax attention); the probe turns them into the per-layer
 * means and the lowest head's. */
#ifndef KILN_HOST_MODEL_MODEL_MONITOR_H
#define KILN_HOST_MODEL_MODEL_MONITOR_H

#include "kiln/kiln.h"

typedef struct model_eval_mode {
    int grad, training;
} model_eval_mode;

/* Turns gradients and training mode off and returns what they were. */
model_eval_mode model_eval_mode_enter(kiln_ctx *ctx);
void model_eval_mode_leave(kiln_ctx *ctx, model_eval_mode e);

/* A model's forward pass that fills entropy[0..L) through block_pass.entropy (its layers
 * in the order the metrics list them). Returns KILN_OK or the engine's status. */
typedef kiln_status (*model_probe_forward)(void *self, kiln_tensor **entropy);

/* Runs forward in evaluation mode and reads what it probed: per_layer[l] = the mean over
 * heads of layer l's entropy (NaN for a layer without softmax attention), *lowest = the
 * lowest head's over every layer (NaN when none, or on an error). Resets ctx's step after. */
kiln_status model_entropy_probe(kiln_ctx *ctx, int L, model_probe_forward forward, void *self, double *per_layer,
                                double *lowest);

#endif
