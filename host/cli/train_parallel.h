/* `mpirun -np N kiln train ...`: data-parallel training (docs/parallel.md). Every rank
 * opens its own device, builds the same model from the same seed or files, and trains on
 * its share of each step's micro-batches; the gradients are summed over the ranks during
 * the backward (parallel/grad_sync.h), so that every rank applies the same update and the
 * weights stay the same without being sent again. Rank 0 alone prints progress and writes
 * metrics and checkpoints; every rank takes part in evaluations, each on its share of the
 * held-out windows. An error on one rank ends the whole job at once (world_abort), after
 * that rank printed one line naming itself. One process (no mpirun) runs as before. */
#ifndef KILN_HOST_CLI_TRAIN_PARALLEL_H
#define KILN_HOST_CLI_TRAIN_PARALLEL_H

#include "cli/train_options.h"
#include "parallel/grad_sync.h"
#include "parallel/world.h"
#include "run/cli.h"

/* At the start of a train command, before its options are parsed: joins the launcher's
 * world; on ranks but 0, errors are muted until train_parallel_options_done (rank 0
 * reports bad options for all), and from then on every error line names its rank.
 * Returns 0, or 1 with the error printed (by rank 0). */
int train_parallel_join(void);

/* After the options parsed: --devices checked against the ranks, and this rank's backend
 * and device put in o->backend and o->device: --devices' entry for it, else --backend
 * with --device, else (GPU backends under mpirun) the rank's number on its machine.
 * `parsed` is the parse's result; returns it or 1 (printed by rank 0). */
int train_parallel_options_done(int parsed, train_options *o, const cli_opt *opts, int n);

/* After trainer_init: the gradient reduction of t over the ranks (*sync; NULL for one
 * rank), once every rank has checked that all start from the same weights. Returns 0, or
 * 1 with the error printed. */
int train_parallel_start(trainer *t, const train_options *o, grad_sync **sync);

/* Whether this rank reports: prints progress, writes metrics and checkpoints. */
int train_parallel_leads(void);

/* Called when every rank has agreed to stop after the same step (a signal): the failure
 * code that follows then leaves the world together instead of ending the other ranks. */
void train_parallel_stop_together(void);

/* At the end of a train command with its exit code `rc`: rank 0 reports what the
 * reductions cost and how far the ranks' weights are apart; a failure on any rank ends
 * every rank (world_abort: the others would otherwise wait in a reduction forever), success
 * leaves the world. Frees sync. Returns rc. */
int train_parallel_end(int rc, grad_sync *sync, trainer *t);

#endif
