/* One training step and the learning-rate schedule (see trainer.h). */
#include "model/trainer.h"

#include "model/lora.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

train_hparams train_nanogpt_hparams(void) {
    return (train_hparams){.batch = 12, .block = 64, .grad_accum = 1, .steps = 2000, .warmup = 100,
                           .lr = 1e-3f, .min_lr = 1e-4f, .beta1 = 0.9f, .beta2 = 0.99f,
                           .weight_decay = 0.1f, .clip = 1.0f, .dropout = 0.0f, .seed = 1337,
                           .noam_factor = 0.0f};
}

const char *const train_schedule_names[TRAIN_SCHEDULE_COUNT] = {"cosine", "noam", "inverse-sqrt", "linear",
                                                                 "constant"};
const char *const train_optimizer_names[TRAIN_OPTIMIZER_COUNT] = {"adamw", "adam", "radam"};

double train_noam_factor(const train_hparams *hp) {
    if (hp->noam_factor > 0.0f) return hp->noam_factor;
    return fmin(1.0, TRAIN_PEAK_LR_RULE * sqrt((double)hp->d_model * (hp->warmup > 1 ? hp->warmup : 1)));
}

double train_peak_lr(const train_hparams *hp) {
    if (hp->schedule != TRAIN_SCHEDULE_NOAM) return hp->lr;
    return train_noam_factor(hp) / sqrt((double)hp->d_model * (hp->warmup > 1 ? hp->warmup : 1));
}

float train_lr_at(const train_hparams *hp, int64_t step) {
    double s = (double)(step + 1);
    if (hp->schedule == TRAIN_SCHEDULE_NOAM) {
        double rise = hp->warmup > 0 ? s * pow((double)hp->warmup, -1.5) : INFINITY;
        return (float)(train_noam_factor(hp) / sqrt((double)hp->d_model) * fmin(1.0 / sqrt(s), rise));
    }
    if (step < hp->warmup) return hp->lr * (float)(step + 1) / (float)(hp->warmup + 1);
    switch (hp->schedule) {
    case TRAIN_SCHEDULE_CONSTANT: return hp->lr;
    case TRAIN_SCHEDULE_INVERSE_SQRT: return (float)(hp->lr * sqrt((double)(hp->warmup > 1 ? hp->warmup : 1) / s));
    default: break;
    }
    if (step >= hp->steps || hp->steps <= hp->warmup) return hp->min_lr;
    double ratio = (double)(step - hp->warmup) / (double)(hp->steps - hp->warmup);
    if (hp->schedule == TRAIN_SCHEDULE_LINEAR) return (float)(hp->lr + ratio * (hp->min_lr - hp->lr));
    double coeff = 0.5 * (1.0 + cos(3.14159265358979323846 * ratio));
    return (float)(hp->min_lr + coeff * (hp->lr - hp->min_lr));
}

static int engine_error(char *err, size_t errlen, const char *what) {
    snprintf(err, errlen, "%s: %s", what, kiln_error_message());
    return -1;
}

