/* --precision fp32|fp16 for train, eval and decode, and the loss-scale options of training.
 *
 * fp16 is mixed precision (DESIGN.md "Precision"): the forward and backward passes run on
 * f16 weights, activations and gradients, with f32 statistics, softmax and loss; training
 * keeps f32 master weights and Adam moments and scales the loss dynamically
 * (kiln/loss_scale.h). Checkpoints always hold the f32 weights. */
#ifndef KILN_HOST_PRECISION_H
#define KILN_HOST_PRECISION_H

#include "kiln/kiln.h"

#define HOST_PRECISION_HELP "fp32, or fp16 (f16 weights, activations and gradients; f32 statistics and loss)"

/* "fp32" -> KILN_F32, "fp16" -> KILN_F16. Anything else prints a one-line error and
 * returns -1. */
int host_parse_precision(const char *name, kiln_dtype *out);

/* "fp32" or "fp16". */
const char *host_precision_name(kiln_dtype dtype);

/* 0 when the context's device can run `dtype`; otherwise prints one line saying that the
 * device cannot store f16 and to use --precision fp32, and returns -1. */
int host_check_precision(const kiln_ctx *ctx, kiln_dtype dtype);

#endif
