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

/* Called by kiln_backward_notify when watched leaf `index` has received the last gradient
 * contribution of this backward. The contribution is recorded, not necessarily computed:
 * on a GPU backend it may still be queued (a kiln_download of the gradient waits for it).
 * A non-zero return stops the backward, which returns it. */
typedef kiln_status (*kiln_grad_ready_fn)(void *user, int index);

/* kiln_backward that also calls ready(user, i) once for each of leaves[0..count), as soon
 * as no record left on the tape can add to leaves[i]'s gradient: first for the leaves this
 * backward does not reach, then in the order the reverse walk finishes them. Data-parallel
 * training starts reducing a gradient there, while the rest of the backward runs. */
kiln_status kiln_backward_notify(kiln_tensor *loss, float seed, kiln_tensor *const *leaves, int count,
                                 kiln_grad_ready_fn ready, void *user);

/* Zeroes the gradients of the given leaves (allocating them when absent). */
kiln_status kiln_zero_grad(kiln_tensor *const *params, int count);

/* Number of records on the tape (for tests and debugging). */
int kiln_tape_size(const kiln_ctx *ctx);

#ifdef __cplusplus
}
#endif
#endif
