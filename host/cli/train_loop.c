/* The training loop shared by every model's `kiln train` (train_loop.h). */
#define _POSIX_C_SOURCE 200809L
#include "cli/train_loop.h"

#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/train_parallel.h"
#include "kiln/file.h"
#include "run/cli.h"
#include "run/progress.h"

/* Ctrl-C (SIGINT) and SIGTERM, which batch schedulers, `timeout` and container runtimes
 * send, end the run after the current step, with a checkpoint to resume from. */
static volatile sig_atomic_t g_interrupted; /* the signal's number */

/* Under mpirun, SIGTERM also comes from mpirun ending the job because a rank died: this
 * rank is then stuck in a reduction that will never finish, and would die without a word.
 * If a rank on this machine is gone, the handler says so instead, in the one line of
 * g_rank_gone[dead] (formatted beforehand: a handler may only write), and leaves. */
static char **g_rank_gone;

static void on_interrupt(int sig) {
    int dead = g_rank_gone ? world_dead_local_rank() : -1;
    if (dead < 0) {
        g_interrupted = sig;
        return;
    }
    /* one rank reports: rank 0, or rank 1 when rank 0 is the one gone */
    if (world_rank() == (dead == 0 ? 1 : 0) && g_rank_gone[dead]) {
        ssize_t written = write(STDERR_FILENO, g_rank_gone[dead], strlen(g_rank_gone[dead]));
        (void)written;
    }
    _exit(1);
}

/* The lines on_interrupt may print, one per rank. */
static void prepare_rank_gone(const train_options *o) {
    int ranks = world_ranks();
    if (ranks < 2 || !(g_rank_gone = calloc((size_t)ranks, sizeof *g_rank_gone))) return;
    for (int r = 0; r < ranks; r++) {
        char line[1024];
        snprintf(line, sizeof line,
                 "kiln: error: rank %d ended without a word (killed, or crashed), so mpirun ends the job; the last "
                 "checkpoint in %s is intact and --resume continues it\n",
                 r, o->out);
        g_rank_gone[r] = strdup(line);
    }
}

static void forget_rank_gone(void) {
    for (int r = 0; g_rank_gone && r < world_ranks(); r++) free(g_rank_gone[r]);
    free(g_rank_gone);
    g_rank_gone = NULL;
}

int train_open_run(trainer *t, const train_options *o, const run_paths *paths, FILE **metrics) {
    char err[1024];
    *metrics = NULL;
    if (o->resume && train_resume_state(t, paths)) return 1;
    if (!train_parallel_leads()) return 0;
    if (train_make_dir(o->out)) return 1;
    train_remove_stale_temporaries(o->out);
    /* a directory that takes no file would fail the first checkpoint, after steps that
     * would then be lost: find out before any, by the checkpoint writer's first step */
    kiln_file *probe = kiln_file_begin(paths->model, err, sizeof err);
    if (!probe) return host_error("%s", err);
    kiln_file_abort(probe);
    if (!o->resume && train_file_exists(paths->model))
        fprintf(stderr, "kiln train: %s will be replaced (--resume continues it instead)\n", paths->model);
    *metrics = metrics_open(o->out, o->resume ? t->step : -1, err, sizeof err);
    return *metrics ? 0 : host_error("%s", err);
}

static int is_evaluation_step(const train_options *o, int64_t step, int last) {
    return last || (o->eval_every > 0 && step % o->eval_every == 0);
}

/* After a step: whether any rank was interrupted (a signal reaches the ranks at different
 * steps; they must stop after the same one), and the tokens the step trained on over all
 * ranks (*tokens: this rank's on entry). One process: its own flag and tokens. The same
 * sum checks that every rank made the same fp16 overflow decision (`skipped`): they see the
 * same summed gradients, so a disagreement means the ranks have come apart. */
static int agree_after_step(double *tokens, int skipped, int64_t step, char *err, size_t errlen, int *rc) {
    double v[3] = {g_interrupted, *tokens, skipped};
    if (world_ranks() > 1) {
        if (world_sum(v, 3, err, errlen))
            *rc = host_error("%s", err);
        else if (v[2] != 0 && v[2] != world_ranks())
            *rc = host_error("the ranks disagree on whether step %" PRId64 " overflowed in fp16 (%g of %d skipped it): "
                             "their gradients differ", step, v[2], world_ranks());
    }
    if (v[0] > 0 && !g_interrupted) g_interrupted = SIGTERM;
    *tokens = v[1];
    return g_interrupted != 0;
}

