/* Training a model: the hyperparameters, the learning-rate schedule, one optimizer step
 * (forward, backward over --grad-accum micro-batches, clipped AdamW), and the optimizer
 * state that lets a run resume exactly where it stopped. The GPT plugs in through
 * trainer_init; any other model (seq2seq, BERT) describes itself as a train_model. Used by
 * `kiln train`, `kiln bench train` and the PyTorch parity dump. */
#ifndef KILN_HOST_MODEL_TRAINER_H
#define KILN_HOST_MODEL_TRAINER_H

#include <stddef.h>
#include <stdint.h>

#include "formats/data.h"
#include "kiln/loss_scale.h"
#include "model/gpt/gpt.h"

/* The learning-rate schedules (train_lr_at) and optimizers, by the names users type. */
typedef enum train_schedule {
    TRAIN_SCHEDULE_COSINE,       /* warmup, then a cosine from lr to min_lr at `steps` */
    TRAIN_SCHEDULE_NOAM,         /* factor d^-1/2 min(s^-1/2, s warmup^-3/2) (Vaswani et al.) */
    TRAIN_SCHEDULE_INVERSE_SQRT, /* warmup, then lr sqrt(warmup / s) (fairseq) */
    TRAIN_SCHEDULE_LINEAR,       /* warmup, then a line from lr to min_lr at `steps` */
    TRAIN_SCHEDULE_CONSTANT,     /* warmup, then lr */
    TRAIN_SCHEDULE_COUNT
} train_schedule;
extern const char *const train_schedule_names[TRAIN_SCHEDULE_COUNT];

typedef enum train_optimizer {
    TRAIN_OPTIMIZER_ADAMW, /* decoupled weight decay (Loshchilov and Hutter) */
    TRAIN_OPTIMIZER_ADAM,  /* weight decay as an L2 term in the gradient */
    TRAIN_OPTIMIZER_RADAM, /* rectified Adam (Liu et al. 2019), decoupled decay */
    TRAIN_OPTIMIZER_COUNT
} train_optimizer;
extern const char *const train_optimizer_names[TRAIN_OPTIMIZER_COUNT];

typedef struct train_hparams {
    int batch, block, grad_accum;
    int steps, warmup;
    float lr, min_lr;
    train_schedule schedule;
    float noam_factor; /* noam's factor (its d is d_model); 0: train_noam_factor's default */
    int d_model;       /* the model's width, for noam (set from the model) */
    train_optimizer optimizer;
    float label_smoothing; /* of the training loss; evaluation stays plain cross-entropy */
    float beta1, beta2, weight_decay, clip;
    float dropout;
    uint64_t seed;
    /* KILN_F32 (0), or KILN_F16: mixed precision (f16 working copies of the weights, f16
     * activations and gradients, f32 master weights and Adam moments) with dynamic loss
     * scaling by `loss_scale` (init 0: kiln_loss_scale_defaults) */
    kiln_dtype precision;
    kiln_loss_scale_opts loss_scale;
} train_hparams;

/* nanoGPT's CPU config (batch 12, context 64, 2000 steps, AdamW with lr 1e-3 warming up over
 * 100 steps and decaying to 1e-4, beta2 0.99, weight decay 0.1, clip 1.0, no dropout, seed
 * 1337): the defaults of `kiln train` and of the benchmarks that train, in one place. */
train_hparams train_nanogpt_hparams(void);

/* The learning rate of optimizer step `step` (0-based). Every schedule but noam starts with
 * nanoGPT's linear warmup lr * (step + 1) / (warmup + 1) for step < warmup; then cosine
 * (nanoGPT's default) goes from lr down to min_lr at step == steps, linear the same in a
 * line, constant stays at lr, inverse-sqrt is lr sqrt(max(warmup, 1) / (step + 1)); noam is
 * noam_factor d_model^-1/2 min(s^-1/2, s warmup^-3/2) with s = step + 1 (s^-1/2 alone when
 * warmup is 0). */
float train_lr_at(const train_hparams *hp, int64_t step);

/* The peak rate small models train stably at: a 2-layer dim-64 seq2seq model sorting letters
 * swung and ended at 47% exact matches under noam's 6.3e-3 (the paper's factor 1 at d 64,
 * warmup 400) and reached >= 90% at 1e-3 (docs/stability.md). */