int trainer_init_model(trainer *t, const train_model *model, const train_hparams *hp, char *err,
                       size_t errlen) {
    memset(t, 0, sizeof *t);
    t->model = *model;
    t->hp = *hp;
    if (!t->hp.d_model) t->hp.d_model = model->d_model;
    int n = model->n_params;
    t->params = malloc((size_t)(n > 0 ? n : 1) * sizeof *t->params);
    t->leaves = malloc((size_t)(n > 0 ? n : 1) * sizeof *t->leaves);
    if (!t->params || !t->leaves) {
        trainer_free(t);
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    int half = hp->precision == KILN_F16;
    if (half && model->set_precision(model->self, KILN_F16, 1)) {
        trainer_free(t);
        return engine_error(err, errlen, "cannot train in fp16");
    }
    for (int i = 0; i < n; i++) {
        t->params[i] = model->params[i].t;
        t->leaves[i] = model_param_compute(&model->params[i]);
    }
    kiln_adam_opts o = kiln_adam_defaults();
    o.beta1 = hp->beta1;
    o.beta2 = hp->beta2;
    o.eps = 1e-8f;
    o.weight_decay = hp->weight_decay;
    o.decoupled = hp->optimizer != TRAIN_OPTIMIZER_ADAM;
    o.rectified = hp->optimizer == TRAIN_OPTIMIZER_RADAM;
    t->opt = kiln_adam_new(model->ctx, t->params, n, &o);
    if (!t->opt) {
        trainer_free(t);
        return engine_error(err, errlen, "cannot create the optimizer");
    }
    for (int i = 0; i < n; i++) kiln_adam_set_decay(t->opt, i, model->params[i].spec.decay);
    if (half) {
        kiln_loss_scale_opts lo = hp->loss_scale.init > 0 ? hp->loss_scale : kiln_loss_scale_defaults();
        if (kiln_adam_set_half_copies(t->opt, t->leaves) || !(t->scaler = kiln_loss_scaler_new(model->ctx, &lo))) {
            trainer_free(t);
            return engine_error(err, errlen, "cannot set up fp16 training");
        }
    }
    if (kiln_zero_grad(t->leaves, n)) {
        trainer_free(t);
        return engine_error(err, errlen, "cannot allocate the gradients");
    }
    kiln_set_seed(model->ctx, hp->seed);
    t->micro_streams = -1;
    return 0;
}

/* An i32 [rows, block] step tensor holding host ids. */
static kiln_tensor *upload_ids(kiln_ctx *ctx, const int32_t *ids, int rows, int block) {
    int64_t shape[2] = {rows, block};
    kiln_tensor *t = kiln_tensor_temp(ctx, KILN_I32, 2, shape);
    if (!t || kiln_upload(t, ids, (size_t)rows * (size_t)block * sizeof *ids)) return NULL;
    return t;
}

/* The GPT's cross-entropy of token ids x against targets y ([rows, block]), with the run's
 * label smoothing. */
static kiln_tensor *gpt_batch_loss(trainer *t, const int32_t *x, const int32_t *y, int rows) {
    kiln_ctx *ctx = t->m->ctx;
    kiln_tensor *ids = upload_ids(ctx, x, rows, t->hp.block);
    kiln_tensor *targets = upload_ids(ctx, y, rows, t->hp.block);
    kiln_tensor *logits = ids && targets ? gpt_forward(t->m, ids, t->hp.dropout) : NULL;
    return logits ? kiln_cross_entropy(logits, targets, t->hp.label_smoothing, -1) : NULL;
}

static kiln_tensor *gpt_micro_loss(trainer *t, uint64_t draw, char *err, size_t errlen) {
    if (data_sample_batch(t->ds, DATA_TRAIN, t->hp.batch, t->hp.block, t->hp.seed, draw, t->x, t->y, err, errlen))
        return NULL;
    kiln_tensor *l = gpt_batch_loss(t, t->x, t->y, t->hp.batch);
    if (!l) engine_error(err, errlen, "training step");
    return l;
}

static kiln_status gpt_precision_hook(void *m, kiln_dtype dtype, int keep_masters) {
    return gpt_set_precision(m, dtype, keep_masters);
}
static kiln_status gpt_sigma_hook(void *m) { return gpt_sigma_step(m); }
static kiln_status gpt_grad_norms_hook(void *m, double unscale, double *out) {
    return gpt_layer_grad_norms(m, unscale, out);
}

/* The GPT's trainer over the table `model` describes (its own weights, or an adapter's). */
static int gpt_trainer_init(trainer *t, const train_model *model, gpt_model *m, const data_set *ds,
                            const train_hparams *hp, char *err, size_t errlen) {
    if (trainer_init_model(t, model, hp, err, errlen)) return -1;
    t->m = m;
    t->ds = ds;
    size_t cells = (size_t)hp->batch * (size_t)hp->block;
    t->x = malloc(cells * sizeof *t->x);
    t->y = malloc(cells * sizeof *t->y);
    if (!t->x || !t->y) {
        trainer_free(t);
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    return 0;
}

int trainer_init(trainer *t, gpt_model *m, const data_set *ds, const train_hparams *hp,
                 char *err, size_t errlen) {
    train_model model = {.self = m, .ctx = m->ctx, .params = m->params, .n_params = m->n_params,
                         .d_model = m->cfg.n_embd, .data_tokens = ds ? (uint64_t)ds->n_tokens : 0,
                         .set_precision = gpt_precision_hook, .sigma_step = gpt_sigma_hook,
                         .layer_grad_norms = gpt_grad_norms_hook, .micro_loss = gpt_micro_loss};
    return gpt_trainer_init(t, &model, m, ds, hp, err, errlen);
}

/* fp16 under LoRA: the base turns to f16 without masters (never updated) unless it is f16
 * already or quantized blocks (its norms and biases turn), the adapter keeps f32 masters
 * with f16 copies that backward reaches. */
static kiln_status lora_precision_hook(void *self, kiln_dtype dtype, int keep_masters) {
    lora_adapter *a = self;
    gpt_model *m = a->attached;
    kiln_status s = m->dtype == dtype ? KILN_OK : gpt_set_precision(m, dtype, 0);
    if (!s && dtype == KILN_F16) s = model_params_to_half(a->ctx, a->params, a->n_params, keep_masters);
    return s;
}

static kiln_status lora_grad_norms_hook(void *self, double unscale, double *out) {
    lora_adapter *a = self;
    return model_params_layer_grad_norms(a->ctx, a->params, a->n_params, a->n_layer, unscale, out);
}

int trainer_init_lora(trainer *t, gpt_model *m, lora_adapter *a, const data_set *ds, const train_hparams *hp,
                      char *err, size_t errlen) {
    if (a->attached != m) {
        snprintf(err, errlen, "the LoRA adapter is not attached to the model it trains");
        return -1;
    }
    lora_freeze_base(m);
    train_model model = {.self = a, .ctx = m->ctx, .params = a->params, .n_params = a->n_params,
                         .d_model = m->cfg.n_embd, .data_tokens = ds ? (uint64_t)ds->n_tokens : 0,
                         .set_precision = lora_precision_hook, .layer_grad_norms = lora_grad_norms_hook,
                         .micro_loss = gpt_micro_loss};
    return gpt_trainer_init(t, &model, m, ds, hp, err, errlen);
}

void trainer_free(trainer *t) {
    kiln_loss_scaler_free(t->scaler);
    kiln_adam_free(t->opt);
    free(t->params);
    free(t->leaves);
    free(t->x);
    free(t->y);
    memset(t, 0, sizeof *t);
}

/* Backward of a micro-batch's loss l, gradients scaled by `scale` (and the loss scale in
 * fp16), then the step's activations freed. `par`: the ranks' reduction starts on each
 * gradient as soon as the backward has finished it. */
static int backward_loss(trainer *t, kiln_tensor *l, float scale, const train_parallel *par, double *loss,
                         char *err, size_t errlen) {
    float value = 0.0f;
    int rc = 0;
    /* the loss scale enters as backward's seed: the loss itself stays unscaled */
    float seed = t->scaler ? scale * kiln_loss_scale_value(t->scaler) : scale;
    if (par && par->begin(par->self, err, errlen)) {
        rc = -1;
    } else {
        kiln_status s = !l ? kiln_error_status()
                        : par ? kiln_backward_notify(l, seed, t->leaves, t->model.n_params, par->grad_ready, par->self)
                              : kiln_backward(l, seed);
        if (s || kiln_read_scalar(l, &value)) rc = engine_error(err, errlen, "training step");
    }
    kiln_step_reset(t->model.ctx);
    *loss = value;
    return rc;
}

/* Forward and backward run in training mode with the tape on. */
static void training_mode(kiln_ctx *ctx) {
    kiln_set_grad_enabled(ctx, 1);
    kiln_set_training(ctx, 1);
}

int trainer_accumulate(trainer *t, const int32_t *x, const int32_t *y, int rows, float scale,
                       double *loss, char *err, size_t errlen) {
    training_mode(t->model.ctx);
    return backward_loss(t, gpt_batch_loss(t, x, y, rows), scale, NULL, loss, err, errlen);
}

int trainer_update_scaled(trainer *t, float lr, double *grad_norm, int *skipped, char *err,
                          size_t errlen) {
    kiln_adam_step_opts s = {.lr = lr, .clip_norm = t->hp.clip};
    float norm = NAN;
    int overflow = 0;
    kiln_status st = t->scaler ? kiln_loss_scaled_step(t->scaler, t->opt, &s, &overflow)
                               : kiln_adam_step(t->opt, &s);
    /* a skipped step's norm is inf or NaN: not worth a read */
    if (!st && !overflow) st = kiln_read_scalar(kiln_adam_grad_norm(t->opt), &norm);
    if (!st) st = kiln_zero_grad(t->leaves, t->model.n_params);
    int rc = st ? engine_error(err, errlen, "optimizer step") : 0;
    kiln_step_reset(t->model.ctx);
    *grad_norm = norm;
    if (skipped) *skipped = overflow;
    if (rc == 0) t->step++;
    return rc;
}

int trainer_update(trainer *t, float lr, double *grad_norm, char *err, size_t errlen) {
    return trainer_update_scaled(t, lr, grad_norm, NULL, err, errlen);
}

/* The RNG streams (dropout masks) one micro-batch's forward takes: measured once by a
 * forward of micro-batch `draw` whose tape and streams are then dropped. Data-parallel
 * ranks need it to give each of their micro-batches the streams it has in one process. */
static int measure_micro_streams(trainer *t, uint64_t draw, char *err, size_t errlen) {
    kiln_ctx *ctx = t->model.ctx;
    uint64_t first = kiln_rng_stream(ctx);
    training_mode(ctx);
    kiln_tensor *l = t->model.micro_loss(t, draw, err, errlen);
    t->micro_streams = (int64_t)(kiln_rng_stream(ctx) - first);
    kiln_set_rng_stream(ctx, first);
    kiln_step_reset(ctx);
    return l ? 0 : -1;
}

static int step(trainer *t, train_step_stats *stats, char *err, size_t errlen);

int trainer_step(trainer *t, train_step_stats *stats, char *err, size_t errlen) {
    double start = kiln_clock_wall();
    int rc = step(t, stats, err, errlen);
    t->step_seconds += kiln_clock_wall() - start;
    return rc;
}

static int step(trainer *t, train_step_stats *stats, char *err, size_t errlen) {
    const train_hparams *hp = &t->hp;
    const train_parallel *par = t->par;
    int rank = par ? par->rank : 0, ranks = par ? par->ranks : 1;
    /* the step's micro-batches over all ranks, and this rank's first */
    uint64_t micros = (uint64_t)hp->grad_accum * (uint64_t)ranks, mine = (uint64_t)rank * (uint64_t)hp->grad_accum;
    double total = 0.0;
    const train_model *m = &t->model;
    kiln_ctx *ctx = m->ctx;
    if (m->sigma_step && m->sigma_step(m->self)) return engine_error(err, errlen, "sigma-reparam power iteration");
    uint64_t first_stream = kiln_rng_stream(ctx);
    if (par && t->micro_streams < 0 && measure_micro_streams(t, (uint64_t)t->step * micros + mine, err, errlen))
        return -1;
    for (int micro = 0; micro < hp->grad_accum; micro++) {
        uint64_t index = mine + (uint64_t)micro, draw = (uint64_t)t->step * micros + index;
        double loss;
        if (par) kiln_set_rng_stream(ctx, first_stream + index * (uint64_t)t->micro_streams);
        training_mode(ctx);
        kiln_tensor *l = m->micro_loss(t, draw, err, errlen);
        if (!l) {
            kiln_step_reset(ctx);
            return -1;
        }
        const train_parallel *reduce = micro == hp->grad_accum - 1 ? par : NULL;
        if (backward_loss(t, l, 1.0f / (float)micros, reduce, &loss, err, errlen)) return -1;
        total += loss;
    }
    if (par) {
        if (par->finish(par->self, &total, err, errlen)) return -1;
        /* where the single process's stream is after all its micro-batches */
        kiln_set_rng_stream(ctx, first_stream + micros * (uint64_t)t->micro_streams);
    }
    stats->loss = total / (double)micros;
    stats->lr = train_lr_at(hp, t->step);
    if (!isfinite(stats->loss)) {
        snprintf(err, errlen, "the loss is %g at step %lld",
                 stats->loss, (long long)t->step + 1);
        return -1;
    }
    if (t->layer_grad_norms && m->layer_grad_norms) {
        double unscale = t->scaler ? kiln_loss_scale_value(t->scaler) : 1.0;
        if (m->layer_grad_norms(m->self, unscale, t->layer_grad_norms))
            return engine_error(err, errlen, "per-layer gradient norms");
    }
    if (trainer_update_scaled(t, (float)stats->lr, &stats->grad_norm, &stats->skipped, err, errlen))
        return -1;
    kiln_loss_scale_state ls = kiln_loss_scaler_state(t->scaler);
    stats->loss_scale = ls.scale;
    stats->skipped_steps = ls.skipped_steps;
    return 0;
}
