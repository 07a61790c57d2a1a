/* `kiln train [--model KIND]`: trains a model of any kind (cli/kind_commands.h) on a file.
 *
 * The phases are the same for every kind: the options (the common ones, cli/train_options.h,
 * and the kind's own), joining the ranks under mpirun, the tokenizers and data, the device,
 * the model and its trainer, the run directory (a resumed run's optimizer state), the
 * training loop (cli/train_loop.h: progress, metrics.jsonl, evaluating and saving every
 * --eval-every steps and at the last), and the final report. The kind's table says what each
 * phase does for its model. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/cli.h"
#include "cli/commands.h"
#include "run/device.h"
#include "cli/device_check.h"
#include "cli/kind_commands.h"
#include "run/precision_option.h"
#include "run/progress.h"
#include "cli/train_checkpoint.h"
#include "cli/train_parallel.h"

/* The kind --model names (the default one without it), and in *name the name given. NULL:
 * an unknown name, printed; with --help in the line, the default kind instead, whose help
 * lists the names. */
static const kind_commands *chosen_kind(int argc, char **argv, const char **name) {
    *name = train_model_option(argc, argv);
    const kind_commands *kind = *name ? kind_commands_find(*name) : kind_commands_default();
    if (!kind && cli_help_asked(argc, argv, 2)) {
        *name = NULL;
        return kind_commands_default();
    }
    if (!kind) host_error("--model %s is not one of %s", *name ? *name : "(no value)", model_kind_names());
    return kind;
}

/* Parses the common options and the kind's own into opts (after joining the ranks: every
 * rank parses, rank 0 alone says what is wrong). Returns 0, 1 after --help, or -1 (printed). */
static int parse_options(const train_kind *k, void *run, train_options *o, cli_opt *opts, int n, int argc,
                         char **argv) {
    if (train_parallel_join()) return -1;
    int rc = cli_parse(k->command, k->summary, argc, argv, 2, opts, n);
    if (rc > 0) return 1; /* --help */
    if (train_parallel_options_done(rc < 0 || train_validate_options(o, opts, n), o, opts, n)) return -1;
    if (k->check && k->check(run, opts, n)) return -1;
    return 0;
}

/* "Far above" the rule: three times what small models train stably at. */
#define PEAK_LR_WARN_FACTOR 3.0

/* One line when the schedule peaks far above TRAIN_PEAK_LR_RULE (trainer.h): legal, and right
 * for some recipes, but small models swing or diverge there. Not for LoRA: an adapter of a
 * frozen model is another regime, commonly trained at higher rates. */
static void warn_peak_lr(const train_hparams *hp) {
    double peak = train_peak_lr(hp);
    if (peak <= PEAK_LR_WARN_FACTOR * TRAIN_PEAK_LR_RULE) return;
    fprintf(stderr, "kiln train: warning: the learning rate peaks at %.2g, over %g times the %g that small models "
            "train stably at (docs/stability.md); %s lowers it\n", peak, PEAK_LR_WARN_FACTOR, TRAIN_PEAK_LR_RULE,
            hp->schedule == TRAIN_SCHEDULE_NOAM ? "--noam-factor" : "--lr");
}

/* The device, the model and its trainer, the run directory, and the lines that describe the
 * run. Returns 0 or 1 (printed). */
static int open_run(const train_kind *k, void *run, const train_options *o, const run_paths *paths, kiln_ctx **ctx,
                    trainer *t, grad_sync **sync, FILE **metrics) {
    if (!(*ctx = host_open_checked_device("train", o->backend, o->device, o->hp.precision, o->trust_device)) ||
        k->start(run, *ctx, t))
        return 1;
    if (train_parallel_start(t, o, sync) || train_open_run(t, o, paths, metrics) || k->attention(run, *ctx)) return 1;
    if (k->opened) k->opened(run, t);
    host_say_device("train", *ctx);
    if (train_parallel_leads()) {
        k->describe(run, t);
        if (!o->lora) warn_peak_lr(&t->hp);
    }
    return 0;
}

/* The training loop to the last step, then the report: the steps' throughput for every
 * kind (seq2seq's steps hold as many tokens as their pairs have), then the kind's own. */
static int train_to_end(const train_kind *k, void *run, trainer *t, const train_options *o, FILE *metrics) {
    train_loop_model lm = k->loop;
    lm.self = run;
    double start = progress_now(), val, tokens;
    int64_t first = t->step;
    int rc = train_loop(t, o, metrics, &lm, &val, &tokens);
    if (rc == 0 && isnan(val)) rc = k->last_evaluation(run, &val); /* a finished run resumed */
    if (rc || !train_parallel_leads()) return rc;
    double secs = progress_now() - start;
    fprintf(stderr, "kiln train: %" PRId64 " steps in %.1f s (%.0f tokens/s)\n", t->step - first, secs,
            secs > 0 ? tokens / secs : 0.0);
    k->report(run, t, val);
    return 0;
}

int cmd_train(int argc, char **argv) {
    const char *name;
    const kind_commands *kind = chosen_kind(argc, argv, &name);
    if (!kind) return 1;
    const train_kind *k = kind->train;
    train_options o = train_default_options();
    /* the kind's create sees which of its names (a preset's) was chosen */
    o.model = name ? name : kind->kind->name;
    cli_opt opts[TRAIN_COMMON_OPTIONS + TRAIN_KIND_OPTIONS];
    int n = train_common_options(&o, opts), n_own = 0;
    void *run = k->create(&o, opts + n, &n_own);
    if (!run) return host_error("out of host memory");
    n += n_own;
    run_paths paths;
    kiln_ctx *ctx = NULL;
    trainer t = {0};
    grad_sync *sync = NULL;
    FILE *metrics = NULL;
    int parsed = parse_options(k, run, &o, opts, n, argc, argv), rc = parsed < 0;
    if (parsed == 0) {
        rc = run_paths_init(&paths, o.out, o.lora);
        if (rc == 0 && o.resume) train_resume_batch(&paths, opts, n);
        rc = rc || k->prepare(run, opts, n, &paths) || open_run(k, run, &o, &paths, &ctx, &t, &sync, &metrics) ||
             train_to_end(k, run, &t, &o, metrics);
    }
    rc = train_parallel_end(rc, sync, &t);
    if (metrics) fclose(metrics);
    trainer_free(&t);
    k->destroy(run);
    kiln_close(ctx);
    return rc;
}
