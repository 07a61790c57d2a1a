/* The training loop every `kiln train --model ...` runs, and the opening of its run
 * directory. A model's command gives the loop what differs (train_loop_model): what to do
 * before a step, how many tokens a step trained on, its held-out evaluation and its
 * checkpoint; the loop does the rest the same way for every model: the progress line,
 * metrics.jsonl, evaluating and saving every --eval-every steps and at the last, and
 * Ctrl-C (SIGINT) or SIGTERM, which end the run after the current step with a checkpoint
 * that --resume continues. Under mpirun (cli/train_parallel.h) every rank runs the loop
 * and the evaluations; rank 0 alone shows progress and writes metrics and checkpoints, and
 * a signal to any rank stops all of them after the same step. */
#ifndef KILN_HOST_CLI_TRAIN_LOOP_H
#define KILN_HOST_CLI_TRAIN_LOOP_H

#include <stdint.h>
#include <stdio.h>

#include "cli/train_options.h"
#include "model/metrics.h"
#include "model/trainer.h"

typedef struct train_loop_model {
    void *self;
    /* Before optimizer step `step` (1-based) runs; `evaluates`: an evaluation follows it.
     * NULL: nothing to do. */
    void (*before_step)(void *self, int64_t step, int evaluates);
    /* The tokens the step just run trained on, for the throughput. NULL: batch x block x
     * grad_accum. */
    double (*step_tokens)(void *self);
    /* The held-out evaluation after step t->step: row->val_loss and the model's own
     * monitoring fields (model/metrics.h); `full`: the whole held-out set (the last step).
     * Returns 0, or 1 with the error printed. */
    int (*evaluate)(void *self, int full, metrics_row *row);
    /* Writes the checkpoint of step t->step. Returns 0, or 1 with the error printed. */
    int (*save)(void *self);
} train_loop_model;

/* After trainer_init_model: restores a resumed run's optimizer state, makes the run
 * directory (saying when a fresh run will replace a model there) and opens its
 * metrics.jsonl in *metrics; under mpirun, ranks but 0 only restore the state (*metrics
 * NULL). Returns 0, or 1 with the error printed. */
int train_open_run(trainer *t, const train_options *o, const run_paths *paths, FILE **metrics);

/* Runs steps t->step + 1 to the last (metrics NULL: a rank that writes none). Returns 0 with the last step's val loss in
 * *final_val (NaN when no step ran: a finished run resumed) and the tokens its steps trained on over all ranks in
 * *trained, or 1 with the error printed (interrupted: after saving). */
int train_loop(trainer *t, const train_options *o, FILE *metrics, const train_loop_model *lm, double *final_val,
               double *trained);

#endif
