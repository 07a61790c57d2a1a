/* `kiln train`: trains a byte-level GPT on a text file.
 *
 * The last 10% of the file is held out; every --eval-every steps and at the last step the
 * model is evaluated on it and a checkpoint is written (DIR/model.safetensors and
 * DIR/optimizer.safetensors, each replaced atomically). --resume continues a run exactly:
 * batches are drawn for (seed, step) and the dropout RNG stream is saved, so 10 steps plus a
 * resumed 10 equal 20 uninterrupted steps bit for bit.
 *
 * --precision fp16 trains in mixed precision (model/trainer.h): f16 weight copies, activations
 * and gradients, f32 master weights and Adam moments, and dynamic loss scaling whose state
 * is saved with the optimizer state. Checkpoints hold the f32 master weights either way. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/device.h"
#include "cli/precision_option.h"
#include "cli/progress.h"
#include "formats/text_number.h"
#include "model/block.h"
#include "model/eval_loss.h"
#include "model/gpt_checkpoint.h"
#include "model/metrics.h"
#include "model/precision.h"
#include "model/trainer.h"

/* The block options as typed (model/block.h), and the monitoring's. */
typedef struct stability_options {
    const char *norm, *residual, *layer_type, *gau_attn, *admin_init;
    int sigma_reparam, residual_attention, gau_s;
    float attn_temperature;
    cli_list temperature_at; /* STEP:T, each changing the temperature from that step on */
    int n_changes;
    int64_t change_step[CLI_LIST_MAX];
    float change_temp[CLI_LIST_MAX];
    float entropy_alert;     /* the progress line shows the lowest head's entropy below it */
    block_options block;     /* parsed */
} stability_options;

typedef struct train_options {
    const char *data, *out, *init, *backend, *precision;
    const char *schedule, *optimizer;
    stability_options st;
    int device, resume;
    float ls_init, ls_growth, ls_backoff; /* --loss-scale-*: fp16 only */
    int ls_interval;
    int layers, heads, dim;
    int eval_every, eval_windows, log_every;
    train_hparams hp;
} train_options;

/* Where the run keeps its files. */
typedef struct run_paths {
    char model[4096], optimizer[4096];
} run_paths;

/* Ctrl-C ends the run after the current step, with a checkpoint to resume from. */
static volatile sig_atomic_t g_interrupted;
static void on_interrupt(int sig) {
    (void)sig;
    g_interrupted = 1;
}