#define TRAIN_PEAK_LR_RULE 1e-3

/* noam's factor: hp->noam_factor when set, else the paper's 1 lowered where it would peak
 * above TRAIN_PEAK_LR_RULE, min(1, TRAIN_PEAK_LR_RULE sqrt(d_model max(warmup, 1))): the
 * paper's own size (d 512, warmup 4000: peak 7e-4) keeps factor 1, d 64 with warmup 400 gets
 * 0.16. */
double train_noam_factor(const train_hparams *hp);

/* The highest rate the schedule reaches: lr, or noam's peak at the end of its warmup. */
double train_peak_lr(const train_hparams *hp);

struct trainer;

/* Data parallelism (host/parallel/grad_sync.h provides it over MPI): this process is rank
 * `rank` of `ranks`, and trains on its share of every step's micro-batches; the gradients
 * are summed over the ranks during the backward of its last micro-batch. */
typedef struct train_parallel {
    void *self;
    int rank, ranks;
    /* Before the backward of this rank's last micro-batch of a step. */
    int (*begin)(void *self, char *err, size_t errlen);
    /* During that backward: leaf i's gradient is final here (kiln_backward_notify). */
    kiln_grad_ready_fn grad_ready;
    /* After it: every leaf's gradient then holds the sum over the ranks, and *loss too. */
    int (*finish)(void *self, double *loss, char *err, size_t errlen);
} train_parallel;

/* What the trainer needs of a model: its parameter table and a few hooks. */
typedef struct train_model {
    void *self;              /* the model, passed to the hooks */
    kiln_ctx *ctx;
    model_param *params;     /* the n_params trained weights first (model/model_params.h) */
    int n_params;
    int d_model;             /* the width noam's schedule scales by */
    uint64_t data_tokens;    /* the training data's size: a resume must see the same data */
    /* to mixed precision (as gpt_set_precision with keep_masters = 1) */
    kiln_status (*set_precision)(void *self, kiln_dtype dtype, int keep_masters);
    kiln_status (*sigma_step)(void *self);                                   /* or NULL */
    kiln_status (*layer_grad_norms)(void *self, double unscale, double *out); /* or NULL */
    /* The training loss of micro-batch `draw` (a scalar recorded on the tape, with the run's
     * dropout and label smoothing), or NULL with a message in err. */
    kiln_tensor *(*micro_loss)(struct trainer *t, uint64_t draw, char *err, size_t errlen);
    void *data;              /* where micro_loss draws from */
} train_model;

typedef struct trainer {
    train_model model;
    gpt_model *m;       /* the GPT when it is one (trainer_init), else NULL */
    const data_set *ds; /* NULL when the caller feeds batches itself */
    train_hparams hp;
    kiln_adam *opt;
    kiln_tensor **params; /* the model's (master) weights, for the optimizer */
    kiln_tensor **leaves; /* where backward's gradients land: the weights in fp32, their f16
                             copies in fp16 (gpt_grad_leaf), for kiln_zero_grad */
    kiln_loss_scaler *scaler; /* fp16 only, else NULL */
    int32_t *x, *y;       /* one micro-batch of inputs and targets, [batch * block] */
    int64_t step;         /* optimizer steps done */
    /* when not NULL, the next trainer_step writes each block's gradient norm here
       (n_layer entries, unscaled), between backward and the update */
    double *layer_grad_norms;
    const train_parallel *par; /* NULL: one process */
    double step_seconds;       /* wall time inside trainer_step so far, for reports */
    int64_t resumed_micro_batches; /* after trainer_load_state: the saved run's micro-batches
                                      per step (--grad-accum x ranks), which this run may change */
    int64_t micro_streams;     /* RNG streams one micro-batch takes (-1: not measured yet) */
} trainer;

/* Sets up AdamW over every weight of m (decay on 2-D weights only, as GPT-2/nanoGPT) and
 * zeroes the gradients. With hp->precision KILN_F16 it first turns m to mixed precision
 * (gpt_set_precision, keeping the f32 masters) and creates the loss scaler. Returns 0, or
 * -1 with a message. */
