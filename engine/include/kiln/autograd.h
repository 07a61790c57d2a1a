/* Tape-based reverse-mode autograd. Ops record themselves while grad is enabled; backward
 * walks the tape in reverse and accumulates into every tensor's .grad. */
#ifndef KILN_AUTOGRAD_H
#define KILN_AUTOGRAD_H

#include "kiln/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Back-propagates from a scalar `loss` seeded with d loss = `seed` (1 normally; the loss
 * scale S in mixed precision). Gradients accumulate into leaves' .grad (call
 * kiln_zero_grad between steps). Returns an error if loss is not a scalar or no tape
 * leads to it. */
kiln_status kiln_backward(kiln_tensor *loss, float seed);

/* Zeroes the gradients of the given leaves (allocating them when absent). */
kiln_status kiln_zero_grad(kiln_tensor *const *params, int count);

/* Number of records on the tape (for tests and debugging). */
int kiln_tape_size(const kiln_ctx *ctx);

#ifdef __cplusplus
}
#endif
#endif