/* One choice-valued option: its index among names, or a one-line error listing them. */
static int parse_choice(const char *option, const char *text, const char *const *names, int count, int *out) {
    *out = block_choice(names, count, text);
    if (*out >= 0) return 0;
    char list[128] = "";
    for (int i = 0; i < count; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", names[i]);
    return host_error("%s %s is not one of %s", option, text, list);
}

/* The block options and the temperature schedule, checked together before any work. */
static int validate_stability(stability_options *s) {
    block_options *b = &s->block;
    *b = block_options_default();
    int v;
    if (parse_choice("--norm", s->norm, block_norm_names, BLOCK_NORM_COUNT, &v)) return 1;
    b->norm = (block_norm)v;
    if (parse_choice("--residual", s->residual, block_residual_names, BLOCK_RESIDUAL_COUNT, &v)) return 1;
    b->residual = (block_residual)v;
    if (parse_choice("--layer-type", s->layer_type, block_layer_names, BLOCK_LAYER_COUNT, &v)) return 1;
    b->layer = (block_layer)v;
    if (parse_choice("--gau-attn", s->gau_attn, block_gau_attn_names, BLOCK_GAU_ATTN_COUNT, &v)) return 1;
    b->gau_attn = (block_gau_attn)v;
    static const char *const admin_inits[] = {"profile", "closed"};
    if (parse_choice("--admin-init", s->admin_init, admin_inits, 2, &v)) return 1;
    b->sigma_reparam = s->sigma_reparam;
    b->residual_attention = s->residual_attention;
    b->attn_temperature = s->attn_temperature;
    b->gau_s = s->gau_s;
    char err[256];
    if (block_options_check(b, err, sizeof err)) return host_error("%s", err);
    for (int i = 0; i < s->temperature_at.count; i++) {
        const char *item = s->temperature_at.items[i], *colon = strchr(item, ':');
        char step[32];
        uint64_t at;
        double t;
        if (!colon || colon - item >= (ptrdiff_t)sizeof step)
            return host_error("--attn-temperature-at %s must be STEP:T", item);
        snprintf(step, sizeof step, "%.*s", (int)(colon - item), item);
        if (text_to_uint64(step, &at) || at < 1 || text_to_double(colon + 1, &t) || !(t > 0) || !isfinite(t))
            return host_error("--attn-temperature-at %s must be STEP:T with STEP >= 1 and T > 0", item);
        if (i && (int64_t)at <= s->change_step[i - 1])
            return host_error("--attn-temperature-at steps must increase (%s after step %lld)", item,
                              (long long)s->change_step[i - 1]);
        s->change_step[i] = (int64_t)at;
        s->change_temp[i] = (float)t;
        s->n_changes++;
    }
    return 0;
}

/* Semantic checks that the option table's ranges cannot express. */
static int validate_train_options(train_options *o, const cli_opt *opts, int n) {
    if (validate_stability(&o->st)) return 1;
    int choice;
    if (parse_choice("--lr-schedule", o->schedule, train_schedule_names, TRAIN_SCHEDULE_COUNT, &choice)) return 1;
    o->hp.schedule = (train_schedule)choice;
    if (parse_choice("--optimizer", o->optimizer, train_optimizer_names, TRAIN_OPTIMIZER_COUNT, &choice)) return 1;
    o->hp.optimizer = (train_optimizer)choice;
    if (o->hp.schedule == TRAIN_SCHEDULE_NOAM) {
        static const char *const unused[] = {"--lr", "--min-lr"};
        for (int i = 0; i < 2; i++)
            if (cli_find(opts, n, unused[i])->seen)
                return host_error("%s does not apply to --lr-schedule noam (its rate is --noam-factor "
                                  "d_model^-1/2 min(s^-1/2, s warmup^-3/2))", unused[i]);
    } else if (cli_find(opts, n, "--noam-factor")->seen) {
        return host_error("--noam-factor applies to --lr-schedule noam only");
    }
    static const struct { const char *option, *needs; } scoped[] = {
        {.option = "--admin-init", .needs = "--residual admin"},
        {.option = "--gau-s", .needs = "--layer-type gau"},
        {.option = "--gau-attn", .needs = "--layer-type gau"},
    };
    int applies[] = {o->st.block.residual == BLOCK_RESIDUAL_ADMIN, o->st.block.layer == BLOCK_LAYER_GAU,
                     o->st.block.layer == BLOCK_LAYER_GAU};
    for (int i = 0; i < 3; i++)
        if (!applies[i] && cli_find(opts, n, scoped[i].option)->seen)
            return host_error("%s applies to %s only", scoped[i].option, scoped[i].needs);
    train_hparams *hp = &o->hp;
    if (host_parse_precision(o->precision, &hp->precision)) return 1;
    static const char *const ls_options[] = {"--loss-scale-init", "--loss-scale-growth",
                                             "--loss-scale-backoff", "--loss-scale-interval"};
    for (int i = 0; i < 4; i++)
        if (hp->precision != KILN_F16 && cli_find(opts, n, ls_options[i])->seen)
            return host_error("%s applies to --precision fp16 only", ls_options[i]);
    hp->loss_scale = (kiln_loss_scale_opts){.init = o->ls_init, .growth = o->ls_growth, .backoff = o->ls_backoff,
                                            .interval = o->ls_interval};
    if (!o->data) return host_error("kiln train needs --data FILE");
    if (!o->out) return host_error("kiln train needs --out DIR");
    if (o->init && o->resume)
        return host_error("--init and --resume exclude each other (--resume continues the run in --out)");
    if (o->dim % o->heads != 0)
        return host_error("--heads %d does not divide --dim %d", o->heads, o->dim);
    if (!(hp->lr > 0.0f)) return host_error("--lr must be above 0");
    if (hp->schedule != TRAIN_SCHEDULE_NOAM && hp->min_lr > hp->lr)
        return host_error("--min-lr %g is above --lr %g", (double)hp->min_lr, (double)hp->lr);
    return 0;
}

/* mkdir -p */
static int make_dir(const char *path) {
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1;; p++) {
        if (*p == '/' || !*p) {
            char c = *p;
            *p = 0;
            if (mkdir(buf, 0777) && errno != EEXIST)
                return host_error("cannot create directory %s: %s", buf, strerror(errno));
            *p = c;
            if (!c) break;
        }
    }
    struct stat st;
    if (stat(path, &st) || !S_ISDIR(st.st_mode)) return host_error("--out %s is not a directory", path);
    return 0;
}

static int file_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