int trainer_init(trainer *t, gpt_model *m, const data_set *ds, const train_hparams *hp,
                 char *err, size_t errlen);
/* LoRA (model/lora.h): the optimizer's weights and the gradients are the adapter's alone
 * (decay on A and B), attached to m, whose base is frozen here (lora_freeze_base); fp16
 * turns the base to f16 without masters (an f16 base stays as it is, quantized blocks stay
 * quantized) and gives the adapter f16 copies with f32 masters; no sigma-reparam step; the
 * per-layer gradient norms are the adapter's. */
struct lora_adapter;
int trainer_init_lora(trainer *t, gpt_model *m, struct lora_adapter *a, const data_set *ds, const train_hparams *hp,
                      char *err, size_t errlen);
/* The same for any model: decay where its specs say so. */
int trainer_init_model(trainer *t, const train_model *model, const train_hparams *hp, char *err,
                       size_t errlen);
void trainer_free(trainer *t);

/* Forward and backward of one micro-batch x, y ([rows, block] token ids), gradients
 * scaled by `scale` (1 / grad_accum) and, in fp16, by the loss scale S, and accumulated;
 * frees the step's activations. *loss receives the micro-batch's mean (unscaled) loss. */
int trainer_accumulate(trainer *t, const int32_t *x, const int32_t *y, int rows, float scale,
                       double *loss, char *err, size_t errlen);

/* The AdamW update at learning rate lr with the accumulated gradients (clipped to the
 * global norm hp.clip when > 0), then zeroes them. *grad_norm receives the norm before
 * clipping. In fp16 the gradients are unscaled inside the update and an inf/NaN among them
 * skips it (weights and moments untouched, *grad_norm NaN, *skipped 1; skipped may be
 * NULL); the step still counts in t->step, which draws the batches and sets the LR. */
int trainer_update_scaled(trainer *t, float lr, double *grad_norm, int *skipped, char *err,
                          size_t errlen);
/* trainer_update_scaled without the skipped report. */
int trainer_update(trainer *t, float lr, double *grad_norm, char *err, size_t errlen);

typedef struct train_step_stats {
    double loss, lr, grad_norm;
    /* fp16: the loss scale after this step's update, whether this step overflowed and was
     * skipped, and the skipped steps so far; fp32: 1, 0, 0 */
    double loss_scale;
    int skipped;
    int64_t skipped_steps;
} train_step_stats;

/* One optimizer step on training batches drawn for (seed, step): grad_accum micro-batches,
 * micro-batch i of step s being draw s * grad_accum + i (the GPT's:
 * data_sample_batch(..., seed, draw)). With sigma-reparam, one power-iteration step runs
 * first.
 *
 * Data-parallel (t->par with R ranks): a step is grad_accum x R micro-batches, rank r
 * running numbers r * grad_accum to (r + 1) * grad_accum - 1 of them, each with the draw
 * and the dropout RNG streams that micro-batch has in a single process with --grad-accum
 * grad_accum x R; the gradients are summed over the ranks, so every rank applies the
 * update that single process would (up to the order of the sums). A loss that is not
 * finite (a diverging run) fails the step before the update, with stats->loss holding it. */
int trainer_step(trainer *t, train_step_stats *stats, char *err, size_t errlen);

/* ---- the optimizer state file (DIR/optimizer.safetensors) ----
 * Adam's moments as m.<weight name> and v.<weight name>, and in the metadata the step, the
 * dropout RNG stream, the seed and the batch geometry a resume must share, and the
 * precision with, in fp16, the loss scaler's state (loss_scale, loss_scale_clean_steps,
 * skipped_steps). The file it replaces is kept as `previous` (kiln/file.h's keep-previous
 * mode; NULL: not kept). */
int trainer_save_state(const trainer *t, const char *path, const char *previous, char *err, size_t errlen);
/* Restores a state saved by a run with the same model, seed and batch geometry (a
 * mismatch is an error naming the setting: the seed, the batch, ...); the micro-batches per step may differ (see
 * resumed_micro_batches). */
int trainer_load_state(trainer *t, const char *path, char *err, size_t errlen);

#endif
