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
#include "model/eval_loss.h"
#include "model/gpt_checkpoint.h"
#include "model/metrics.h"
#include "model/precision.h"
#include "model/trainer.h"

typedef struct train_options {
    const char *data, *out, *init, *backend, *precision;
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

/* Semantic checks that the option table's ranges cannot express. */
static int validate_train_options(train_options *o, const cli_opt *opts, int n) {
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
    if (hp->min_lr > hp->lr)
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
    if (c->vocab_size != GPT_BYTE_VOCAB)
        return host_error("%s has vocab_size %d; kiln train reads byte tokens and needs %d", path,
                          c->vocab_size, GPT_BYTE_VOCAB);
    if (o->hp.block > c->n_positions)
        return host_error("--block %d exceeds n_positions = %d in %s", o->hp.block, c->n_positions, path);
    return 0;
}

/* The model to train: fresh from --seed, from --init, or the run in --out for --resume. */
static gpt_model *build_model(kiln_ctx *ctx, train_options *o, const cli_opt *opts, int n,
                              const run_paths *paths) {
    char err[1024];
    const char *from = o->resume ? paths->model : o->init;
    int block_given = cli_find(opts, n, "--block")->seen;
    if (!from) {
        gpt_config cfg = {.n_layer = o->layers, .n_head = o->heads, .n_embd = o->dim,
                          .n_positions = o->hp.block, .vocab_size = GPT_BYTE_VOCAB,
                          .ln_eps = GPT_DEFAULT_LN_EPS};
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

/* The training loop from t->step to the last step. Returns 0 and the final val loss. */
static int run(trainer *t, const train_options *o, const run_paths *paths, FILE *metrics,
               double *final_val) {
    const train_hparams *hp = &t->hp;
    char err[1024];
    progress bar;
    progress_init(&bar, stderr, t->step, hp->steps, o->log_every);
    double tokens_per_step = (double)hp->batch * hp->block * hp->grad_accum;
    *final_val = NAN;
    while (t->step < hp->steps) {
        double t0 = progress_now();
        train_step_stats st;
        if (trainer_step(t, &st, err, sizeof err)) {
            progress_finish(&bar);
            return host_error("%s", err);
        }
        double tokens_per_s = tokens_per_step / (progress_now() - t0);
        int last = t->step == hp->steps || g_interrupted;
        int evaluate = last || (o->eval_every > 0 && t->step % o->eval_every == 0);
        double val = NAN;
        if (evaluate) {
            int64_t windows = t->step == hp->steps ? 0 : o->eval_windows;
            if (eval_loss(t->m, t->ds, DATA_VAL, hp->block, hp->batch, windows, &val, err, sizeof err)) {
                progress_finish(&bar);
                return host_error("%s", err);
            }
            if (save_checkpoint(t, paths)) {
                progress_finish(&bar);
                return 1;
            }
        }
        int half = hp->precision == KILN_F16;
        bar.loss_scale = half ? st.loss_scale : 0;
        progress_step(&bar, t->step, st.loss, st.lr, tokens_per_s, val);
        metrics_row row = {.step = t->step, .loss = st.loss, .val_loss = val, .lr = st.lr,
                           .grad_norm = st.grad_norm, .tokens_per_s = tokens_per_s,
                           .loss_scale = half ? st.loss_scale : NAN,
                           .skipped_steps = half ? st.skipped_steps : -1};
        if (metrics_write(metrics, &row)) {
            progress_finish(&bar);
            return host_error("cannot write %s/metrics.jsonl", o->out);
        }
        if (g_interrupted) {
            progress_finish(&bar);
            return host_error("interrupted at step %" PRId64 "; the checkpoint in %s resumes "
                              "with --resume", t->step, o->out);
        }
        if (t->step == hp->steps) *final_val = val;
    }
    progress_finish(&bar);
    return 0;
}

int cmd_train(int argc, char **argv) {
    kiln_loss_scale_opts ls = kiln_loss_scale_defaults();
    train_options o = {.backend = "auto", .precision = "fp32", .device = -1,
                       .ls_init = (float)ls.init, .ls_growth = (float)ls.growth,
                       .ls_backoff = (float)ls.backoff, .ls_interval = (int)ls.interval,
                       .layers = 4, .heads = 4, .dim = 128,
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
         .help = "steps of linear warmup", .min = 0, .max = 1 << 30},
        {.name = "--beta1", .kind = CLI_FLOAT, .target = &hp->beta1, .meta = "X",
         .help = "AdamW beta1", .min = 0, .max = 0.999999},
        {.name = "--beta2", .kind = CLI_FLOAT, .target = &hp->beta2, .meta = "X",
         .help = "AdamW beta2", .min = 0, .max = 0.999999},
        {.name = "--weight-decay", .kind = CLI_FLOAT, .target = &hp->weight_decay, .meta = "X",
         .help = "AdamW weight decay of 2-D weights", .min = 0, .max = 10},
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
    if (!(m = build_model(ctx, &o, opts, n, &paths))) goto done;
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