/* The architecture options given on the command line must agree with a loaded model. */
static int check_arch(const gpt_config *c, const cli_opt *opts, int n, const train_options *o,
                      const char *path) {
    struct { const char *option; int value, model; const char *key; } arch[] = {
        {.option = "--layers", .value = o->layers, .model = c->n_layer, .key = "n_layer"},
        {.option = "--heads", .value = o->heads, .model = c->n_head, .key = "n_head"},
        {.option = "--dim", .value = o->dim, .model = c->n_embd, .key = "n_embd"},
    };
    for (size_t i = 0; i < sizeof arch / sizeof arch[0]; i++)
        if (cli_find(opts, n, arch[i].option)->seen && arch[i].value != arch[i].model)
            return host_error("%s %d differs from %s = %d in %s", arch[i].option, arch[i].value,
                              arch[i].key, arch[i].model, path);
    /* the block options shape the weights: a loaded model keeps its own */
    const block_options *mine = &o->st.block, *its = &c->block;
    struct { const char *option; int differs; const char *value; } block[] = {
        {.option = "--norm", .differs = mine->norm != its->norm, .value = block_norm_names[its->norm]},
        {.option = "--residual", .differs = mine->residual != its->residual,
         .value = block_residual_names[its->residual]},
        {.option = "--layer-type", .differs = mine->layer != its->layer, .value = block_layer_names[its->layer]},
        {.option = "--gau-attn", .differs = mine->gau_attn != its->gau_attn,
         .value = block_gau_attn_names[its->gau_attn]},
        {.option = "--gau-s", .differs = mine->gau_s != its->gau_s, .value = "another width"},
        {.option = "--sigma-reparam", .differs = mine->sigma_reparam != its->sigma_reparam,
         .value = its->sigma_reparam ? "on" : "off"},
        {.option = "--residual-attention", .differs = mine->residual_attention != its->residual_attention,
         .value = its->residual_attention ? "on" : "off"},
    };
    for (size_t i = 0; i < sizeof block / sizeof block[0]; i++)
        if (cli_find(opts, n, block[i].option)->seen && block[i].differs)
            return host_error("%s differs from the model in %s (%s)", block[i].option, path, block[i].value);
    if (c->vocab_size != GPT_BYTE_VOCAB)
        return host_error("%s has vocab_size %d; kiln train reads byte tokens and needs %d", path,
                          c->vocab_size, GPT_BYTE_VOCAB);
    if (o->hp.block > c->n_positions)
        return host_error("--block %d exceeds n_positions = %d in %s", o->hp.block, c->n_positions, path);
    return 0;
}

/* Admin's omegas for a fresh model: the closed form, or a profiling pass over the first
 * training batch (the batch step 1 trains on). */
static int admin_init(gpt_model *m, const train_options *o, const data_set *ds) {
    char err[1024];
    if (!strcmp(o->st.admin_init, "closed")) return gpt_admin_closed_form(m) ? host_engine_error("admin init") : 0;
    const train_hparams *hp = &o->hp;
    size_t cells = (size_t)hp->batch * (size_t)hp->block;
    int32_t *x = malloc(cells * sizeof *x), *y = malloc(cells * sizeof *y);
    int n_omegas = m->cfg.n_layer * block_sublayers(&m->block.o);
    float *omegas = malloc((size_t)n_omegas * sizeof *omegas);
    int rc = 0;
    if (!x || !y || !omegas)
        rc = host_error("out of host memory");
    else if (data_sample_batch(ds, DATA_TRAIN, hp->batch, hp->block, hp->seed, 0, x, y, err, sizeof err))
        rc = host_error("%s", err);
    else {
        int64_t shape[2] = {hp->batch, hp->block};
        kiln_tensor *ids = kiln_tensor_temp(m->ctx, KILN_I32, 2, shape);
        if (!ids || kiln_upload(ids, x, cells * sizeof *x) || gpt_admin_profile(m, ids, omegas))
            rc = host_engine_error("admin profiling");
        else
            fprintf(stderr, "kiln train: Admin's omegas from the profiling pass: %.4g, %.4g, ... %.4g (%d sublayers)\n",
                    (double)omegas[0], (double)omegas[n_omegas > 1 ? 1 : 0], (double)omegas[n_omegas - 1], n_omegas);
    }
    free(omegas);
    free(x);
    free(y);
    return rc;
}

