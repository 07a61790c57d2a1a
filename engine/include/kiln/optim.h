/* Optimizers: Adam and AdamW with bias correction, gradient clipping by global norm, and
 * the hooks mixed precision needs (f32 master weights with f16 working copies, a gradient
 * unscale factor, a device-side skip flag). */
#ifndef KILN_OPTIM_H
#define KILN_OPTIM_H

#include "kiln/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_adam_opts {
    float beta1;        /* 0.9 */
    float beta2;        /* 0.999 */
    float eps;          /* 1e-8 */
    float weight_decay; /* 0: Adam; > 0: applied as set by `decoupled` */
    int decoupled;      /* 1: AdamW (p -= lr*wd*p); 0: L2 added to the gradient (Adam) */
    int rectified;      /* 1: RAdam (Liu et al. 2019), as torch.optim.RAdam: while the variance
                           of the adaptive term is intractable (rho_t <= 5) a momentum step
                           p -= lr m_hat, then the adaptive step scaled by the rectification r_t;
                           decoupled decay stays lr*wd*p */
} kiln_adam_opts;

/* Per-step inputs. */
typedef struct kiln_adam_step_opts {
    float lr;
    float clip_norm;      /* > 0: scale gradients so their global norm is at most this */
    float grad_unscale;   /* gradients are multiplied by this first (1/S); 0 means 1 */
    kiln_tensor *skip_flag; /* i32 scalar or NULL: when nonzero on the device, the step
                               leaves weights and moments untouched */
} kiln_adam_step_opts;

typedef struct kiln_adam kiln_adam;

kiln_adam_opts kiln_adam_defaults(void);

/* An optimizer over `count` f32 parameters. Moments are allocated zeroed. */
kiln_adam *kiln_adam_new(kiln_ctx *ctx, kiln_tensor *const *params, int count,
                         const kiln_adam_opts *opts);
void kiln_adam_free(kiln_adam *opt);

/* Weight decay on or off for parameter i (default on). */
void kiln_adam_set_decay(kiln_adam *opt, int index, int decay);

/* Mixed precision: the forward pass uses f16 copies of the parameters. Gradients are then
 * read from copies[i]->grad, and each step writes the updated master weight back into the
 * copy. */
kiln_status kiln_adam_set_half_copies(kiln_adam *opt, kiln_tensor *const *copies);

/* One step. Always increments the step counter (a step that the skip flag turns out to
 * have skipped is undone with kiln_adam_uncount_step). Parameters whose gradient was never
 * allocated are left untouched. Nothing is read back. */
kiln_status kiln_adam_step(kiln_adam *opt, const kiln_adam_step_opts *step);

/* The number of parameters, and the gradient that the next step reads for parameter i:
 * the f16 copy's gradient in mixed precision, the parameter's otherwise; NULL when backward
 * never reached it. Loss scaling checks these for inf/NaN (kiln/loss_scale.h). */
int kiln_adam_count(const kiln_adam *opt);
kiln_tensor *kiln_adam_grad(kiln_adam *opt, int index);

/* The global norm of the (unscaled) gradients seen by the last step, before clipping, as a
 * device scalar (valid until the next step). */
kiln_tensor *kiln_adam_grad_norm(kiln_adam *opt);

/* Checkpointing: the moments of parameter i and the step counter. */
kiln_tensor *kiln_adam_m(kiln_adam *opt, int index);
kiln_tensor *kiln_adam_v(kiln_adam *opt, int index);
int64_t kiln_adam_steps(const kiln_adam *opt);
void kiln_adam_set_steps(kiln_adam *opt, int64_t steps);
/* Undo the counter increment of a step that the skip flag turned out to skip. */
void kiln_adam_uncount_step(kiln_adam *opt);

#ifdef __cplusplus
}
#endif
#endif
