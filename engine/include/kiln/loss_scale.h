/* Dynamic loss scaling for mixed-precision (f16) training.
 *
 * Small gradients vanish in f16 (its smallest normal is 6e-5), so the loss is multiplied by
 * a scale S before backward (kiln_backward's seed) and the gradients are divided by S
 * inside the optimizer step (kiln_adam_step_opts.grad_unscale = 1/S: fused, no extra pass).
 * S is chosen dynamically, as in NVIDIA's and PyTorch's mixed-precision training:
 *
 *   - every gradient is checked for inf/NaN on the device (kiln_check_finite into one i32
 *     flag); the optimizer step reads that flag as its skip flag, so an overflowing step
 *     leaves the weights and both Adam moments untouched;
 *   - the host reads the flag once per step (one sync), then
 *       overflow:  S <- S * backoff, the clean-step counter restarts, the step is counted
 *                  as skipped and the optimizer's step counter is not advanced;
 *       clean:     the counter advances; after `interval` clean steps in a row
 *                  S <- S * growth and the counter restarts.
 *
 * Typical use (kiln_loss_scaled_step does steps 2-4 in one call):
 *   1. kiln_backward(loss, kiln_loss_scale_value(ls));
 *   2. kiln_loss_scaler_check(ls, grads, n)        device-side, no wait
 *   3. kiln_adam_step with skip_flag = kiln_loss_scaler_flag(ls), grad_unscale = 1/S
 *   4. kiln_loss_scaler_update(ls, &skipped)         the one read; clears the flag */
#ifndef KILN_LOSS_SCALE_H
#define KILN_LOSS_SCALE_H

#include "kiln/optim.h"
#include "kiln/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_loss_scale_opts {
    double init;      /* 65536 (2^16): the first S; S stays within [2^-126, 2^126] */
    double growth;    /* 2: S grows by this after `interval` clean steps; >= 1 */
    double backoff;   /* 0.5: S shrinks by this on overflow; in (0, 1] */
    int64_t interval; /* 2000: clean steps in a row before S grows; >= 1 */
} kiln_loss_scale_opts;

/* The state a checkpoint saves (and kiln_loss_scaler_set_state restores). */
typedef struct kiln_loss_scale_state {
    double scale;          /* S */
    int64_t clean_steps;   /* clean steps since S last changed (or since the last overflow) */
    int64_t skipped_steps; /* overflowing steps skipped so far, in all */
} kiln_loss_scale_state;

typedef struct kiln_loss_scaler kiln_loss_scaler;

kiln_loss_scale_opts kiln_loss_scale_defaults(void);

/* A scaler on ctx at S = opts->init (opts NULL: the defaults). Allocates the device flag.
 * NULL with a message when an option is out of range. */
kiln_loss_scaler *kiln_loss_scaler_new(kiln_ctx *ctx, const kiln_loss_scale_opts *opts);
void kiln_loss_scaler_free(kiln_loss_scaler *ls);

/* The current S: the seed of kiln_backward. Its inverse is the optimizer's grad_unscale. */
float kiln_loss_scale_value(const kiln_loss_scaler *ls);

/* The device flag (an i32 scalar): nonzero once a checked gradient held an inf or NaN.
 * Pass it as kiln_adam_step_opts.skip_flag. */
kiln_tensor *kiln_loss_scaler_flag(kiln_loss_scaler *ls);

/* Records the inf/NaN check of `count` gradients into the flag (NULL entries are skipped:
 * a parameter backward never reached). Nothing is read back. */
kiln_status kiln_loss_scaler_check(kiln_loss_scaler *ls, kiln_tensor *const *grads, int count);

/* Reads the flag (the one wait of the step), updates S and the counters as described at the
 * top, and clears the flag for the next step. *skipped (may be NULL) receives 1 when the
 * step overflowed. Growth stops at 2^126 (so that 1/S stays a normal f32). Fails with
 * KILN_ERR_STATE when backoff would take S below 2^-126 (every step overflows: the forward
 * pass itself is producing inf/NaN). */
kiln_status kiln_loss_scaler_update(kiln_loss_scaler *ls, int *skipped);

/* One loss-scaled optimizer step: checks every gradient `opt` reads, runs kiln_adam_step
 * with the flag as skip flag and grad_unscale = 1/S (step->skip_flag and
 * step->grad_unscale are ignored), reads the flag once, undoes the optimizer's step count
 * when the step was skipped (kiln_adam_uncount_step) and updates S. */
kiln_status kiln_loss_scaled_step(kiln_loss_scaler *ls, kiln_adam *opt,
                                  const kiln_adam_step_opts *step, int *skipped);

/* Checkpointing. set_state refuses a scale that is not an f32 in [2^-126, 2^126], or
 * negative counters. */
kiln_loss_scale_state kiln_loss_scaler_state(const kiln_loss_scaler *ls);
kiln_status kiln_loss_scaler_set_state(kiln_loss_scaler *ls, const kiln_loss_scale_state *state);

#ifdef __cplusplus
}
#endif
#endif