/* The model to train: fresh from --seed, from --init, or the run in --out for --resume. */
static gpt_model *build_model(kiln_ctx *ctx, train_options *o, const cli_opt *opts, int n,
                              const run_paths *paths, const data_set *ds) {
    char err[1024];
    const char *from = o->resume ? paths->model : o->init;
    int block_given = cli_find(opts, n, "--block")->seen;
    if (!from) {
        gpt_config cfg = {.n_layer = o->layers, .n_head = o->heads, .n_embd = o->dim,
                          .n_positions = o->hp.block, .vocab_size = GPT_BYTE_VOCAB,
                          .ln_eps = GPT_DEFAULT_LN_EPS, .block = o->st.block};
        if (gpt_config_check(&cfg, err, sizeof err)) {
            host_error("%s", err);
            return NULL;
        }
        gpt_model *m = gpt_new(ctx, &cfg);
        if (!m || gpt_init(m, o->hp.seed)) {
            host_engine_error("cannot create the model");
            gpt_free(m);
            return NULL;
        }
        if (cfg.block.residual == BLOCK_RESIDUAL_ADMIN && admin_init(m, o, ds)) {
            gpt_free(m);
            return NULL;
        }
        return m;
    }
    if (o->resume && !file_exists(from)) {
        host_error("nothing to resume in %s: it has no model.safetensors", o->out);
        return NULL;
    }
    gpt_model *m;
    if (gpt_checkpoint_load(ctx, from, &m, err, sizeof err)) {
        host_error("%s", err);
        return NULL;
    }
    if (!block_given) o->hp.block = m->cfg.n_positions;
    if (check_arch(&m->cfg, opts, n, o, from)) {
        gpt_free(m);
        return NULL;
    }
    o->layers = m->cfg.n_layer;
    o->heads = m->cfg.n_head;
    o->dim = m->cfg.n_embd;
    /* the temperature is a knob, not a weight: the command line's wins */
    if (cli_find(opts, n, "--attn-temperature")->seen) gpt_set_attn_temperature(m, o->st.attn_temperature);
    return m;
}

/* Restores the optimizer state of a resumed run, after checking that the model file and
 * the optimizer file were written by the same checkpoint. */
static int resume_state(trainer *t, const run_paths *paths) {
    char err[1024], step[32];
    if (trainer_load_state(t, paths->optimizer, err, sizeof err)) return host_error("%s", err);
    int found = gpt_checkpoint_meta(paths->model, "step", step, sizeof step, err, sizeof err);
    if (found < 0) return host_error("%s", err);
    uint64_t model_step;
    if (!found || text_to_uint64(step, &model_step) || model_step != (uint64_t)t->step)
        return host_error("%s (step %s) and %s (step %" PRId64 ") come from different checkpoints",
                          paths->model, found ? step : "unknown", paths->optimizer, t->step);
    return 0;
}

/* Writes both checkpoint files, optimizer state first: each is atomic, and resume_state
 * refuses a pair whose steps differ. */
static int save_checkpoint(const trainer *t, const run_paths *paths) {
    char err[1024], step[32];
    snprintf(step, sizeof step, "%" PRId64, t->step);
    /* the weights are the f32 masters whatever the precision; it is recorded for people */
    gpt_meta meta[] = {{.key = "step", .value = step},
                       {.key = "written_by", .value = "kiln train"},
                       {.key = "training_precision", .value = precision_name(t->hp.precision)}};
    if (trainer_save_state(t, paths->optimizer, err, sizeof err) ||
        gpt_checkpoint_save(t->m, paths->model, meta, 3, err, sizeof err))
        return host_error("%s", err);
    return 0;
}

/* The temperature for optimizer step `step` (1-based): the last --attn-temperature-at
 * change at or before it, else the model's own. */
static void apply_temperature(gpt_model *m, const stability_options *s, int64_t step) {
    for (int i = s->n_changes - 1; i >= 0; i--) {
        if (s->change_step[i] <= step) {
            gpt_set_attn_temperature(m, s->change_temp[i]);
            return;
        }
    }
}

/* The monitoring of an evaluation: per-layer attention entropy on the first validation
 * batch. */
static int measure_entropy(gpt_model *m, const data_set *ds, const train_hparams *hp, double *per_layer,
                           double *lowest, int32_t *x, int32_t *y) {
    char err[1024];
    int64_t windows = data_windows(ds, DATA_VAL, hp->block);
    int rows = (int)(windows < hp->batch ? windows : hp->batch);
    for (int r = 0; r < rows; r++)
        if (data_window(ds, DATA_VAL, hp->block, r, x + (size_t)r * hp->block, y + (size_t)r * hp->block, err,
                        sizeof err))
            return host_error("%s", err);
    int64_t shape[2] = {rows, hp->block};
    kiln_tensor *ids = kiln_tensor_temp(m->ctx, KILN_I32, 2, shape);
    if (!ids || kiln_upload(ids, x, (size_t)rows * (size_t)hp->block * sizeof *x) ||
        gpt_attention_entropy(m, ids, per_layer, lowest))
        return host_engine_error("attention entropy");
    return 0;
}

