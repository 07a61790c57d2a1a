/* The optimizer state file: Adam's moments and the counters a resumed run needs to draw
 * exactly the batches and dropout masks the uninterrupted run would have drawn. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/safetensors.h"
#include "formats/text_number.h"
#include "model/precision.h"
#include "model/trainer.h"

/* What must agree between the saved run and the resuming one, besides the model. */
typedef struct state_keys {
    uint64_t step, adam_steps, rng_stream, seed;
    uint64_t batch, block, grad_accum, data_tokens;
} state_keys;

static const char *const key_names[] = {"step",  "adam_steps", "rng_stream", "seed",
                                        "batch", "block",      "grad_accum", "data_tokens"};
#define N_KEYS (int)(sizeof key_names / sizeof key_names[0])

static uint64_t *key_slot(state_keys *k, int i) {
    uint64_t *slots[N_KEYS] = {&k->step,  &k->adam_steps, &k->rng_stream, &k->seed,
                               &k->batch, &k->block,      &k->grad_accum, &k->data_tokens};
    return slots[i];
}

static state_keys current_keys(const trainer *t) {
    state_keys k;
    k.step = (uint64_t)t->step;
    k.adam_steps = (uint64_t)kiln_adam_steps(t->opt);
    k.rng_stream = kiln_rng_stream(t->model.ctx);
    k.seed = t->hp.seed;
    k.batch = (uint64_t)t->hp.batch;
    k.block = (uint64_t)t->hp.block;
    /* the micro-batches of a step over every rank: -np 2 with --grad-accum 1 draws what one
       process with --grad-accum 2 does, and each resumes the other */
    k.grad_accum = (uint64_t)t->hp.grad_accum * (uint64_t)(t->par ? t->par->ranks : 1);
    k.data_tokens = t->model.data_tokens;
    return k;
}

int trainer_save_state(const trainer *t, const char *path, const char *previous, char *err, size_t errlen) {
    const train_model *m = &t->model;
    st_writer *w = st_writer_new();
    float **host = calloc((size_t)(2 * m->n_params), sizeof *host);
    int rc = -1;
    if (!w || !host) {
        snprintf(err, errlen, "%s: out of host memory", path);
        goto done;
    }
    for (int i = 0; i < 2 * m->n_params; i++) {
        int p = i / 2, is_v = i % 2;
        const kiln_tensor *moment = is_v ? kiln_adam_v(t->opt, p) : kiln_adam_m(t->opt, p);
        int64_t n = kiln_numel(moment);
        char name[80];
        snprintf(name, sizeof name, "%s.%s", is_v ? "v" : "m", m->params[p].spec.name);
        host[i] = malloc((size_t)n * sizeof(float));
        if (!host[i] || kiln_download_f32(moment, host[i], n)) {
            snprintf(err, errlen, "%s: cannot read %s: %s", path, name,
                     host[i] ? kiln_error_message() : "out of host memory");
            goto done;
        }
        st_writer_add_ref(w, name, "F32", moment->ndim, moment->shape, host[i],
                          (size_t)n * sizeof(float));
    }
    state_keys k = current_keys(t);
    char value[32];
    for (int i = 0; i < N_KEYS; i++) {
        snprintf(value, sizeof value, "%" PRIu64, *key_slot(&k, i));
        st_writer_meta(w, key_names[i], value);
    }
    st_writer_meta(w, "precision", precision_name(t->hp.precision));
    /* the optimizer must match on resume; the schedule and smoothing are kept for the record
     * (a resumed run may change them) */
    st_writer_meta(w, "optimizer", train_optimizer_names[t->hp.optimizer]);
    st_writer_meta(w, "lr_schedule", train_schedule_names[t->hp.schedule]);
    snprintf(value, sizeof value, "%.9g", (double)t->hp.label_smoothing);
    st_writer_meta(w, "label_smoothing", value);
    if (t->scaler) {
        kiln_loss_scale_state ls = kiln_loss_scaler_state(t->scaler);
        /* %.9g round-trips an f32: the resumed run seeds backward with the same S */
        snprintf(value, sizeof value, "%.9g", ls.scale);
        st_writer_meta(w, "loss_scale", value);
        snprintf(value, sizeof value, "%" PRId64, ls.clean_steps);
        st_writer_meta(w, "loss_scale_clean_steps", value);
        snprintf(value, sizeof value, "%" PRId64, ls.skipped_steps);
        st_writer_meta(w, "skipped_steps", value);
    }
    rc = st_writer_save_keeping(w, path, previous, err, errlen);
done:
    if (host)
        for (int i = 0; i < 2 * m->n_params; i++) free(host[i]);
    free(host);
    st_writer_free(w);
    return rc;
}

static int read_keys(const st_file *f, const char *path, state_keys *k, char *err,
                     size_t errlen) {
    for (int i = 0; i < N_KEYS; i++) {
        const char *s = st_meta(f, key_names[i]);
        if (!s || text_to_uint64(s, key_slot(k, i))) {
            snprintf(err, errlen, "%s: metadata %s is %s", path, key_names[i],
                     s ? "not a whole number" : "missing");
            return -1;
        }
    }
    return 0;
}

