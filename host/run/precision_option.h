/* --precision fp32|fp16 of train, eval and decode (the precisions: model/precision.h). */
#ifndef KILN_HOST_RUN_PRECISION_OPTION_H
#define KILN_HOST_RUN_PRECISION_OPTION_H

#include "kiln/kiln.h"
#include "run/cli.h"

/* The --precision entry of an option table. */
cli_opt host_precision_option(const char **precision);

/* "fp32" -> KILN_F32, "fp16" -> KILN_F16. Anything else prints a one-line error and
 * returns -1. */
int host_parse_precision(const char *name, kiln_dtype *out);

/* 0 when the context's device can run `dtype`; otherwise prints one line saying that the
 * device cannot store f16 and to use --precision fp32, and returns -1. */
int host_check_precision(const kiln_ctx *ctx, kiln_dtype dtype);

#endif