/* The training loop from t->step to the last step. Returns 0 and the final val loss. */
static int run(trainer *t, const train_options *o, const run_paths *paths, FILE *metrics,
               double *final_val) {
    const train_hparams *hp = &t->hp;
    char err[1024];
    progress bar;
    progress_init(&bar, stderr, t->step, hp->steps, o->log_every);
    double tokens_per_step = (double)hp->batch * hp->block * hp->grad_accum;
    *final_val = NAN;
    int L = t->m->cfg.n_layer;
    double *entropy = calloc((size_t)L, sizeof *entropy), *grad_norms = calloc((size_t)L, sizeof *grad_norms);
    if (!entropy || !grad_norms) {
        free(entropy);
        free(grad_norms);
        return host_error("out of host memory");
    }
    int rc = 0;
    while (t->step < hp->steps && rc == 0) {
        double t0 = progress_now();
        train_step_stats st;
        apply_temperature(t->m, &o->st, t->step + 1);
        /* the gradients of a step that will evaluate are measured before its update */
        int64_t next = t->step + 1;
        int will_evaluate = next == hp->steps || (o->eval_every > 0 && next % o->eval_every == 0);
        t->layer_grad_norms = will_evaluate ? grad_norms : NULL;
        if (trainer_step(t, &st, err, sizeof err)) {
            rc = host_error("%s", err);
            break;
        }
        double tokens_per_s = tokens_per_step / (progress_now() - t0);
        int last = t->step == hp->steps || g_interrupted;
        int evaluate = last || (o->eval_every > 0 && t->step % o->eval_every == 0);
        double val = NAN, lowest = NAN;
        if (evaluate) {
            int64_t windows = t->step == hp->steps ? 0 : o->eval_windows;
            if (eval_loss(t->m, t->ds, DATA_VAL, hp->block, hp->batch, windows, &val, err, sizeof err)) {
                rc = host_error("%s", err);
                break;
            }
            if ((rc = measure_entropy(t->m, t->ds, hp, entropy, &lowest, t->x, t->y))) break;
            if ((rc = save_checkpoint(t, paths))) break;
            bar.low_entropy = lowest < o->st.entropy_alert ? lowest : NAN;
        }
        int half = hp->precision == KILN_F16;
        bar.loss_scale = half ? st.loss_scale : 0;
        progress_step(&bar, t->step, st.loss, st.lr, tokens_per_s, val);
        metrics_row row = {.step = t->step, .loss = st.loss, .val_loss = val, .lr = st.lr,
                           .grad_norm = st.grad_norm, .tokens_per_s = tokens_per_s,
                           .loss_scale = half ? st.loss_scale : NAN,
                           .skipped_steps = half ? st.skipped_steps : -1, .n_layers = L,
                           .attn_entropy = evaluate ? entropy : NULL, .attn_entropy_min = lowest,
                           .grad_norm_layers = evaluate && t->layer_grad_norms ? grad_norms : NULL};
        if (metrics_write(metrics, &row)) {
            rc = host_error("cannot write %s/metrics.jsonl", o->out);
            break;
        }
        if (g_interrupted) {
            rc = host_error("interrupted at step %" PRId64 "; the checkpoint in %s resumes "
                            "with --resume", t->step, o->out);
            break;
        }
        if (t->step == hp->steps) *final_val = val;
    }
    t->layer_grad_norms = NULL;
    progress_finish(&bar);
    free(entropy);
    free(grad_norms);
    return rc;
}