static int loop(trainer *t, const train_options *o, FILE *metrics, const train_loop_model *lm, double *final_val,
                double *trained) {
    const train_hparams *hp = &t->hp;
    char err[1024];
    int lead = train_parallel_leads();
    progress bar;
    progress_init(&bar, stderr, t->step, hp->steps, o->log_every);
    double tokens_per_step = (double)hp->batch * hp->block * hp->grad_accum;
    int rc = 0;
    while (t->step < hp->steps && rc == 0) {
        double t0 = progress_now();
        int64_t next = t->step + 1;
        if (lm->before_step) lm->before_step(lm->self, next, is_evaluation_step(o, next, next == hp->steps));
        train_step_stats st = {0};
        if (trainer_step(t, &st, err, sizeof err)) {
            /* a diverging run: what usually brings it back */
            rc = host_error("%s%s", err, isfinite(st.loss) ? "" : " (try a lower --lr, or --clip)");
            break;
        }
        double tokens = lm->step_tokens ? lm->step_tokens(lm->self) : tokens_per_step;
        int interrupted = agree_after_step(&tokens, st.skipped, t->step, err, sizeof err, &rc);
        if (rc) break;
        *trained += tokens;
        double tokens_per_s = tokens / (progress_now() - t0);
        int half = hp->precision == KILN_F16;
        metrics_row row = {.step = t->step, .loss = st.loss, .val_loss = NAN, .lr = st.lr,
                           .grad_norm = st.grad_norm, .tokens_per_s = tokens_per_s,
                           .loss_scale = half ? st.loss_scale : NAN, .skipped_steps = half ? st.skipped_steps : -1,
                           .attn_entropy_min = NAN, .host_rss_bytes = -1, .device_bytes = -1};
        int checkpoint_step = is_evaluation_step(o, t->step, t->step == hp->steps || interrupted);
        if (checkpoint_step) {
            if ((rc = lm->evaluate(lm->self, t->step == hp->steps, &row))) break;
            if (lead && (rc = lm->save(lm->self))) break;
            row.host_rss_bytes = metrics_process_rss();
            row.device_bytes = (int64_t)(kiln_memory_persistent(t->model.ctx) + kiln_memory_arena(t->model.ctx));
            bar.low_entropy = row.attn_entropy_min < o->st.entropy_alert ? row.attn_entropy_min : NAN;
        }
        bar.loss_scale = half ? st.loss_scale : 0;
        if (lead) progress_step(&bar, t->step, st.loss, st.lr, tokens_per_s, row.val_loss);
        /* the log is fsync'd right after each checkpoint, with the checkpoint's row */
        if (metrics && (metrics_write(metrics, &row) || (checkpoint_step && metrics_sync(metrics)))) {
            rc = host_error("cannot write %s/metrics.jsonl", o->out);
            break;
        }
        if (interrupted) {
            /* every rank stops here, after rank 0 saved: none may end the others early */
            train_parallel_stop_together();
            rc = lead ? host_error("interrupted (%s) at step %" PRId64 "; the checkpoint in %s resumes with --resume",
                                   g_interrupted == SIGTERM ? "SIGTERM" : "SIGINT", t->step, o->out)
                      : 1;
            break;
        }
        if (t->step == hp->steps) *final_val = row.val_loss;
    }
    if (lead) progress_finish(&bar);
    return rc;
}

int train_loop(trainer *t, const train_options *o, FILE *metrics, const train_loop_model *lm, double *final_val,
               double *trained) {
    *final_val = NAN;
    *trained = 0;
    g_interrupted = 0;
    prepare_rank_gone(o);
    void (*previous_int)(int) = signal(SIGINT, on_interrupt);
    void (*previous_term)(int) = signal(SIGTERM, on_interrupt);
    int rc = loop(t, o, metrics, lm, final_val, trained);
    signal(SIGINT, previous_int);
    signal(SIGTERM, previous_term);
    forget_rank_gone();
    return rc;
}