static int differs(const char *option, uint64_t here, uint64_t saved, const char *path,
                   char *err, size_t errlen) {
    if (here == saved) return 0;
    snprintf(err, errlen, "cannot resume: %s is %" PRIu64 " here but %" PRIu64 " in %s", option,
             here, saved, path);
    return 1;
}

/* The saved run and this one must draw the same batches: same seed, geometry and data. The
 * micro-batches per step (--grad-accum times the ranks) may change: a run moved to more or
 * fewer devices goes on with another global batch (trainer.h: resumed_micro_batches). */
static int check_same_run(const state_keys *saved, const state_keys *now, const char *path,
                          char *err, size_t errlen) {
    if (differs("the seed", now->seed, saved->seed, path, err, errlen) ||
        differs("the batch", now->batch, saved->batch, path, err, errlen) ||
        differs("the block", now->block, saved->block, path, err, errlen) ||
        differs("the data's size in tokens", now->data_tokens, saved->data_tokens, path,
                err, errlen))
        return -1;
    return 0;
}

/* The optimizer of the saved run must be this run's (files written before --optimizer
 * existed are adamw): the moments mean the same to each, but a switch would not be the
 * run the user resumes. */
static int check_optimizer(const trainer *t, const st_file *f, const char *path, char *err, size_t errlen) {
    const char *saved = st_meta(f, "optimizer"), *now = train_optimizer_names[t->hp.optimizer];
    if (!saved) saved = "adamw";
    if (strcmp(saved, now)) {
        snprintf(err, errlen, "cannot resume: the optimizer is %s here but %s in %s", now, saved, path);
        return -1;
    }
    return 0;
}

/* The precision of the saved run must be this run's (files written before --precision
 * existed are fp32); in fp16 the loss scaler continues from its saved state. */
static int load_precision(trainer *t, const st_file *f, const char *path, char *err, size_t errlen) {
    const char *saved = st_meta(f, "precision");
    const char *now = precision_name(t->hp.precision);
    if (!saved) saved = "fp32";
    if (strcmp(saved, now)) {
        snprintf(err, errlen, "cannot resume: the precision is %s here but %s in %s", now, saved, path);
        return -1;
    }
    if (!t->scaler) return 0;
    const char *names[3] = {"loss_scale", "loss_scale_clean_steps", "skipped_steps"};
    double scale;
    uint64_t counts[2];
    for (int i = 0; i < 3; i++) {
        const char *v = st_meta(f, names[i]);
        if (!v || (i == 0 ? text_to_double(v, &scale) : text_to_uint64(v, &counts[i - 1]))) {
            snprintf(err, errlen, "%s: metadata %s is %s", path, names[i], v ? "not a number" : "missing");
            return -1;
        }
    }
    kiln_loss_scale_state ls = {.scale = scale, .clean_steps = (int64_t)counts[0],
                                .skipped_steps = (int64_t)counts[1]};
    if (kiln_loss_scaler_set_state(t->scaler, &ls)) {
        snprintf(err, errlen, "%s: %s", path, kiln_error_message());
        return -1;
    }
    return 0;
}

int trainer_load_state(trainer *t, const char *path, char *err, size_t errlen) {
    st_file *f;
    if (st_open(path, &f, err, errlen)) return -1;
    int rc = -1;
    float *host = NULL;
    state_keys saved, now = current_keys(t);
    t->resumed_micro_batches = 0;
    if (read_keys(f, path, &saved, err, errlen) || check_same_run(&saved, &now, path, err, errlen) ||
        check_optimizer(t, f, path, err, errlen) || load_precision(t, f, path, err, errlen))
        goto done;
    const train_model *m = &t->model;
    if ((int64_t)st_count(f) != 2 * (int64_t)m->n_params) {
        snprintf(err, errlen, "%s: %zu tensors, the model's optimizer state has %d", path,
                 st_count(f), 2 * m->n_params);
        goto done;
    }
    for (int i = 0; i < 2 * m->n_params; i++) {
        int p = i / 2, is_v = i % 2;
        kiln_tensor *moment = is_v ? kiln_adam_v(t->opt, p) : kiln_adam_m(t->opt, p);
        char name[80];
        snprintf(name, sizeof name, "%s.%s", is_v ? "v" : "m", m->params[p].spec.name);
        const st_tensor *st = st_find(f, name);
        int64_t n = kiln_numel(moment);
        if (!st || st->dtype != ST_F32 || st->numel != n || st->ndim != moment->ndim) {
            snprintf(err, errlen, "%s: %s is %s", path, name,
                     st ? "not an F32 tensor of its weight's shape" : "missing");
            goto done;
        }
        float *buf = realloc(host, (size_t)n * sizeof *buf);
        if (!buf) {
            snprintf(err, errlen, "out of host memory");
            goto done;
        }
        host = buf;
        if (st_read_f32(st, host, (size_t)n) || kiln_upload_f32(moment, host, n)) {
            snprintf(err, errlen, "%s: cannot load %s: %s", path, name, kiln_error_message());
            goto done;
        }
    }
    t->step = (int64_t)saved.step;
    kiln_adam_set_steps(t->opt, (int64_t)saved.adam_steps);
    kiln_set_rng_stream(t->model.ctx, saved.rng_stream);
    t->resumed_micro_batches = (int64_t)saved.grad_accum;
    rc = 0;
done:
    free(host);
    st_close(f);
    return rc;
}