int cmd_train(int argc, char **argv) {
    kiln_loss_scale_opts ls = kiln_loss_scale_defaults();
    train_options o = {.backend = "auto", .precision = "fp32", .device = -1, .schedule = "cosine",
                       .optimizer = "adamw",
                       .ls_init = (float)ls.init, .ls_growth = (float)ls.growth,
                       .ls_backoff = (float)ls.backoff, .ls_interval = (int)ls.interval,
                       .layers = 4, .heads = 4, .dim = 128,
                       .st = {.norm = "pre", .residual = "plain", .layer_type = "transformer",
                              .gau_attn = "relu2", .admin_init = "profile", .gau_s = 128,
                              .attn_temperature = 1.0f, .entropy_alert = 0.5f},
                       .eval_every = 250, .eval_windows = 200, .log_every = 10,
                       .hp = train_nanogpt_hparams()};
    train_hparams *hp = &o.hp;
    cli_opt opts[] = {
        {.name = "--data", .kind = CLI_STRING, .target = &o.data, .meta = "FILE",
         .help = "text file to train on (bytes are the tokens)"},
        {.name = "--out", .kind = CLI_STRING, .target = &o.out, .meta = "DIR",
         .help = "directory for the checkpoint and metrics"},
        {.name = "--layers", .kind = CLI_INT, .target = &o.layers, .meta = "N",
         .help = "transformer blocks", .min = 1, .max = 1024},
        {.name = "--heads", .kind = CLI_INT, .target = &o.heads, .meta = "N",
         .help = "attention heads (must divide --dim)", .min = 1, .max = 1024},
        {.name = "--dim", .kind = CLI_INT, .target = &o.dim, .meta = "N",
         .help = "embedding width", .min = 1, .max = 65536},
        {.name = "--block", .kind = CLI_INT, .target = &hp->block, .meta = "N",
         .help = "context length in tokens (n_positions)", .min = 1, .max = 1 << 20},
        {.name = "--batch", .kind = CLI_INT, .target = &hp->batch, .meta = "N",
         .help = "sequences per micro-batch", .min = 1, .max = 1 << 20},
        {.name = "--steps", .kind = CLI_INT, .target = &hp->steps, .meta = "N",
         .help = "optimizer steps in all", .min = 1, .max = 1 << 30},
        {.name = "--lr", .kind = CLI_FLOAT, .target = &hp->lr, .meta = "X",
         .help = "peak learning rate", .min = 0, .max = 10},
        {.name = "--min-lr", .kind = CLI_FLOAT, .target = &hp->min_lr, .meta = "X",
         .help = "learning rate at the end of the cosine decay", .min = 0, .max = 10},
        {.name = "--warmup", .kind = CLI_INT, .target = &hp->warmup, .meta = "N",
         .help = "steps of linear warmup (noam: its warmup steps)", .min = 0, .max = 1 << 30},
        {.name = "--beta1", .kind = CLI_FLOAT, .target = &hp->beta1, .meta = "X",
         .help = "Adam's beta1", .min = 0, .max = 0.999999},
        {.name = "--beta2", .kind = CLI_FLOAT, .target = &hp->beta2, .meta = "X",
         .help = "Adam's beta2", .min = 0, .max = 0.999999},
        {.name = "--weight-decay", .kind = CLI_FLOAT, .target = &hp->weight_decay, .meta = "X",
         .help = "weight decay of 2-D weights", .min = 0, .max = 10},
        {.name = "--clip", .kind = CLI_FLOAT, .target = &hp->clip, .meta = "X",
         .help = "clip gradients to this global norm (0: off)", .min = 0, .max = 1e9},
        {.name = "--dropout", .kind = CLI_FLOAT, .target = &hp->dropout, .meta = "P",
         .help = "dropout probability", .min = 0, .max = 0.99},
        {.name = "--grad-accum", .kind = CLI_INT, .target = &hp->grad_accum, .meta = "N",
         .help = "micro-batches per optimizer step", .min = 1, .max = 1 << 20},
        {.name = "--eval-every", .kind = CLI_INT, .target = &o.eval_every, .meta = "N",
         .help = "evaluate and checkpoint every N steps (0: at the end only)", .min = 0, .max = 1 << 30},
        {.name = "--eval-windows", .kind = CLI_INT, .target = &o.eval_windows, .meta = "N",
         .help = "windows per evaluation before the last step (0: all)", .min = 0, .max = 1 << 30},
        {.name = "--log-every", .kind = CLI_INT, .target = &o.log_every, .meta = "N",
         .help = "a plain progress line every N steps (off a terminal)", .min = 1, .max = 1 << 30},
        {.name = "--seed", .kind = CLI_U64, .target = &hp->seed, .meta = "N",
         .help = "seed of the init, the batches and dropout"},
        {.name = "--init", .kind = CLI_STRING, .target = &o.init, .meta = "CKPT",
         .help = "start from these weights (GPT-2 layout safetensors)"},
        {.name = "--resume", .kind = CLI_FLAG, .target = &o.resume,
         .help = "continue the run in --out exactly where it stopped"},
        /* schedules, optimizers, the loss */
        {.name = "--lr-schedule", .kind = CLI_STRING, .target = &o.schedule, .meta = "NAME",
         .help = "cosine (to --min-lr), linear (to --min-lr), constant, inverse-sqrt (lr sqrt(warmup/step)) or "
                 "noam (--noam-factor d^-1/2 min(step^-1/2, step warmup^-3/2)); all but noam warm up linearly"},
        {.name = "--noam-factor", .kind = CLI_FLOAT, .target = &hp->noam_factor, .meta = "X",
         .help = "the noam schedule's factor", .min = 1e-6, .max = 1e6},
        {.name = "--optimizer", .kind = CLI_STRING, .target = &o.optimizer, .meta = "NAME",
         .help = "adamw (decoupled weight decay), adam (weight decay as L2) or radam (rectified Adam)"},
        {.name = "--label-smoothing", .kind = CLI_FLOAT, .target = &hp->label_smoothing, .meta = "E",
         .help = "smooth the training targets by E (the validation loss stays plain cross-entropy)",
         .min = 0, .max = 0.999},
        /* the stability toolkit (model/block.h, docs/stability.md) */
        {.name = "--norm", .kind = CLI_STRING, .target = &o.st.norm, .meta = "WHERE",
         .help = "LayerNorm placement: pre (GPT-2), post (the original Transformer) or none"},
        {.name = "--residual", .kind = CLI_STRING, .target = &o.st.residual, .meta = "KIND",
         .help = "residual scheme: plain, rezero, admin or deepnorm (admin and deepnorm need --norm post)"},
        {.name = "--admin-init", .kind = CLI_STRING, .target = &o.st.admin_init, .meta = "HOW",
         .help = "Admin's omegas: profile (a forward pass over the first batch) or closed (the closed form)"},
        {.name = "--sigma-reparam", .kind = CLI_FLAG, .target = &o.st.sigma_reparam,
         .help = "use every linear weight as (gamma / sigma(W)) W (spectral reparametrization)"},
        {.name = "--residual-attention", .kind = CLI_FLAG, .target = &o.st.residual_attention,
         .help = "RealFormer: each layer adds the previous layer's raw attention scores to its own"},
        {.name = "--attn-temperature", .kind = CLI_FLOAT, .target = &o.st.attn_temperature, .meta = "T",
         .help = "divides the attention scores (below 1 sharpens attention)", .min = 1e-3, .max = 1e3},
        {.name = "--attn-temperature-at", .kind = CLI_LIST, .target = &o.st.temperature_at, .meta = "STEP:T",
         .help = "from optimizer step STEP on, use temperature T (repeatable)"},
        {.name = "--layer-type", .kind = CLI_STRING, .target = &o.st.layer_type, .meta = "KIND",
         .help = "transformer (attention + MLP) or gau (FLASH's gated attention unit)"},
        {.name = "--gau-s", .kind = CLI_INT, .target = &o.st.gau_s, .meta = "N",
         .help = "GAU: width of the shared query/key projection", .min = 1, .max = 65536},
        {.name = "--gau-attn", .kind = CLI_STRING, .target = &o.st.gau_attn, .meta = "KIND",
         .help = "GAU's attention: relu2 (relu(s)^2 / n, as FLASH) or softmax"},
        {.name = "--entropy-alert", .kind = CLI_FLOAT, .target = &o.st.entropy_alert, .meta = "H",
         .help = "show the lowest head's attention entropy (nats) on the progress line below this", .min = 0, .max = 100},
        host_precision_option(&o.precision),
        {.name = "--loss-scale-init", .kind = CLI_FLOAT, .target = &o.ls_init, .meta = "S",
         .help = "fp16: the first loss scale", .min = 0x1p-126, .max = 0x1p126},
        {.name = "--loss-scale-growth", .kind = CLI_FLOAT, .target = &o.ls_growth, .meta = "X",
         .help = "fp16: the scale's factor after --loss-scale-interval clean steps", .min = 1, .max = 65536},
        {.name = "--loss-scale-backoff", .kind = CLI_FLOAT, .target = &o.ls_backoff, .meta = "X",
         .help = "fp16: the scale's factor after an overflow (the step is skipped)", .min = 1e-6, .max = 1},
        {.name = "--loss-scale-interval", .kind = CLI_INT, .target = &o.ls_interval, .meta = "N",
         .help = "fp16: clean steps in a row before the scale grows", .min = 1, .max = 1 << 30},
        host_backend_option(&o.backend),
        host_device_option(&o.device),
    };
    int n = (int)(sizeof opts / sizeof opts[0]);
    const char *summary =
        "Trains a GPT (GPT-2's architecture) on the bytes of a text file. The last 10% of the\n"
        "file is held out for evaluation; at the end it prints `val loss X`. DIR receives\n"
        "model.safetensors (Hugging Face GPT-2 layout), optimizer.safetensors and metrics.jsonl.";
    int rc = cli_parse("train", summary, argc, argv, 2, opts, n);
    if (rc) return rc < 0 ? 1 : 0;
    if (validate_train_options(&o, opts, n)) return 1;

    char err[1024];
    run_paths paths;
    snprintf(paths.model, sizeof paths.model, "%s/model.safetensors", o.out);
    snprintf(paths.optimizer, sizeof paths.optimizer, "%s/optimizer.safetensors", o.out);
    data_set *ds = NULL;
    kiln_ctx *ctx = NULL;
    gpt_model *m = NULL;
    trainer t = {0};
    FILE *metrics = NULL;
    rc = 1;
    if (data_load_bytes(o.data, &ds, err, sizeof err)) {
        host_error("%s", err);
        goto done;
    }
    if (!(ctx = host_open_device(o.backend, o.device))) goto done;
    if (host_check_precision(ctx, hp->precision)) goto done;
    if (!(m = build_model(ctx, &o, opts, n, &paths, ds))) goto done;
    if (data_check_block(ds, DATA_TRAIN, hp->block, err, sizeof err) ||
        data_check_block(ds, DATA_VAL, hp->block, err, sizeof err)) {
        host_error("%s: %s", o.data, err);
        goto done;
    }
    if (trainer_init(&t, m, ds, hp, err, sizeof err)) {
        host_error("%s", err);
        goto done;
    }
    if (o.resume && resume_state(&t, &paths)) goto done;
    if (o.resume && t.scaler && cli_find(opts, n, "--loss-scale-init")->seen)
        fprintf(stderr, "kiln train: --loss-scale-init is not used: the resumed run continues at its saved scale %g\n",
                (double)kiln_loss_scale_value(t.scaler));
    if (make_dir(o.out)) goto done;
    if (!o.resume && file_exists(paths.model))
        fprintf(stderr, "kiln train: %s will be replaced (--resume continues it instead)\n", paths.model);
    if (!(metrics = metrics_open(o.out, o.resume ? t.step : -1, err, sizeof err))) {
        host_error("%s", err);
        goto done;
    }
    host_say_device("train", ctx);
    fprintf(stderr, "kiln train: %d layers, %d heads, dim %d, block %d: %.2fM weights; %lld "
            "training and %lld validation tokens; steps %" PRId64 " to %d; %s\n", o.layers, o.heads,
            o.dim, hp->block, (double)gpt_param_count(m) / 1e6, (long long)ds->n_train,
            (long long)(ds->n_tokens - ds->n_train), t.step + 1, hp->steps,
            hp->precision == KILN_F16 ? "fp16 (mixed precision, dynamic loss scaling)" : "fp32");

    void (*previous)(int) = signal(SIGINT, on_interrupt);
    double start = progress_now(), val;
    int64_t first = t.step;
    rc = run(&t, &o, &paths, metrics, &val);
    signal(SIGINT, previous);
    if (rc == 0 && isnan(val)) { /* resumed a run that had already finished */
        if (eval_loss(m, ds, DATA_VAL, hp->block, hp->batch, 0, &val, err, sizeof err)) {
            rc = host_error("%s", err);
            goto done;
        }
    }
    if (rc == 0) {
        double secs = progress_now() - start;
        fprintf(stderr, "kiln train: %" PRId64 " steps in %.1f s (%.0f tokens/s)\n", t.step - first,
                secs, secs > 0 ? (double)(t.step - first) * hp->batch * hp->block * hp->grad_accum / secs : 0.0);
        if (t.scaler) {
            kiln_loss_scale_state ls = kiln_loss_scaler_state(t.scaler);
            fprintf(stderr, "kiln train: loss scale %g, %" PRId64 " overflowing steps skipped in all\n",
                    ls.scale, ls.skipped_steps);
        }
        printf("val loss %.4f\n", val);
    }
done:
    if (metrics) fclose(metrics);
    trainer_free(&t);
    gpt_free(m);
    kiln_close(ctx);
    data_free(ds);
    return rc;
}
