/* The precisions a model trains and runs in, by the names that options and saved files use:
 * "fp32" (KILN_F32) and "fp16" (KILN_F16, mixed precision).
 *
 * fp16 is mixed precision (docs/design.md "Precision"): the forward and backward passes run on
 * f16 weights, activations and gradients, with f32 statistics, softmax and loss; training
 * keeps f32 master weights and Adam moments and scales the loss dynamically
 * (kiln/loss_scale.h). Checkpoints always hold the f32 weights. */
#ifndef KILN_HOST_MODEL_PRECISION_H
#define KILN_HOST_MODEL_PRECISION_H

#include "kiln/kiln.h"

/* "fp32" or "fp16". */
const char *precision_name(kiln_dtype dtype);

/* "fp32" -> KILN_F32, "fp16" -> KILN_F16: returns 0 and *out; -1 for any other name. */
int precision_from_name(const char *name, kiln_dtype *out);

#endif
