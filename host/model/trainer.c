/* One training step and the learning-rate schedule (see trainer.h). */
#include "model/trainer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

train_hparams train_nanogpt_hparams(void) {
    return (train_hparams){.batch = 12, .block = 64, .grad_accum = 1, .steps = 2000, .warmup = 100,
                           .lr = 1e-3f, .min_lr = 1e-4f, .beta1 = 0.9f, .beta2 = 0.99f,
                           .weight_decay = 0.1f, .clip = 1.0f, .dropout = 0.0f, .seed = 1337,
                           .noam_factor = 1.0f};
}

const char *const train_schedule_names[TRAIN_SCHEDULE_COUNT] = {"cosine", "noam", "inverse-sqrt", "linear",
                                                                 "constant"};
const char *const train_optimizer_names[TRAIN_OPTIMIZER_COUNT] = {"adamw", "adam", "radam"};

float train_lr_at(const train_hparams *hp, int64_t step) {
    double s = (double)(step + 1);
    if (hp->schedule == TRAIN_SCHEDULE_NOAM) {
        double rise = hp->warmup > 0 ? s * pow((double)hp->warmup, -1.5) : INFINITY;
        return (float)(hp->noam_factor / sqrt((double)hp->d_model) * fmin(1.0 / sqrt(s), rise));
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

int trainer_init(trainer *t, gpt_model *m, const data_set *ds, const train_hparams *hp,
                 char *err, size_t errlen) {
    memset(t, 0, sizeof *t);
    t->m = m;
    t->ds = ds;
    t->hp = *hp;
    if (!t->hp.d_model) t->hp.d_model = m->cfg.n_embd;
    size_t cells = (size_t)hp->batch * (size_t)hp->block;
    t->params = malloc((size_t)m->n_params * sizeof *t->params);
    t->leaves = malloc((size_t)m->n_params * sizeof *t->leaves);
    t->x = malloc(cells * sizeof *t->x);
    t->y = malloc(cells * sizeof *t->y);
    if (!t->params || !t->leaves || !t->x || !t->y) {
        trainer_free(t);
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    int half = hp->precision == KILN_F16;
    if (half && gpt_set_precision(m, KILN_F16, 1)) {
        trainer_free(t);
        return engine_error(err, errlen, "cannot train in fp16");
    }
    for (int i = 0; i < m->n_params; i++) {
        t->params[i] = m->params[i].t;
        t->leaves[i] = gpt_grad_leaf(m, i);
    }
    kiln_adam_opts o = kiln_adam_defaults();
    o.beta1 = hp->beta1;
    o.beta2 = hp->beta2;
    o.eps = 1e-8f;
    o.weight_decay = hp->weight_decay;
    o.decoupled = hp->optimizer != TRAIN_OPTIMIZER_ADAM;
    o.rectified = hp->optimizer == TRAIN_OPTIMIZER_RADAM;
    t->opt = kiln_adam_new(m->ctx, t->params, m->n_params, &o);
    if (!t->opt) {
        trainer_free(t);
        return engine_error(err, errlen, "cannot create the optimizer");
    }
    for (int i = 0; i < m->n_params; i++) kiln_adam_set_decay(t->opt, i, m->params[i].spec.decay);
    if (half) {
        kiln_loss_scale_opts lo = hp->loss_scale.init > 0 ? hp->loss_scale : kiln_loss_scale_defaults();
        if (kiln_adam_set_half_copies(t->opt, t->leaves) || !(t->scaler = kiln_loss_scaler_new(m->ctx, &lo))) {
            trainer_free(t);
            return engine_error(err, errlen, "cannot set up fp16 training");
        }
    }
    if (kiln_zero_grad(t->leaves, m->n_params)) {
        trainer_free(t);
        return engine_error(err, errlen, "cannot allocate the gradients");
    }
    kiln_set_seed(m->ctx, hp->seed);
    return 0;
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

/* An i32 [rows, block] step tensor holding host ids. */
static kiln_tensor *upload_ids(kiln_ctx *ctx, const int32_t *ids, int rows, int block) {
    int64_t shape[2] = {rows, block};
    kiln_tensor *t = kiln_tensor_temp(ctx, KILN_I32, 2, shape);
    if (!t || kiln_upload(t, ids, (size_t)rows * (size_t)block * sizeof *ids)) return NULL;
    return t;
}

int trainer_accumulate(trainer *t, const int32_t *x, const int32_t *y, int rows, float scale,
                       double *loss, char *err, size_t errlen) {
    kiln_ctx *ctx = t->m->ctx;
    kiln_set_grad_enabled(ctx, 1);
    kiln_set_training(ctx, 1);
    kiln_tensor *ids = upload_ids(ctx, x, rows, t->hp.block);
    kiln_tensor *targets = upload_ids(ctx, y, rows, t->hp.block);
    /* gpt_loss's cross-entropy, with the run's label smoothing */
    kiln_tensor *logits = ids && targets ? gpt_forward(t->m, ids, t->hp.dropout) : NULL;
    kiln_tensor *l = logits ? kiln_cross_entropy(logits, targets, t->hp.label_smoothing, -1) : NULL;
    float value = 0.0f;
    int rc = 0;
    /* the loss scale enters as backward's seed: the loss itself stays unscaled */
    float seed = t->scaler ? scale * kiln_loss_scale_value(t->scaler) : scale;
    if (!l || kiln_backward(l, seed) || kiln_read_scalar(l, &value))
        rc = engine_error(err, errlen, "training step");
    kiln_step_reset(ctx);
    *loss = value;
    return rc;
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
    if (!st) st = kiln_zero_grad(t->leaves, t->m->n_params);
    int rc = st ? engine_error(err, errlen, "optimizer step") : 0;
    kiln_step_reset(t->m->ctx);
    *grad_norm = norm;
    if (skipped) *skipped = overflow;
    if (rc == 0) t->step++;
    return rc;
}

int trainer_update(trainer *t, float lr, double *grad_norm, char *err, size_t errlen) {
    return trainer_update_scaled(t, lr, grad_norm, NULL, err, errlen);
}

int trainer_step(trainer *t, train_step_stats *stats, char *err, size_t errlen) {
    const train_hparams *hp = &t->hp;
    double total = 0.0;
    if (gpt_sigma_step(t->m)) return engine_error(err, errlen, "sigma-reparam power iteration");
    for (int micro = 0; micro < hp->grad_accum; micro++) {
        uint64_t draw = (uint64_t)t->step * (uint64_t)hp->grad_accum + (uint64_t)micro;
        double loss;
        if (data_sample_batch(t->ds, DATA_TRAIN, hp->batch, hp->block, hp->seed, draw, t->x,
                              t->y, err, errlen) ||
            trainer_accumulate(t, t->x, t->y, hp->batch, 1.0f / (float)hp->grad_accum, &loss,
                               err, errlen))
            return -1;
        total += loss;
    }
    stats->loss = total / hp->grad_accum;
    stats->lr = train_lr_at(hp, t->step);
    if (!isfinite(stats->loss)) {
        snprintf(err, errlen, "the loss is %g at step %lld (try a lower --lr, or --clip)",
                 stats->loss, (long long)t->step + 1);
        return -1;
    }
    if (t->layer_grad_norms) {
        double unscale = t->scaler ? kiln_loss_scale_value(t->scaler) : 1.0;
        if (gpt_layer_grad_norms(t->m, unscale, t->layer_grad_norms))
            return engine_error(err, errlen, "per-layer gradient norms");
    }
    if (trainer_update_scaled(t, (float)stats->lr, &stats->grad_norm, &stats->skipped, err, errlen))
        return -1;
    kiln_loss_scale_state ls = kiln_loss_scaler_state(t->scaler);
    stats->loss_scale = ls.scale;
    stats->skipped_steps = ls.skipped_steps;
    return 0;
}
